package output

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/extension"
	"agentd/internal/store"
	"agentd/internal/tool"
)

type agents map[string]*agent.Definition

func (a agents) Get(id string) (*agent.Definition, bool) { d, ok := a[id]; return d, ok }

// fakeTools answers each tool by name and records the calls.
type fakeTools struct {
	specs map[string]tool.Spec
	out   map[string]tool.Result // by "name action" or name
	calls []string               // "name args"
}

func (f *fakeTools) Get(name string) (tool.Tool, bool) {
	s, ok := f.specs[name]
	if !ok {
		return nil, false
	}
	return tool.Func(s, nil), true
}

func (f *fakeTools) Run(_ context.Context, c *tool.Call, _ *tool.RunOptions) tool.Outcome {
	f.calls = append(f.calls, c.Name+" "+string(c.Args))
	var a struct{ Action string }
	_ = json.Unmarshal(c.Args, &a)
	if r, ok := f.out[c.Name+" "+a.Action]; ok {
		return tool.Outcome{Result: r}
	}
	if r, ok := f.out[c.Name]; ok {
		return tool.Outcome{Result: r}
	}
	return tool.Outcome{Result: tool.Result{Output: "unknown tool " + c.Name, IsError: true}}
}

type fakeNotifier struct {
	agents map[string]string
	sent   []string
	err    error
}

func (n *fakeNotifier) Agent(name string) (string, bool) { a, ok := n.agents[name]; return a, ok }
func (n *fakeNotifier) Notify(_ context.Context, integration, chat, text string) error {
	if n.err != nil {
		return n.err
	}
	n.sent = append(n.sent, integration+" "+chat+" "+text)
	return nil
}

func def(id string, builtin []string, deny ...string) *agent.Definition {
	return &agent.Definition{ID: id, Tools: agent.ToolPolicy{Builtin: builtin, Deny: deny}}
}

func newSet(t *testing.T) (*Set, *fakeTools, *fakeNotifier) {
	t.Helper()
	a := agents{
		"ada":    def("ada", []string{"output", "remember"}),
		"bob":    def("bob", nil),
		"cy":     def("cy", []string{"output"}, "output.message"),
		"dee":    def("dee", []string{"output"}, "output"),
		"eve":    def("eve", []string{"clock"}),
		"hander": def("hander", []string{"clock"}),
	}
	ft := &fakeTools{
		specs: map[string]tool.Spec{"ticket": {Name: "ticket"}, "risky": {Name: "risky", Risky: true}},
		out: map[string]tool.Result{
			"remember":        {Output: "stored insight 7"},
			"artifact get":    {Output: "there is no artifact named report.md", IsError: true},
			"artifact create": {Output: `{"name":"report.md","version":1}`},
			"ticket":          {Output: "ticket 12 opened"},
		},
	}
	n := &fakeNotifier{agents: map[string]string{"main": "ada", "other": "bob"}}
	return New(a, ft, &Options{Notifier: n}), ft, n
}

func typeNames(s *Set, id string) []string {
	d, _ := s.agents.Get(id)
	var out []string
	for _, t := range s.OutputTypes(d) {
		out = append(out, t.Name)
	}
	return out
}

func TestTypes(t *testing.T) {
	s, _, _ := newSet(t)
	activate(t, s, "ticket", `{"agent":"hander","schema":{"type":"object"},"handler":{"tool":"ticket"}}`)
	serves := s.Tool().Spec().Serves
	for _, tc := range []struct {
		agent  string
		want   []string
		served bool
	}{
		{"ada", []string{"message", "artifact", "memory"}, true},
		{"bob", nil, false}, // no tools.builtin: the tool is opt-in
		{"cy", []string{"artifact", "memory"}, true},
		{"dee", nil, false},                  // the output tool denied
		{"eve", nil, false},                  // tools.builtin without output
		{"hander", []string{"ticket"}, true}, // a row's type, whatever tools.builtin says
	} {
		if diff := cmp.Diff(tc.want, typeNames(s, tc.agent)); diff != "" {
			t.Errorf("%s: types (-want +got):\n%s", tc.agent, diff)
		}
		if got := serves(tc.agent); got != tc.served {
			t.Errorf("%s: served = %v, want %v", tc.agent, got, tc.served)
		}
	}
}

func call(t *testing.T, s *Set, agentID, args string) (string, error) {
	t.Helper()
	c := &tool.Call{ID: "7.call_1", Name: "output", Args: json.RawMessage(args), Agent: agentID, Session: agentID + "/main", Turn: 7}
	r, err := s.Tool().Call(context.Background(), c)
	return r.Output, err
}

func TestCall(t *testing.T) {
	for _, tc := range []struct {
		name, agent, args string
		want              string // the result, or the error's text in part
		err               bool
		calls             []string // tool calls made
		sent              []string
	}{
		{name: "memory", agent: "ada", args: `{"type":"memory","content":{"text":"Ada likes tea"}}`,
			want: "remembered: stored insight 7", calls: []string{`remember {"insight":"Ada likes tea"}`}},
		{name: "artifact new", agent: "ada", args: `{"type":"artifact","content":{"name":"report.md","kind":"markdown","content":"# R"}}`,
			want: "artifact report.md saved (version 1)", calls: []string{
				`artifact {"action":"get","name":"report.md"}`,
				`artifact {"action":"create","content":"# R","kind":"markdown","name":"report.md","title":"report.md"}`}},
		{name: "message", agent: "ada", args: `{"type":"message","content":{"connector":"main","chat":"42","text":"hi"}}`,
			want: "sent to main chat 42", sent: []string{"main 42 hi"}},
		{name: "message through another agent's connector", agent: "ada", args: `{"type":"message","content":{"connector":"other","chat":"42","text":"hi"}}`,
			want: "connector other speaks for agent bob, not for you", err: true},
		{name: "message unknown connector", agent: "ada", args: `{"type":"message","content":{"connector":"nope","chat":"42","text":"hi"}}`,
			want: `no connector named "nope"`, err: true},
		{name: "invalid content", agent: "ada", args: `{"type":"memory","content":{"txt":"x"}}`,
			want: "the content does not match the type's schema: /content", err: true},
		{name: "wrong type of field", agent: "ada", args: `{"type":"message","content":{"connector":"main","chat":42,"text":"hi"}}`,
			want: "/content/chat", err: true},
		{name: "unknown type", agent: "ada", args: `{"type":"poem","content":{}}`,
			want: `unknown type "poem"; your output types: message, artifact, memory`, err: true},
		{name: "text", agent: "ada", args: `{"type":"text","content":"hi"}`,
			want: "a text output is your reply itself", err: true},
		{name: "denied type", agent: "cy", args: `{"type":"message","content":{"connector":"main","chat":"42","text":"hi"}}`,
			want: `unknown type "message"; your output types: artifact, memory`, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ft, n := newSet(t)
			got, err := call(t, s, tc.agent, tc.args)
			if err != nil {
				got = err.Error()
			}
			if (err != nil) != tc.err || !strings.Contains(got, tc.want) {
				t.Fatalf("got %q (error %v), want %q (error %v)", got, err, tc.want, tc.err)
			}
			if tc.err && !strings.Contains(got, "unknown type") && !strings.Contains(got, "text output") && !errors.Is(err, ErrInvalid) &&
				strings.Contains(tc.name, "content") {
				t.Errorf("%v is not ErrInvalid", err)
			}
			if diff := cmp.Diff(tc.calls, ft.calls); diff != "" {
				t.Errorf("tool calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.sent, n.sent); diff != "" {
				t.Errorf("notices (-want +got):\n%s", diff)
			}
		})
	}
}

func TestArtifactUpdate(t *testing.T) {
	s, ft, _ := newSet(t)
	ft.out["artifact get"] = tool.Result{Output: `{"name":"report.md","version":1}`}
	ft.out["artifact update"] = tool.Result{Output: `{"name":"report.md","version":2}`}
	got, err := call(t, s, "ada", `{"type":"artifact","content":{"name":"report.md","kind":"markdown","content":"# R2"}}`)
	if err != nil || got != "artifact report.md saved (version 2)" {
		t.Fatalf("got %q, %v", got, err)
	}
	if want := `artifact {"action":"update","content":"# R2","kind":"markdown","name":"report.md"}`; ft.calls[1] != want {
		t.Errorf("second call %s, want %s", ft.calls[1], want)
	}
}

func activate(t *testing.T, s *Set, name, spec string) {
	t.Helper()
	h := s.Type().Handler
	if err := h.Activate(context.Background(), &store.Extension{Type: TypeName, Name: name, Spec: json.RawMessage(spec)}); err != nil {
		t.Fatal(err)
	}
}

func TestRow(t *testing.T) {
	s, ft, _ := newSet(t)
	activate(t, s, "ticket", `{"agent":"hander","description":"a support ticket",
		"schema":{"type":"object","properties":{"title":{"type":"string"},"tags":{"type":"array"}},"required":["title"]},
		"handler":{"tool":"ticket","args":{"title":"{{content.title}}","tags":"{{content.tags}}","note":"from {{content.title}}","all":"{{content}}"}}}`)
	got, err := call(t, s, "hander", `{"type":"ticket","content":{"title":"Printer","tags":["hw",1]}}`)
	if err != nil || got != "handled by ticket: ticket 12 opened" {
		t.Fatalf("got %q, %v", got, err)
	}
	want := `ticket {"all":{"tags":["hw",1],"title":"Printer"},"note":"from Printer","tags":["hw",1],"title":"Printer"}`
	if diff := cmp.Diff([]string{want}, ft.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if _, err := call(t, s, "hander", `{"type":"ticket","content":{"tags":[]}}`); err == nil || !strings.Contains(err.Error(), "/content/title: ") {
		t.Errorf("missing title: %v", err)
	}

	// A handler tool the agent's policy does not allow by default.
	activate(t, s, "risky", `{"agent":"hander","schema":{"type":"object"},"handler":{"tool":"risky"}}`)
	if _, err := call(t, s, "hander", `{"type":"risky","content":{}}`); err == nil || !strings.Contains(err.Error(), "not allowed for you") {
		t.Errorf("risky handler: %v", err)
	}
	// A reference the content does not have.
	activate(t, s, "ticket", `{"agent":"hander","schema":{"type":"object"},"handler":{"tool":"ticket","args":{"t":"{{content.title}}"}}}`)
	if _, err := call(t, s, "hander", `{"type":"ticket","content":{}}`); err == nil || !strings.Contains(err.Error(), "the content has no title") {
		t.Errorf("missing reference: %v", err)
	}
	if err := s.Type().Handler.Deactivate(context.Background(), "ticket"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"risky"}, typeNames(s, "hander")); diff != "" {
		t.Errorf("after deactivate (-want +got):\n%s", diff)
	}
}

func TestCheck(t *testing.T) {
	s, _, _ := newSet(t)
	ch := s.Type().Handler.(extension.Checker)
	for _, tc := range []struct {
		name, spec string
		want       []string // pointers
	}{
		{"ticket", `{"agent":"hander","schema":{"type":"object"},"handler":{"tool":"ticket","args":{"t":"{{content.title}}"}}}`, nil},
		{"memory", `{"agent":"hander","schema":{"type":"object"},"handler":{"tool":"ticket"}}`, []string{"/name"}},
		{"ticket", `{"agent":"nobody","schema":{"type":"object"},"handler":{"tool":"ticket"}}`, []string{"/spec/agent"}},
		{"ticket", `{"agent":"hander","schema":{"type":"nope"},"handler":{"tool":"ticket"}}`, []string{"/spec/schema"}},
		{"ticket", `{"agent":"hander","schema":{"type":"object"},"handler":{"tool":"ticket","args":{"k":"{{secret}}"}}}`, []string{"/spec/handler/args"}},
	} {
		var got []string
		for _, e := range ch.Check(context.Background(), &extension.Doc{Type: TypeName, Name: tc.name, Spec: json.RawMessage(tc.spec)}) {
			got = append(got, e.Pointer)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s %s: pointers (-want +got):\n%s", tc.name, tc.spec, diff)
		}
	}
}

func TestFill(t *testing.T) {
	content := json.RawMessage(`{"a":"x","n":2,"o":{"k":[true,"y"]}}`)
	for _, tc := range []struct{ args, want string }{
		{`{"v":"{{content.a}}"}`, `{"v":"x"}`},
		{`{"v":"{{ content.n }}"}`, `{"v":2}`},
		{`{"v":"n={{content.n}} a={{content.a}}"}`, `{"v":"n=2 a=x"}`},
		{`{"v":["{{content.o.k}}",{"w":"{{content.o}}"}]}`, `{"v":[[true,"y"],{"w":{"k":[true,"y"]}}]}`},
		{`{"v":"{{other}} {x}"}`, `{"v":"{{other}} {x}"}`},
	} {
		got, err := Fill(json.RawMessage(tc.args), content)
		if tc.args == `{"v":"{{other}} {x}"}` {
			if err == nil {
				t.Errorf("%s: no error for a reference outside the content", tc.args)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("Fill(%s) = %s, %v; want %s", tc.args, got, err, tc.want)
		}
	}
}
