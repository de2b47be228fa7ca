package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
)

// fakeContexts prepares one context instance whose render counts the
// times it was prepared.
type fakeContexts struct {
	mu    sync.Mutex
	n     int
	refs  []string
	err   error // returned with the view
	nilV  bool  // no view with err
	hooks bool
	acts  []string
}

func (f *fakeContexts) Prepare(ctx context.Context, d *agent.Definition, session string, ref *ContextRef) (*ContextView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	f.refs = append(f.refs, session+" "+ref.Type+" "+string(ref.Args))
	if f.err != nil && f.nilV {
		return nil, f.err
	}
	v := &ContextView{Type: ref.Type, Key: "chat:alice", Instructions: "Help alice.", Actions: f.acts,
		Renders: []ContextRender{{Type: ref.Type, Key: "chat:alice", Text: strings.Repeat("seen ", f.n)}}}
	if f.hooks {
		v.OnRun = []agent.BootstrapCall{{Tool: "read", Args: map[string]any{"on": "run"}}}
		v.OnError = []agent.BootstrapCall{{Tool: "read", Args: map[string]any{"on": "error"}}, {Tool: "nosuch"}}
	}
	return v, f.err
}

func contextTurn(def *agent.Definition) *Turn {
	tr := turn(def)
	tr.Item.Options = json.RawMessage(`{"contextRef":{"type":"chat","args":{"userId":"alice"}}}`)
	return tr
}

func lifecycles(l *memLog, phase string) []event.LifecycleData {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []event.LifecycleData
	for _, e := range l.events {
		var d event.LifecycleData
		if e.Kind == event.Lifecycle && e.Decode(&d) == nil && d.Phase == phase {
			out = append(out, d)
		}
	}
	return out
}

// The context instance is prepared at the turn's start and before each
// later step; its instructions and render lead the turn's state in the
// prompt; onRun runs after a run that ended well.
func TestContextInstance(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){
		calls(model.ToolCall{ID: "c", Name: "read", Args: json.RawMessage(`{}`)}), text("ok")}}
	h := newHarness(t, models{"m": p})
	cs := &fakeContexts{hooks: true}
	h.eng.o.Contexts = cs
	h.eng.o.Working = func(context.Context, int64) (map[string]json.RawMessage, error) {
		return map[string]json.RawMessage{"k": json.RawMessage(`1`)}, nil
	}
	end, err := h.run(context.Background(), contextTurn(&agent.Definition{SystemPrompt: "sys"}))
	if err != nil || end.Status != event.StatusDone || end.Reply != "ok" {
		t.Fatalf("end %+v err %v", end, err)
	}
	if diff := cmp.Diff([]string{`a/k chat {"userId":"alice"}`, `a/k chat {"userId":"alice"}`}, cs.refs); diff != "" {
		t.Errorf("prepared (-want +got):\n%s", diff)
	}
	for i, req := range p.reqs {
		want := "sys\n\n# Context chat:alice\n\n<context type=\"chat\" key=\"chat:alice\">\n<instructions>Help alice.</instructions>\n" + strings.Repeat("seen ", i+1) + "\n</context>\n\n\n# Working memory"
		if !strings.HasPrefix(req.System, want) {
			t.Errorf("step %d's system prompt:\n%s\nwant it to start with\n%s", i+1, req.System, want)
		}
	}
	runs := lifecycles(h.log, event.PhaseContextRun)
	if len(runs) != 1 || runs[0].Tool != "read" || string(runs[0].Args) != `{"on":"run"}` || runs[0].IsError {
		t.Errorf("onRun lifecycle events %+v", runs)
	}
	if errs := lifecycles(h.log, event.PhaseContextError); len(errs) != 0 {
		t.Errorf("onError ran after a good run: %+v", errs)
	}
	if ks := h.log.kinds(); ks[len(ks)-1] != event.TurnEnd || ks[len(ks)-2] != event.Lifecycle {
		t.Errorf("events %v: want the hook logged before the end", ks)
	}
}

// onError runs after a run that failed; a hook that fails is logged and
// the turn's end is unchanged.
func TestContextOnError(t *testing.T) {
	p := &script{resps: []func(*model.Request) (*model.Response, error){fail(&model.Error{Kind: model.ErrBadRequest, Provider: "p", Status: 400})}}
	h := newHarness(t, models{"m": p})
	h.eng.o.Contexts = &fakeContexts{hooks: true}
	end, err := h.run(context.Background(), contextTurn(&agent.Definition{}))
	if err != nil || end.Status != event.StatusError {
		t.Fatalf("end %+v err %v", end, err)
	}
	errs := lifecycles(h.log, event.PhaseContextError)
	if len(errs) != 2 || errs[0].Tool != "read#1" || errs[0].IsError || errs[1].Tool != "nosuch#2" || !errs[1].IsError {
		t.Errorf("onError lifecycle events %+v", errs)
	}
	if runs := lifecycles(h.log, event.PhaseContextRun); len(runs) != 0 {
		t.Errorf("onRun ran after a failed run: %+v", runs)
	}
}

// A context that fails to prepare ends the turn with an error saying
// why, after its onError hooks when the view came back; a message that
// names a context where agentd has none fails clearly.
func TestContextPrepareFails(t *testing.T) {
	for _, tc := range []struct {
		name     string
		contexts ContextSource
		want     string
		onError  int
	}{
		{"no context types", nil, "this agentd has no context types", 0},
		{"with a view", &fakeContexts{hooks: true, err: errors.New("state does not match its schema")}, `prepare context "chat": state does not match its schema`, 2},
		{"without a view", &fakeContexts{hooks: true, nilV: true, err: errors.New("unknown context type")}, "unknown context type", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &script{}
			h := newHarness(t, models{"m": p})
			if tc.contexts != nil {
				h.eng.o.Contexts = tc.contexts
			}
			end, err := h.run(context.Background(), contextTurn(&agent.Definition{}))
			if err != nil || end.Status != event.StatusError || !strings.Contains(end.Reason, tc.want) {
				t.Fatalf("end %+v err %v; want an error with %q", end, err, tc.want)
			}
			if p.calls != 0 {
				t.Errorf("the model was called %d times", p.calls)
			}
			if n := len(lifecycles(h.log, event.PhaseContextError)); n != tc.onError {
				t.Errorf("%d onError calls, want %d", n, tc.onError)
			}
		})
	}
}

// A context's actions are offered in its turns besides the agent's tools
// (a risky tool too, as if allowed by name), but not past a deny rule,
// and not in other turns.
func TestContextActions(t *testing.T) {
	offered := func(def *agent.Definition, withContext bool, acts []string) []string {
		p := &script{resps: []func(*model.Request) (*model.Response, error){text("ok")}}
		h := newHarness(t, models{"m": p})
		h.eng.o.Contexts = &fakeContexts{acts: acts}
		tr := turn(def)
		if withContext {
			tr = contextTurn(def)
		}
		if end, err := h.run(context.Background(), tr); err != nil || end.Status != event.StatusDone {
			t.Fatalf("end %+v err %v", end, err)
		}
		var names []string
		for _, s := range p.reqs[0].Tools {
			names = append(names, s.Name)
		}
		return names
	}
	if got := offered(&agent.Definition{}, false, []string{"ne*"}); slices.Contains(got, "net") {
		t.Errorf("without the context: offered %v", got)
	}
	if got := offered(&agent.Definition{}, true, []string{"ne*"}); !slices.Contains(got, "net") {
		t.Errorf("in the context: offered %v, want net", got)
	}
	if got := offered(&agent.Definition{Tools: agent.ToolPolicy{Deny: []string{"net"}}}, true, []string{"ne*"}); slices.Contains(got, "net") {
		t.Errorf("denied, in the context: offered %v", got)
	}
	if got := offered(&agent.Definition{Tools: agent.ToolPolicy{Allow: []string{"read"}}}, true, []string{"net"}); !slices.Equal(got, []string{"net", "read"}) {
		t.Errorf("an allow list and the context: offered %v, want [net read]", got)
	}
}
