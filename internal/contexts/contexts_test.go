package contexts

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/extension"
	"agentd/internal/schema"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// memStore is sessions' working memory in memory.
type memStore struct {
	mu       sync.Mutex
	sessions map[string]int64
	wm       map[int64]map[string]json.RawMessage
}

func newMemStore() *memStore {
	return &memStore{sessions: map[string]int64{}, wm: map[int64]map[string]json.RawMessage{}}
}

// open makes a session, as the runtime does before a turn.
func (m *memStore) open(addr string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id, ok := m.sessions[addr]; ok {
		return id
	}
	id := int64(len(m.sessions) + 1)
	m.sessions[addr] = id
	m.wm[id] = map[string]json.RawMessage{}
	return id
}

func (m *memStore) SessionByAddress(_ context.Context, a, k string) (store.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.sessions[a+"/"+k]
	if !ok {
		return store.Session{}, store.ErrNotFound
	}
	return store.Session{ID: id, Agent: a, Key: k}, nil
}

func (m *memStore) Working(_ context.Context, s int64) (map[string]json.RawMessage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]json.RawMessage{}
	for k, v := range m.wm[s] {
		out[k] = v
	}
	return out, nil
}

func (m *memStore) SetWorking(_ context.Context, s int64, k string, v json.RawMessage) (event.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.wm[s][k] = v
	return event.Event{}, nil
}

type agents map[string]bool

func (a agents) Get(id string) (*agent.Definition, bool) {
	if !a[id] {
		return nil, false
	}
	return &agent.Definition{ID: id}, true
}

const chatSpec = `{"agent": "assistant", "description": "a chat with a user",
	"args_schema": {"type": "object", "properties": {"userId": {"type": "string", "minLength": 1}}, "required": ["userId"], "additionalProperties": false},
	"key": "{{userId}}", "instructions": "Be brief.",
	"state_schema": {"type": "object", "properties": {"notes": {"type": "string"}, "visits": {"type": "integer"}}, "additionalProperties": false},
	"initial_state": {"notes": "none yet", "visits": 0},
	"render": "Chat with {{args.userId}}: {{state.notes}} ({{state.visits}} visits)",
	"actions": ["calc*"], "use": [{"type": "profile", "args": {"id": "{{args.userId}}"}}],
	"on_run": [{"tool": "clock"}]}`

const profileSpec = `{"agent": "assistant", "key": "p-{{ id }}",
	"args_schema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
	"render": "Profile of {{args.id}}: {{state}}"}`

// setup returns Contexts with chat and profile active.
func setup(t *testing.T) (*Contexts, *memStore) {
	t.Helper()
	st := newMemStore()
	c := New(st, agents{"assistant": true}, nil)
	for _, r := range []struct{ name, spec string }{{"profile", profileSpec}, {"chat", chatSpec}} {
		if errs := c.Check(context.Background(), &extension.Doc{Type: TypeName, Name: r.name, Spec: json.RawMessage(r.spec)}); len(errs) > 0 {
			t.Fatalf("check %s: %v", r.name, errs)
		}
		if err := c.Activate(context.Background(), &store.Extension{Type: TypeName, Name: r.name, Spec: json.RawMessage(r.spec)}); err != nil {
			t.Fatalf("activate %s: %v", r.name, err)
		}
	}
	return c, st
}

func TestSchemaCompiles(t *testing.T) {
	if _, err := schema.Compile(Schema()); err != nil {
		t.Fatal(err)
	}
	s, err := schema.Compile(Schema())
	if err != nil {
		t.Fatal(err)
	}
	var v any
	json.Unmarshal([]byte(chatSpec), &v)
	if errs := s.Validate(v); len(errs) > 0 {
		t.Fatalf("the chat spec: %v", errs)
	}
}

func TestCheck(t *testing.T) {
	c, _ := setup(t)
	for _, tc := range []struct {
		name, row, spec string
		want            []schema.Error
	}{
		{"no agent", "x", `{"agent": "nobody", "key": "k"}`,
			[]schema.Error{{Pointer: "/spec/agent", Message: `no agent "nobody"`}}},
		{"key ref not an arg", "x", `{"agent": "assistant", "key": "chat:{{user}}", "args_schema": {"type": "object", "properties": {"userId": {"type": "string"}}}}`,
			[]schema.Error{{Pointer: "/spec/key", Message: "{{user}} is not a property of args_schema (its properties: [userId])"}}},
		{"render ref not state", "x", `{"agent": "assistant", "key": "k", "state_schema": {"type": "object", "properties": {"notes": {}}}, "render": "{{state.note}} {{user}}"}`,
			[]schema.Error{
				{Pointer: "/spec/render", Message: `{{state.note}}: "note" is not a property of state_schema (its properties: [notes])`},
				{Pointer: "/spec/render", Message: "{{user}}: a reference begins with args. or state. ({{args.userId}}, {{state.notes}})"},
			}},
		{"bad schema", "x", `{"agent": "assistant", "key": "k", "state_schema": {"type": "object", "frobnicate": 1}}`,
			[]schema.Error{{Pointer: "/spec/state_schema", Message: `schema: invalid schema: /frobnicate: keyword "frobnicate" is not supported`}}},
		{"initial state off schema", "x", `{"agent": "assistant", "key": "k", "state_schema": {"type": "object", "properties": {"n": {"type": "integer"}}}, "initial_state": {"n": "one"}}`,
			[]schema.Error{{Pointer: "/spec/initial_state/n", Message: "must be a whole number"}}},
		{"unknown use", "x", `{"agent": "assistant", "key": "k", "use": [{"type": "nope"}]}`,
			[]schema.Error{{Pointer: "/spec/use/0/type", Message: `no context type "nope"`}}},
		{"self use", "x", `{"agent": "assistant", "key": "k", "use": [{"type": "x"}]}`,
			[]schema.Error{{Pointer: "/spec/use/0/type", Message: "a cycle: [x x]"}}},
		{"cycle through others", "profile", `{"agent": "assistant", "key": "{{id}}", "args_schema": {"type": "object", "properties": {"id": {}}}, "use": [{"type": "chat", "args": {"userId": "{{args.id}}"}}]}`,
			[]schema.Error{{Pointer: "/spec/use/0/type", Message: "a cycle: [profile chat profile]"}}},
		{"bad wall time", "x", `{"agent": "assistant", "key": "k", "budget": {"max_wall_time": "0s"}}`,
			[]schema.Error{{Pointer: "/spec/budget/max_wall_time", Message: `max_wall_time: want a positive duration such as 90s or 5m, not "0s"`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := c.Check(context.Background(), &extension.Doc{Type: TypeName, Name: tc.row, Spec: json.RawMessage(tc.spec)})
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("errors (-want +got):\n%s", d)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	c, _ := setup(t)
	in, err := c.Resolve("chat", json.RawMessage(`{"userId": "alice"}`))
	if err != nil {
		t.Fatal(err)
	}
	if in.Session != "assistant/ctx:chat:alice" || in.Key != "alice" || string(in.Args) != `{"userId":"alice"}` {
		t.Errorf("instance %+v", in)
	}
	for _, tc := range []struct {
		typ, args string
		want      error
		msg       string
	}{
		{"nope", `{}`, ErrUnknown, `unknown context type "nope"`},
		{"chat", `{}`, ErrBadArgs, `/userId: is required`},
		{"chat", `{"userId": 7}`, ErrBadArgs, "/userId: must be a string"},
		{"chat", `[1]`, ErrBadArgs, "want a JSON object"},
		{"chat", `{"userId": "a/b"}`, ErrBadArgs, `has a "/"`},
		{"chat", `{"userId": "a\nb"}`, ErrBadArgs, "control character"},
		{"chat", `{"userId": "` + strings.Repeat("x", 300) + `"}`, ErrBadArgs, "longer than"},
	} {
		_, err := c.Resolve(tc.typ, json.RawMessage(tc.args))
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Resolve(%s, %s) = %v, want %v with %q", tc.typ, tc.args, err, tc.want, tc.msg)
		}
	}
}

func call(t *testing.T, c *Contexts, session, args string) (tool.Result, error) {
	t.Helper()
	a, _, _ := strings.Cut(session, "/")
	return c.Tool().Call(context.Background(), &tool.Call{Name: UpdateTool, Agent: a, Session: session, Args: json.RawMessage(args)})
}

func TestUpdateState(t *testing.T) {
	c, st := setup(t)
	st.open("assistant/ctx:chat:alice")
	steps := []struct {
		args, want string
		err        error
	}{
		{`{"set": {"notes": "likes tea"}}`, `{"notes":"likes tea","visits":0}`, nil},
		{`{"set": {"visits": 2}}`, `{"notes":"likes tea","visits":2}`, nil},
		{`{"set": {"visits": "many"}}`, "", ErrBadState},
		{`{"set": {"colour": "red"}}`, "", ErrBadState},
		{`{"state": {"notes": "fresh"}}`, `{"notes":"fresh"}`, nil},
		{`{"set": {}, "state": {}}`, "", ErrBadState},
		{`{}`, "", ErrBadState},
	}
	for _, s := range steps {
		res, err := call(t, c, "assistant/ctx:chat:alice", s.args)
		if s.err != nil {
			if !errors.Is(err, s.err) {
				t.Errorf("%s: err %v, want %v", s.args, err, s.err)
			}
			continue
		}
		if err != nil || res.Output != s.want {
			t.Errorf("%s: %q, %v; want %s", s.args, res.Output, err, s.want)
		}
	}
	// An invalid change left the state as it was.
	wm, _ := st.Working(context.Background(), 1)
	if got := string(wm[StateKey]); got != `{"notes":"fresh"}` {
		t.Errorf("stored %s", got)
	}
	for _, session := range []string{"assistant/chat:alice", "other/ctx:chat:alice", "assistant/ctx:nope:x"} {
		if _, err := call(t, c, session, `{"set": {"notes": "x"}}`); err == nil {
			t.Errorf("update_context in %s: no error", session)
		}
	}
}

func TestPrepare(t *testing.T) {
	c, st := setup(t)
	st.open("assistant/ctx:chat:alice")
	if _, err := call(t, c, "assistant/ctx:chat:alice", `{"set": {"notes": "likes tea", "visits": 3}}`); err != nil {
		t.Fatal(err)
	}
	id := st.open("assistant/ctx:profile:p-alice")
	st.SetWorking(context.Background(), id, StateKey, json.RawMessage(`{"lang":"en"}`))
	d := &agent.Definition{ID: "assistant"}
	ref := &engine.ContextRef{Type: "chat", Args: json.RawMessage(`{"userId":"alice"}`)}
	v, err := c.Prepare(context.Background(), d, "assistant/ctx:chat:alice", ref)
	if err != nil {
		t.Fatal(err)
	}
	want := &engine.ContextView{Type: "chat", Key: "alice", Instructions: "Be brief.",
		Renders: []engine.ContextRender{
			{Type: "chat", Key: "alice", Text: "Chat with alice: likes tea (3 visits)"},
			{Type: "profile", Key: "p-alice", Text: `Profile of alice: {"lang":"en"}`},
		},
		Actions: []string{"calc*", UpdateTool}, OnRun: []agent.BootstrapCall{{Tool: "clock"}}}
	if d := cmp.Diff(want, v); d != "" {
		t.Errorf("view (-want +got):\n%s", d)
	}
	// Bob's instance is separate and starts from the initial state.
	v, err = c.Prepare(context.Background(), d, "assistant/ctx:chat:bob", &engine.ContextRef{Type: "chat", Args: json.RawMessage(`{"userId":"bob"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Renders[0].Text; got != "Chat with bob: none yet (0 visits)" {
		t.Errorf("bob's render %q", got)
	}
	if got := v.Renders[1].Text; got != "Profile of bob: {}" {
		t.Errorf("bob's profile %q", got)
	}
	// A message cannot name a context in another session.
	if _, err := c.Prepare(context.Background(), d, "assistant/main", ref); !errors.Is(err, ErrBadArgs) {
		t.Errorf("another session: %v", err)
	}
}

// TestPrepareParallel prepares many used contexts at once (run with
// -race).
func TestPrepareParallel(t *testing.T) {
	st := newMemStore()
	c := New(st, agents{"a": true}, nil)
	var uses []string
	for _, n := range []string{"u1", "u2", "u3", "u4"} {
		spec := `{"agent": "a", "key": "k", "render": "` + n + `"}`
		if err := c.Activate(context.Background(), &store.Extension{Name: n, Spec: json.RawMessage(spec)}); err != nil {
			t.Fatal(err)
		}
		uses = append(uses, `{"type": "`+n+`"}`)
	}
	spec := `{"agent": "a", "key": "top", "render": "top", "use": [` + strings.Join(uses, ",") + `]}`
	if err := c.Activate(context.Background(), &store.Extension{Name: "top", Spec: json.RawMessage(spec)}); err != nil {
		t.Fatal(err)
	}
	v, err := c.Prepare(context.Background(), &agent.Definition{ID: "a"}, "a/ctx:top:top", &engine.ContextRef{Type: "top"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range v.Renders {
		got = append(got, r.Text)
	}
	if d := cmp.Diff([]string{"top", "u1", "u2", "u3", "u4"}, got); d != "" {
		t.Errorf("renders in use order (-want +got):\n%s", d)
	}
}
