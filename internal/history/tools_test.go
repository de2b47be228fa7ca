package history_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentd/internal/event"
	"agentd/internal/history"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
	"agentd/internal/tool"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func setup(t *testing.T, allowed func(string) bool) (*sqlite.Store, map[string]tool.Tool) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "agentd.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	add := func(agent, key string, texts ...string) {
		s, _, err := st.Session(t.Context(), agent, key)
		if err != nil {
			t.Fatal(err)
		}
		b := &store.Batch{Session: s.ID}
		for i, tx := range texts {
			e := event.New(s.ID, 1, event.Input, event.InputData{Text: tx})
			e.Time = now.Add(-time.Duration(len(texts)-i) * 24 * time.Hour)
			b.Events = append(b.Events, e)
		}
		b.Events = append(b.Events, event.New(s.ID, 1, event.ToolCall, event.ToolCallData{ID: "c1", Name: "clock", Args: json.RawMessage(`{}`)}))
		if err := st.Commit(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
	add("alice", "chat:1", "invoice for the garden party", "old invoice question", "the newest invoice")
	add("bob", "chat:1", "bob's private invoice")
	tools := map[string]tool.Tool{}
	for _, tl := range history.Tools(st, &history.Options{Allowed: allowed, Now: func() time.Time { return now }}) {
		tools[tl.Spec().Name] = tl
	}
	return st, tools
}

func call(t *testing.T, tools map[string]tool.Tool, name, agent, args string) (string, error) {
	t.Helper()
	res, err := tools[name].Call(t.Context(), &tool.Call{Name: name, Args: json.RawMessage(args), Agent: agent, Session: agent + "/chat:1"})
	return res.Output, err
}

func TestScoping(t *testing.T) {
	_, tools := setup(t, nil)
	out, err := call(t, tools, "search_history", "alice", `{"query": "invoice"}`)
	if err != nil || strings.Contains(out, "bob") || !strings.Contains(out, "3 matches") || !strings.Contains(out, "«invoice»") {
		t.Errorf("search_history: %v\n%s", err, out)
	}
	if _, err := call(t, tools, "get_thread", "alice", `{"session": "bob/chat:1"}`); err == nil {
		t.Error("get_thread of bob's session from alice succeeded")
	}
	out, err = call(t, tools, "get_thread", "alice", `{"session": "chat:1", "limit": 2}`)
	if err != nil || !strings.Contains(out, "#1 ") || !strings.Contains(out, "next cursor: seq:2") {
		t.Fatalf("get_thread: %v\n%s", err, out)
	}
	out, err = call(t, tools, "get_thread", "alice", `{"session": "alice/chat:1", "cursor": "seq:2"}`)
	if err != nil || !strings.Contains(out, "the newest invoice") || !strings.Contains(out, "tool call clock {}") || !strings.Contains(out, "no more results") {
		t.Errorf("get_thread page 2: %v\n%s", err, out)
	}
	out, err = call(t, tools, "list_threads", "alice", `{}`)
	if err != nil || strings.Contains(out, "bob") || !strings.Contains(out, "alice/chat:1") {
		t.Errorf("list_threads: %v\n%s", err, out)
	}
	if _, err := call(t, tools, "search_all", "alice", `{"query": "invoice"}`); err == nil || !strings.Contains(err.Error(), "not allowed") {
		t.Errorf("search_all without permission: %v", err)
	}
}

func TestSearchAllAllowed(t *testing.T) {
	_, tools := setup(t, func(a string) bool { return a == "alice" })
	out, err := call(t, tools, "search_all", "alice", `{"query": "private invoice", "agents": ["bob"]}`)
	if err != nil || !strings.Contains(out, "bob/chat:1") {
		t.Errorf("search_all: %v\n%s", err, out)
	}
	if _, err := call(t, tools, "search_all", "bob", `{"query": "invoice"}`); err == nil {
		t.Error("search_all for bob succeeded")
	}
	// Only the agents allowed to use it are offered it.
	serves := tools["search_all"].Spec().Serves
	if serves == nil || !serves("alice") || serves("bob") {
		t.Error("search_all is offered to agents not allowed to use it")
	}
	_, none := setup(t, nil)
	if none["search_all"].Spec().Serves("alice") {
		t.Error("search_all is offered without an Allowed function")
	}
}

func TestFindRelevantRecency(t *testing.T) {
	_, tools := setup(t, nil)
	out, err := call(t, tools, "find_relevant", "alice", `{"query": "invoice", "since": "4d"}`)
	if err != nil {
		t.Fatal(err)
	}
	i, j := strings.Index(out, "newest «invoice»"), strings.Index(out, "garden party")
	if i < 0 || j < 0 || i > j {
		t.Errorf("the newest message does not rank first:\n%s", out)
	}
	out, err = call(t, tools, "find_relevant", "alice", `{"query": "invoice", "since": "2d"}`)
	if err != nil || strings.Contains(out, "garden") || !strings.Contains(out, "newest") {
		t.Errorf("since 2d: %v\n%s", err, out)
	}
	if _, err := call(t, tools, "find_relevant", "alice", `{"query": "invoice", "since": "yesterday"}`); err == nil {
		t.Error("a bad since was accepted")
	}
}

func TestRerank(t *testing.T) {
	hits := []store.HistoryHit{
		{Score: 4, Event: event.Event{Seq: 1, Time: now.Add(-14 * 24 * time.Hour)}}, // 4 × 0.25 = 1
		{Score: 2, Event: event.Event{Seq: 2, Time: now}},                           // 2
		{Score: 3, Event: event.Event{Seq: 3, Time: now.Add(-7 * 24 * time.Hour)}},  // 1.5
	}
	var got []int64
	for _, r := range history.Rerank(hits, now, 7*24*time.Hour) {
		got = append(got, r.Event.Seq)
	}
	if want := []int64{2, 3, 1}; !slicesEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func slicesEqual(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestWorkingMemoryTools(t *testing.T) {
	st, tools := setup(t, nil)
	if _, err := call(t, tools, "wm_set", "alice", `{"key": "goal", "value": {"city": "Paris"}}`); err != nil {
		t.Fatal(err)
	}
	out, err := call(t, tools, "wm_get", "alice", `{}`)
	if err != nil || out != "\"goal\" = {\"city\":\"Paris\"}\n" {
		t.Errorf("wm_get: %v %q", err, out)
	}
	if out, _ := call(t, tools, "wm_get", "bob", `{"key": "goal"}`); !strings.Contains(out, "not set") {
		t.Errorf("bob sees alice's working memory: %q", out)
	}
	if out, err := call(t, tools, "wm_delete", "alice", `{"key": "goal"}`); err != nil || out != `deleted "goal"` {
		t.Errorf("wm_delete: %v %q", err, out)
	}
	res, err := tools["wm_set"].Call(t.Context(), &tool.Call{Name: "wm_set", Args: json.RawMessage(`{"key":"k","value":1}`), Agent: "alice", Session: "bob/chat:1"})
	if err == nil {
		t.Errorf("wm_set on another agent's session: %q", res.Output)
	}
	// Keys beginning with "_" are agentd's own (a context's state, checked
	// against its schema by update_context): the model cannot write them.
	for _, c := range []struct{ name, args string }{{"wm_set", `{"key": "_context_state", "value": {"x": 1}}`}, {"wm_delete", `{"key": "_context_state"}`}} {
		if out, err := call(t, tools, c.name, "alice", c.args); !errors.Is(err, history.ErrBadArgs) {
			t.Errorf("%s of an agentd key: %v %q", c.name, err, out)
		}
	}
	s, _ := st.SessionByAddress(t.Context(), "alice", "chat:1")
	evs, _ := st.Events(t.Context(), s.ID, 4, 0)
	if len(evs) != 2 || evs[0].Kind != event.WorkingMemory || evs[1].Kind != event.WorkingMemory {
		t.Errorf("working memory events: %+v", evs)
	}
}
