package command_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/command"
	"agentd/internal/extension"
	"agentd/internal/store"
)

// agents are agents by id, each with its tags.
type agents map[string][]string

func (a agents) Get(id string) (*agent.Definition, bool) {
	if tags, ok := a[id]; ok {
		return &agent.Definition{ID: id, Tags: tags}, true
	}
	return nil, false
}

func (a agents) List() []*agent.Definition {
	var out []*agent.Definition
	for id := range a {
		d, _ := a.Get(id)
		out = append(out, d)
	}
	return out
}

// disabling are agents with the disabled ones besides.
type disabling struct {
	agents
	disabled []string
}

func (d disabling) Disabled(_ context.Context, id string) bool {
	return slices.Contains(d.disabled, id)
}

// testAgents are the agents of router's routers: a disabled one, and
// tags one agent has (keeper) and two share (notes).
var testAgents = disabling{agents{"assistant": nil, "scribe": {"notes"}, "keeper": {"memory-keeper", "notes"}}, []string{"retired"}}

// router returns a router with the rows given as name → spec (JSON).
func router(t testing.TB, rows map[string]string) *command.Router {
	t.Helper()
	r := command.NewRouterWith(testAgents)
	h := command.NewHandler(r, testAgents)
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
		// ! is / for chats that keep / for themselves.
		{line: "!standup platform", ok: true, want: command.Route{Command: "standup", Session: "assistant/main", Text: "Standup for platform over 1 days."}},
		{line: "!ask low why", ok: true, want: command.Route{Command: "ask", Session: "scribe/assistant:main", Text: "[low] why",
			Budgets: &agent.Budgets{MaxSteps: 3, MaxWallTime: agent.Duration(120e9)}}},
		{line: "!standup", ok: true, err: "bad command: !standup: missing argument team; usage: !standup <team> [days]"},
		{line: "!unknown x", ok: false},
		{line: "!reset", ok: false},
		{line: "! standup x", ok: false},
		{line: "!", ok: false},
		// @ addresses an agent by its id, in its own session keyed by the
		// caller's; the session's own agent in its own session.
		{line: "@scribe find the  notes ", ok: true, want: command.Route{Agent: "scribe", Session: "scribe/assistant:main", Text: "find the  notes "}},
		{line: "@scribe\tfind", ok: true, want: command.Route{Agent: "scribe", Session: "scribe/assistant:main", Text: "find"}},
		{line: "@assistant hello", ok: true, want: command.Route{Agent: "assistant", Session: "assistant/main", Text: "hello"}},
		{line: "@retired are you there", ok: true, want: command.Route{Agent: "retired", Session: "retired/assistant:main", Text: "are you there"}},
		{line: "@scribe", ok: true, err: "bad command: @scribe: nothing to say; usage: @scribe <text>"},
		{line: "@scribe  \t ", ok: true, err: "@scribe: nothing to say"},
		{line: "@bob said hi", ok: false},
		{line: "@scribe: hi", ok: false},
		{line: "@ scribe hi", ok: false},
		{line: "@", ok: false},
		{line: "@../x hi", ok: false},
		{line: "mail scribe@example.com", ok: false},
		{line: "scribe@example.com hi", ok: false},
		{line: " @scribe hi", ok: false},
		// # addresses the one agent with a tag.
		{line: "#memory-keeper remember the milk", ok: true, want: command.Route{Agent: "keeper", Session: "keeper/assistant:main", Text: "remember the milk"}},
		{line: "#memory-keeper", ok: true, err: "#memory-keeper: nothing to say"},
		{line: "#notes where?", ok: true, err: "bad command: #notes: the agents keeper, scribe share the tag; address one with @keeper"},
		{line: "#1 priority", ok: false},
		{line: "#Memory-keeper x", ok: false},
		{line: "#scribe x", ok: false},
		{line: "# heading", ok: false},
	} {
		got, ok, err := r.Route(t.Context(), tt.line, "assistant/main")
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
	rt, _, err := router(t, rows).Route(t.Context(), "/ask high why", "assistant/main")
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
	if _, ok, _ := r.Route(t.Context(), "/note x", "assistant/main"); ok {
		t.Error("a deactivated command still routes")
	}
}

func TestCheck(t *testing.T) {
	h := command.NewHandler(command.NewRouter(), agents{"assistant": nil})
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
	rt, ok, err := r.Route(context.Background(), "/standup platform", "assistant/main")
	fmt.Println(ok, err, rt.Session, rt.Text)
	_, _, err = r.Route(context.Background(), "/standup", "assistant/main")
	fmt.Println(err)
	// Output:
	// true <nil> assistant/main Write the standup for team platform.
	// bad command: /standup: missing argument team; usage: /standup <team>
}

// FuzzRoute: a line never panics the router; a line it does not route
// asks for nothing (the gateway then sends it byte for byte as written);
// one it routes to an agent is held to strings.Fields: the first word
// after the prefix names the agent or tag, and the text is the line after
// that word and the spaces that follow it.
func FuzzRoute(f *testing.F) {
	for _, s := range []string{"@scribe hi", "#memory-keeper x", "!standup a", "/ask low why", "@", "#", "a@b.c", "@scribe\u2003\u00a0x", "#notes y", "@retired z", "\xff@x"} {
		f.Add(s)
	}
	r := router(f, rows)
	f.Fuzz(func(t *testing.T, line string) {
		rt, ok, err := r.Route(context.Background(), line, "assistant/main")
		if !ok {
			if err != nil || !cmp.Equal(rt, command.Route{}) {
				t.Fatalf("%q: not routed, yet %+v %v", line, rt, err)
			}
			return
		}
		if err != nil || rt.Agent == "" || !utf8.ValidString(line) {
			return
		}
		if line[0] != '@' && line[0] != '#' {
			t.Fatalf("%q routed to agent %s", line, rt.Agent)
		}
		words := strings.Fields(line[1:])
		if len(words) < 2 || !strings.HasPrefix(line[1:], words[0]) {
			t.Fatalf("%q routed with words %q", line, words)
		}
		if line[0] == '@' && words[0] != rt.Agent {
			t.Fatalf("%q routed to %s", line, rt.Agent)
		}
		if want := strings.TrimLeftFunc(line[1+len(words[0]):], unicode.IsSpace); rt.Text != want {
			t.Fatalf("%q: text %q, want %q", line, rt.Text, want)
		}
	})
}

// A line that starts with @ or # goes to the agent it names, in that
// agent's own session keyed by the caller's; one that names no agent is
// not routed.
func ExampleRouter_Route_agent() {
	r := command.NewRouterWith(testAgents)
	for _, line := range []string{"@scribe find the notes", "#memory-keeper remember the milk", "@bob said hi"} {
		rt, ok, _ := r.Route(context.Background(), line, "assistant/main")
		fmt.Printf("%v %q %q\n", ok, rt.Session, rt.Text)
	}
	// Output:
	// true "scribe/assistant:main" "find the notes"
	// true "keeper/assistant:main" "remember the milk"
	// false "" ""
}

func TestTagged(t *testing.T) {
	r := router(t, nil)
	for _, tt := range []struct {
		tag  string
		want []string
	}{
		{"memory-keeper", []string{"keeper"}},
		{"notes", []string{"keeper", "scribe"}},
		{"nobody", nil},
		{"Memory-keeper", nil},
		{"#notes", nil},
		{"", nil},
	} {
		if diff := cmp.Diff(tt.want, r.Tagged(tt.tag)); diff != "" {
			t.Errorf("Tagged(%q) (-want +got):\n%s", tt.tag, diff)
		}
	}
	if got := command.NewRouter().Tagged("notes"); got != nil {
		t.Errorf("a router with no agents: Tagged = %v, want none", got)
	}
}
