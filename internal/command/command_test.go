package command_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/command"
	"agentd/internal/extension"
	"agentd/internal/store"
)

type agents map[string]bool

func (a agents) Get(id string) (*agent.Definition, bool) {
	if a[id] {
		return &agent.Definition{ID: id}, true
	}
	return nil, false
}

// router returns a router with the rows given as name → spec (JSON).
func router(t *testing.T, rows map[string]string) *command.Router {
	t.Helper()
	r := command.NewRouter()
	h := command.NewHandler(r, agents{"assistant": true, "scribe": true})
	for name, spec := range rows {
		if err := h.Activate(context.Background(), &store.Extension{Type: "command", Name: name, Spec: json.RawMessage(spec)}); err != nil {
			t.Fatalf("activate %s: %v", name, err)
		}
	}
	return r
}

var rows = map[string]string{
	"standup": `{"description":"the team's standup","arguments":[{"name":"team","required":true},{"name":"days","type":"number","default":1}],"prompt":"Standup for {{team}} over {{days}} days."}`,
	"ask":     `{"arguments":[{"name":"level","type":"enum","values":["low","high"],"default":"low"},{"name":"question","rest":true,"required":true}],"prompt":"[{{level}}] {{question}}","agent":"scribe","budget":{"max_steps":3,"max_wall_time":"2m"}}`,
	"note":    `{"arguments":[{"name":"text","rest":true}],"prompt":"Note: {{text}}","silent":true}`,
}

func TestRoute(t *testing.T) {
	r := router(t, rows)
	for _, tt := range []struct {
		line string
		ok   bool
		want command.Route
		err  string
	}{
		{line: "hello", ok: false},
		{line: "/unknown x", ok: false},
		{line: "//standup platform", ok: false},
		{line: "/standupx", ok: false},
		{line: "/standup platform", ok: true, want: command.Route{Command: "standup", Session: "assistant/main", Text: "Standup for platform over 1 days."}},
		{line: "/standup  platform \t 3 ", ok: true, want: command.Route{Command: "standup", Session: "assistant/main", Text: "Standup for platform over 3 days."}},
		{line: "/standup", ok: true, err: "bad command: /standup: missing argument team; usage: /standup <team> [days]"},
		{line: "/standup platform soon", ok: true, err: `days must be a number, not "soon"`},
		{line: "/standup platform 2 more", ok: true, err: `unexpected "more"`},
		{line: "/ask high why is  the sky blue?", ok: true, want: command.Route{Command: "ask", Session: "scribe/assistant:main", Text: "[high] why is  the sky blue?",
			Budgets: &agent.Budgets{MaxSteps: 3, MaxWallTime: agent.Duration(120e9)}}},
		{line: "/ask medium x", ok: true, err: `level must be one of low, high, not "medium"`},
		{line: "/note remember the milk", ok: true, want: command.Route{Command: "note", Session: "assistant/main", Text: "Note: remember the milk", Silent: true}},
	} {
		got, ok, err := r.Route(tt.line, "assistant/main")
		if ok != tt.ok {
			t.Errorf("%q: ok %v, want %v", tt.line, ok, tt.ok)
			continue
		}
		if tt.err != "" {
			if err == nil || !errors.Is(err, command.ErrUsage) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err %v, want ErrUsage with %q", tt.line, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.line, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%q: %s", tt.line, diff)
		}
	}
}

func TestRouteOptions(t *testing.T) {
	rt, _, err := router(t, rows).Route("/ask high why", "assistant/main")
	if err != nil {
		t.Fatal(err)
	}
	got, err := rt.Options(json.RawMessage(`{"channelId":"c","budgets":{"max_steps":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"channelId":"c","budgets":{"max_steps":2,"max_wall_time":"2m0s"}}`; string(got) != want {
		t.Errorf("options %s, want %s", got, want)
	}
}

func TestListAndDeactivate(t *testing.T) {
	r := router(t, rows)
	h := command.NewHandler(r, agents{})
	if err := h.Deactivate(context.Background(), "note"); err != nil {
		t.Fatal(err)
	}
	want := []command.Info{
		{Name: "ask", Usage: "/ask [low|high] <question…>", Agent: "scribe"},
		{Name: "standup", Usage: "/standup <team> [days]", Description: "the team's standup"},
	}
	if diff := cmp.Diff(want, r.List()); diff != "" {
		t.Error(diff)
	}
	if _, ok, _ := r.Route("/note x", "assistant/main"); ok {
		t.Error("a deactivated command still routes")
	}
}

func TestCheck(t *testing.T) {
	h := command.NewHandler(command.NewRouter(), agents{"assistant": true})
	for _, tt := range []struct {
		spec string
		want []string
	}{
		{rows["standup"], nil},
		{`{"prompt":"help me"}`, []string{"/name: /help is a chat's own command (reserved: [help compact reset quit exit])"}},
		{`{"prompt":"{{team}}","agent":"nobody"}`, []string{
			`/spec/agent: no agent "nobody"`,
			"/spec/prompt: {{team}} is not an argument of the command (its arguments: [])"}},
		{`{"prompt":"x","arguments":[{"name":"a","rest":true},{"name":"a","type":"enum"},{"name":"n","type":"number","default":"many","required":true}],"budget":{"max_wall_time":"soon"}}`, []string{
			"/spec/arguments/0/rest: only the last argument may take the rest of the line",
			`/spec/arguments/1/name: a second argument named "a"`,
			"/spec/arguments/1/values: an enum argument needs its values",
			`/spec/arguments/2/default: the default: n must be a number, not "many"`,
			"/spec/arguments/2/default: a required argument has no default",
			`/spec/budget/max_wall_time: max_wall_time: want a positive duration such as 90s or 5m, not "soon"`}},
	} {
		var got []string
		name := "x"
		if strings.HasPrefix(tt.spec, `{"prompt":"help`) {
			name = "help"
		}
		for _, e := range h.Check(context.Background(), &extension.Doc{Type: "command", Name: name, Spec: json.RawMessage(tt.spec)}) {
			got = append(got, e.String())
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: %s", tt.spec, diff)
		}
	}
}

var _ extension.Checker = (*command.Handler)(nil)

// FuzzArgs holds the argument parser to strings.Fields: string arguments
// take the line's words in order.
func FuzzArgs(f *testing.F) {
	for _, s := range []string{"a b c", "  a\t\tb ", "\u00a0x\u2003y", ""} {
		f.Add(s)
	}
	spec := &command.Spec{Prompt: "x"}
	for i := range 8 {
		spec.Arguments = append(spec.Arguments, command.Argument{Name: fmt.Sprintf("a%d", i)})
	}
	f.Fuzz(func(t *testing.T, line string) {
		if !utf8.ValidString(line) {
			return
		}
		words := strings.Fields(line)
		got, err := command.Args("x", spec, line)
		if len(words) > len(spec.Arguments) {
			if err == nil {
				t.Fatalf("%q: %d words for %d arguments accepted", line, len(words), len(spec.Arguments))
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		for i, a := range spec.Arguments {
			want := ""
			if i < len(words) {
				want = words[i]
			}
			if got[a.Name] != want {
				t.Fatalf("%q: %s = %q, want %q", line, a.Name, got[a.Name], want)
			}
		}
	})
}

func ExampleRouter_Route() {
	r := command.NewRouter()
	h := command.NewHandler(r, nil)
	h.Activate(context.Background(), &store.Extension{Type: "command", Name: "standup",
		Spec: json.RawMessage(`{"arguments":[{"name":"team","required":true}],"prompt":"Write the standup for team {{team}}."}`)})
	rt, ok, err := r.Route("/standup platform", "assistant/main")
	fmt.Println(ok, err, rt.Session, rt.Text)
	_, _, err = r.Route("/standup", "assistant/main")
	fmt.Println(err)
	// Output:
	// true <nil> assistant/main Write the standup for team platform.
	// bad command: /standup: missing argument team; usage: /standup <team>
}
