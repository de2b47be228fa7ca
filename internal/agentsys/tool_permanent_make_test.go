package agentsys

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/extension"
	"agentd/internal/store"
	"agentd/internal/testkit"
	"agentd/internal/tool"
)

// creatorFile is the agent that creates permanent agents in these tests:
// it may call clock, recall, web_fetch, gh__search and
// create_permanent_agent, remember with approval, and is not offered
// forget (tools.builtin) nor the server other.
const creatorFile = `type: permanent
model: {provider: echo, name: echo}
tools:
  allow: [clock, recall, web_fetch, gh__search, create_permanent_agent]
  ask: [remember]
  builtin: [clock, recall, remember, web_fetch, run_command, create_permanent_agent]
servers: [gh]
`

// registeredTools are the tools of the node in these tests.
func registeredTools(t *testing.T) *tool.Registry {
	t.Helper()
	reg := tool.NewRegistry(nil)
	for _, s := range []tool.Spec{
		{Name: "clock"}, {Name: "recall", ReadOnly: true}, {Name: "remember"}, {Name: "forget"},
		{Name: "run_command", Risky: true}, {Name: "web_fetch", Risky: true},
		{Name: "gh__search", Server: "gh"}, {Name: "gh__delete", Server: "gh", Destructive: true}, {Name: "other__x", Server: "other"},
		permanentSpec(),
	} {
		if err := reg.Register(tool.Func(s, nil)); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// permWorld is a node's parts that permanent agents are made of: the
// agent registry over a data directory with the creators' files, the
// extension manager with the agent rows, the store of instances.
type permWorld struct {
	inst   *instances
	agents *agent.Registry
	ext    *extension.Manager
	tools  *tool.Registry
	log    *eventLog
	p      *Permanents
}

func newPermWorld(t *testing.T) *permWorld {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, agent.AgentsDir), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"planner", "helper"} {
		if err := os.WriteFile(filepath.Join(dir, agent.AgentsDir, id+".yaml"), []byte(creatorFile), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	agents, err := agent.NewRegistry(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := testkit.ExtensionStore(t)
	ext := extension.New(st, nil)
	if err := ext.Register(agents.ExtensionType()); err != nil {
		t.Fatal(err)
	}
	if err := ext.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	w := &permWorld{inst: &instances{st: st}, agents: agents, ext: ext, tools: registeredTools(t), log: &eventLog{}}
	w.p = NewPermanents(w.inst, ext, agents, w.tools, &PermanentOptions{Log: w.log})
	return w
}

// instances records permanent agents' instances in the store as the
// System's Permanent does; its next Permanent fails when fail is set (a
// crash between the row and the instance).
type instances struct {
	st    store.AgentStore
	fail  bool
	n     int
	asked [][2]string // name, creator
}

var errCrash = errors.New("crash")

func (f *instances) Permanent(ctx context.Context, name, creator string) (store.Instance, error) {
	f.asked = append(f.asked, [2]string{name, creator})
	if f.fail {
		f.fail = false
		return store.Instance{}, errCrash
	}
	f.n++
	in, _, err := f.st.CreateInstance(ctx, store.Instance{ID: fmt.Sprintf("p%023d", f.n), Type: store.InstancePermanent, Agent: name,
		Descriptor: "permanent:" + name, Parent: creator, Payer: name, State: store.AgentIdle}, store.InstanceLimits{})
	return in, err
}

// eventLog records the events written into each session's log.
type eventLog struct {
	mu  sync.Mutex
	got map[string][]event.AgentData
}

func (l *eventLog) Record(_ context.Context, addr string, evs ...event.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.got == nil {
		l.got = map[string][]event.AgentData{}
	}
	for _, e := range evs {
		var d event.AgentData
		if e.Kind != event.Agent || e.Decode(&d) != nil {
			return errors.New("not an agent event")
		}
		l.got[addr] = append(l.got[addr], d)
	}
	return nil
}

func (l *eventLog) events() map[string][]event.AgentData {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.got
}

// verdicts are what the policy of the agent id (as the registry defines
// it) says of each registered tool, as creatorVerdict reads it.
func (w *permWorld) verdicts(t *testing.T, id string) map[string]string {
	t.Helper()
	d, ok := w.agents.Get(id)
	if !ok {
		t.Fatalf("no agent %s", id)
	}
	out := map[string]string{}
	for _, s := range w.tools.Specs() {
		if v := creatorVerdict(d, &s); v != tool.Deny {
			out[s.Name] = v.String()
		}
	}
	return out
}

func scribe(tools ...string) PermanentRequest {
	return PermanentRequest{Creator: "planner", CreatorSession: "planner/main", CallID: "3.1", Name: "scribe",
		Description: "Takes notes", SystemPrompt: "You take notes.", Tools: tools}
}

// TestCreatePermanent: the new agent is a row of its own, with the tools
// asked for that its creator may use (those it asks for approval for ask
// first), an instance whose parent is the creator, and a "created" event
// first in its log.
func TestCreatePermanent(t *testing.T) {
	w := newPermWorld(t)
	r, err := w.p.CreatePermanent(t.Context(), scribe("clock", "gh__*", "remember"))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Created || !store.IsInstanceID(r.Instance.ID) {
		t.Errorf("created %v, id %q", r.Created, r.Instance.ID)
	}
	if diff := cmp.Diff([]string{"clock", "gh__search"}, r.Allow); diff != "" {
		t.Errorf("allow (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"remember"}, r.Ask); diff != "" {
		t.Errorf("ask (-want +got):\n%s", diff)
	}
	in := r.Instance
	if in.Agent != "scribe" || in.Parent != "planner" {
		t.Errorf("instance %+v: want scribe's, made by planner", in)
	}
	d, ok := w.agents.Get("scribe")
	if !ok {
		t.Fatal("the registry has no agent scribe")
	}
	if d.Type != agent.TypePermanent || d.Description != "Takes notes" || d.SystemPrompt != "You take notes." || d.Model.Provider != "echo" {
		t.Errorf("definition: type %q, description %q, prompt %q, model %+v", d.Type, d.Description, d.SystemPrompt, d.Model)
	}
	if diff := cmp.Diff(map[string]string{"clock": "allow", "gh__search": "allow", "remember": "ask"}, w.verdicts(t, "scribe")); diff != "" {
		t.Errorf("the new agent's tools (-want +got):\n%s", diff)
	}
	row, err := w.ext.Get(t.Context(), "agent", "scribe")
	if err != nil || row.Provenance != "agent:planner" {
		t.Errorf("row: provenance %q, %v", row.Provenance, err)
	}
	wantLog := map[string][]event.AgentData{"scribe/main": {{Op: event.AgentCreated, ID: in.ID, Type: "permanent", Parent: "planner"}}}
	if diff := cmp.Diff(wantLog, w.log.events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// The same call again (after a crash) finds what it made.
	again, err := w.p.CreatePermanent(t.Context(), scribe("clock", "gh__*", "remember"))
	if err != nil || again.Created || again.Instance.ID != in.ID {
		t.Errorf("again: created %v, id %q (first %q), %v", again.Created, again.Instance.ID, in.ID, err)
	}
	if diff := cmp.Diff(wantLog, w.log.events()); diff != "" {
		t.Errorf("events after the call again (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][2]string{{"scribe", "planner"}, {"scribe", "planner"}}, w.inst.asked); diff != "" {
		t.Errorf("instances asked for (-want +got):\n%s", diff)
	}
}

// TestCreatePermanentNoBetterEquipped: a glob gives the new agent only
// what its creator may use, "*" all of it and no more; with no tools it
// has none, although its allow list is empty.
func TestCreatePermanentNoBetterEquipped(t *testing.T) {
	w := newPermWorld(t)
	all := scribe("*")
	all.Name = "everything"
	if _, err := w.p.CreatePermanent(t.Context(), all); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(w.verdicts(t, "planner"), w.verdicts(t, "everything")); diff != "" {
		t.Errorf("the new agent's tools (-creator's +its):\n%s", diff)
	}
	none := scribe()
	none.Name = "bare"
	if _, err := w.p.CreatePermanent(t.Context(), none); err != nil {
		t.Fatal(err)
	}
	if got := w.verdicts(t, "bare"); len(got) != 0 {
		t.Errorf("an agent made with no tools may use %v", got)
	}
}

func TestCreatePermanentRefused(t *testing.T) {
	w := newPermWorld(t)
	if _, err := w.p.CreatePermanent(t.Context(), scribe("clock")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		req  func(*PermanentRequest)
		is   error
		says string
	}{
		{"a tool the creator may not call", func(r *PermanentRequest) { r.Name, r.Tools = "runner", []string{"clock", "run_command"} },
			errBadArgs, "tools[1]: run_command is a tool you may not use yourself"},
		{"a tool the creator is not offered", func(r *PermanentRequest) { r.Name, r.Tools = "forgetter", []string{"forget"} },
			errBadArgs, "tools[0]: forget is a tool you may not use yourself"},
		{"a destructive tool of a server it uses", func(r *PermanentRequest) { r.Name, r.Tools = "deleter", []string{"gh__delete"} },
			errBadArgs, "gh__delete is a tool you may not use"},
		{"no such tool", func(r *PermanentRequest) { r.Name, r.Tools = "x", []string{"teleport"} }, errBadArgs, `no tool is named "teleport"`},
		{"a glob of nothing it may use", func(r *PermanentRequest) { r.Name, r.Tools = "x", []string{"other__*"} }, errBadArgs, "matches no tool you may use"},
		{"a malformed glob", func(r *PermanentRequest) { r.Name, r.Tools = "x", []string{"["} }, errBadArgs, "not a valid glob"},
		{"the same name, another prompt", func(r *PermanentRequest) { r.SystemPrompt = "You write poems." }, ErrExists, "agent:planner"},
		{"the same name, by another creator", func(r *PermanentRequest) { r.Creator = "helper" }, ErrExists, "agent:planner"},
		{"an agent file's name", func(r *PermanentRequest) { r.Name = "helper" }, ErrExists, "file"},
		{"the built-in system agent's name", func(r *PermanentRequest) { r.Name = "memory-keeper" }, ErrExists, "builtin"},
		{"a creator that is no agent", func(r *PermanentRequest) { r.Name, r.Creator = "x", "ghost" }, ErrNotFound, "ghost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := scribe("clock")
			tc.req(&req)
			_, err := w.p.CreatePermanent(t.Context(), req)
			if !errors.Is(err, tc.is) || !containsStr(err, tc.says) {
				t.Fatalf("err %v, want %v saying %q", err, tc.is, tc.says)
			}
			if req.Name != "scribe" && req.Name != "helper" && req.Name != "memory-keeper" {
				if _, err := w.ext.Get(t.Context(), "agent", req.Name); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("a row %s was written: %v", req.Name, err)
				}
			}
		})
	}
	if d, _ := w.agents.Get("scribe"); d.SystemPrompt != "You take notes." {
		t.Errorf("scribe's prompt is now %q", d.SystemPrompt)
	}
}

// TestCreatePermanentAfterCrash: a crash after the row, before the
// instance, leaves a row; the call made again makes the instance and says
// the agent was there. (Its created event is lost with the crash: it is
// written only by the call that wrote the row, so never twice.)
func TestCreatePermanentAfterCrash(t *testing.T) {
	w := newPermWorld(t)
	w.inst.fail = true
	if _, err := w.p.CreatePermanent(t.Context(), scribe("clock")); !errors.Is(err, errCrash) {
		t.Fatalf("err %v, want the crash", err)
	}
	if _, ok := w.agents.Get("scribe"); !ok {
		t.Fatal("the row was not written before the crash")
	}
	r, err := w.p.CreatePermanent(t.Context(), scribe("clock"))
	if err != nil || r.Created || r.Instance.Agent != "scribe" {
		t.Fatalf("again: %+v, %v", r, err)
	}
	if got := len(w.log.events()["scribe/main"]); got != 0 {
		t.Errorf("%d created events, want none", got)
	}
}

func containsStr(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }
