package memory

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/tool"
)

func toolMap(s *Store, o *ToolOptions) map[string]tool.Tool {
	m := map[string]tool.Tool{}
	for _, t := range Tools(s, o) {
		m[t.Spec().Name] = t
	}
	return m
}

func call(t *testing.T, tl tool.Tool, agent, args string) (string, error) {
	t.Helper()
	r, err := tl.Call(context.Background(), &tool.Call{ID: "12.call_abc", Name: tl.Spec().Name, Args: json.RawMessage(args), Agent: agent, Session: "chat:alice"})
	return r.Output, err
}

func TestToolsSpecs(t *testing.T) {
	s, _ := newStore(t, nil)
	var names []string
	for _, tl := range Tools(s, nil) {
		sp := tl.Spec()
		names = append(names, sp.Name)
		var schema map[string]any
		if err := json.Unmarshal(sp.InputSchema, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("%s: schema %v, %v", sp.Name, schema, err)
		}
		if sp.Description == "" {
			t.Errorf("%s: no description", sp.Name)
		}
	}
	if d := cmp.Diff([]string{"remember", "recall", "forget", "relate"}, names); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
}

func TestToolsRoundTrip(t *testing.T) {
	s, _ := newStore(t, hashed())
	tl := toolMap(s, &ToolOptions{Shared: func(a string) bool { return a == "a1" }})
	steps := []struct{ tool, agent, args, want string }{
		{"remember", "a1", `{"entities":[{"name":"Alice","type":"person","observations":["likes green tea","likes green tea"]}]}`,
			"Remembered: created 1 entity: Alice; added 1 observation (ids 1); 1 observation was already known."},
		{"remember", "a1", `{"insight":"Standups run long on Mondays.","tags":["meetings"]}`, "Remembered: stored insight 1."},
		{"remember", "a1", `{"insight":"The team offsite is in Lyon.","shared":true}`, "Remembered: stored insight 2."},
		{"relate", "a1", `{"relations":[{"from":"Alice","type":"works_at","to":"Acme"}]}`, "Related: 1 relation new, 0 already known."},
		{"recall", "a1", `{"query":"green tea","kinds":["observation"]}`,
			"Found 1 memory, best first.\n[observation 1] Alice: likes «green» «tea» — 2025-06-01, session chat:alice turn 12"},
		{"recall", "a1", `{"query":"offsite"}`,
			"Found 1 memory, best first.\n[insight 2] The team «offsite» is in Lyon. — 2025-06-01, shared, session chat:alice turn 12"},
		{"recall", "a2", `{"query":"offsite"}`, "No memories found."},
		{"forget", "a1", `{"observations":[1],"insights":[1]}`, "Forgot 2 memories."},
		{"forget", "a1", `{"insights":[2]}`, "Nothing matched; no memories were deleted."},
		{"forget", "a1", `{"insights":[2],"shared":true}`, "Forgot 1 memory."},
	}
	for i, st := range steps {
		if st.tool == "recall" {
			drain(t, s)
		}
		got, err := call(t, tl[st.tool], st.agent, st.args)
		if err != nil {
			t.Fatalf("step %d %s: %v", i, st.tool, err)
		}
		if got != st.want {
			t.Errorf("step %d %s:\n got %q\nwant %q", i, st.tool, got, st.want)
		}
	}
	e, err := s.Get(context.Background(), "a1", "Alice")
	if err != nil {
		t.Fatal(err)
	}
	if p := e.Provenance; p != (Provenance{Session: "chat:alice", Turn: 12}) {
		t.Errorf("provenance %+v", p)
	}
}

func TestToolArgErrors(t *testing.T) {
	s, _ := newStore(t, nil)
	tl := toolMap(s, nil)
	for _, tc := range []struct {
		tool, agent, args string
		want              error
	}{
		{"remember", "a1", `{}`, ErrInvalid},
		{"remember", "a1", `{"insight": 5}`, ErrBadArgs},
		{"remember", "a1", `{"insight":"x","colour":"red"}`, ErrBadArgs},
		{"remember", "a1", `{"insight":"x","shared":true}`, ErrBadArgs},
		{"remember", "", `{"insight":"x"}`, ErrBadArgs},
		{"remember", "a1", `{"entities":[{"name":""}]}`, ErrInvalid},
		{"recall", "a1", `{}`, ErrBadArgs},
		{"recall", "a1", `{"query":"x","k":1000}`, ErrBadArgs},
		{"recall", "a1", `{"query":"x","since":"last week"}`, ErrBadArgs},
		{"recall", "a1", `{"query":"x","kinds":["fact"]}`, ErrInvalid},
		{"recall", "a1", `not json`, ErrBadArgs},
		{"forget", "a1", `{}`, ErrBadArgs},
		{"forget", "a1", `{"observations":["one"]}`, ErrBadArgs},
		{"relate", "a1", `{"relations":[]}`, ErrBadArgs},
		{"relate", "a1", `{"relations":[{"from":"A","type":"","to":"B"}]}`, ErrInvalid},
		{"relate", "a1", `{"relations":[{"from":"A","type":"x","to":"B"}]} {}`, ErrBadArgs},
	} {
		_, err := call(t, tl[tc.tool], tc.agent, tc.args)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s %s: err = %v, want %v", tc.tool, tc.args, err, tc.want)
		}
	}
}

func TestProvenanceFromCall(t *testing.T) {
	for id, want := range map[string]int64{"12.call_1": 12, "7": 7, "call_1": 0, "": 0, "-3.x": 0} {
		if got := provenance(&tool.Call{ID: id, Session: "s"}); got != (Provenance{Session: "s", Turn: want}) {
			t.Errorf("provenance(%q) = %+v, want turn %d", id, got, want)
		}
	}
}

func TestFormatRecallDegraded(t *testing.T) {
	got := FormatRecall(Recall{Degraded: true, Reason: "no embedder configured"})
	if !strings.Contains(got, "Keyword search only: no embedder configured.") {
		t.Errorf("got %q", got)
	}
}

// Two instances of one swarm template each have their scope: what one
// customer's agent remembers the other's does not recall, nor forget,
// while an instance without a scope of its own shares its template's.
func TestToolsScope(t *testing.T) {
	s, _ := newStore(t, hashed())
	tl := toolMap(s, nil)
	run := func(name, agent, scope, args string) string {
		t.Helper()
		r, err := tl[name].Call(t.Context(), &tool.Call{ID: "3.c1", Name: name, Args: json.RawMessage(args), Agent: agent, Scope: scope, Session: agent + "/main"})
		if err != nil {
			t.Fatalf("%s by %s: %v", name, agent, err)
		}
		return r.Output
	}
	run("remember", "ckalice", "ckalice", `{"insight":"Alice's order 1234 shipped late."}`)
	run("remember", "ckbob", "ckbob", `{"insight":"Bob's order 5678 is a gift."}`)
	run("remember", "support", "", `{"insight":"Refunds take five days."}`)
	drain(t, s)
	for _, tc := range []struct{ agent, scope, query, want string }{
		{"ckalice", "ckalice", "order", "1234"},
		{"ckbob", "ckbob", "order", "5678"},
		{"ckuser", "support", "refunds", "five days"}, // a user instance: its template's memory
	} {
		got := run("recall", tc.agent, tc.scope, `{"query":"`+tc.query+`"}`)
		if !strings.Contains(got, tc.want) || strings.Count(got, "\n[") != 1 {
			t.Errorf("%s (scope %q) recalls %q; want only %q", tc.agent, tc.scope, got, tc.want)
		}
	}
	if got := run("forget", "ckbob", "ckbob", `{"insights":[1]}`); !strings.HasPrefix(got, "Nothing matched") {
		t.Errorf("one instance forgot another's memory: %q", got)
	}
}
