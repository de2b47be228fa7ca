package tool_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/tool"
)

func TestPolicyDecide(t *testing.T) {
	calc := tool.Spec{Name: "calculator"}
	fetch := tool.Spec{Name: "http_fetch", Risky: true}
	shell := tool.Spec{Name: "shell_exec", Risky: true}
	wipe := tool.Spec{Name: "memory__delete_entities", Server: "memory", Destructive: true}
	mkAgent := tool.Spec{Name: "create_permanent_agent", Risky: true, AskFirst: true, Reach: "makes an agent that outlives the turn"}
	askFirst := tool.Spec{Name: "publish", AskFirst: true}
	startAgent := tool.Spec{Name: "start_background_agent", Risky: true, Reach: "starts and messages other agents"}
	perCall := "needs approval for each call unless the policy's allow list names it exactly"

	allow := tool.Decision{Verdict: tool.Allow}
	tests := []struct {
		name   string
		policy tool.Policy
		spec   tool.Spec
		want   tool.Decision
	}{
		{"empty policy allows a safe tool", tool.Policy{}, calc, allow},
		{"empty policy asks about a destructive tool", tool.Policy{}, wipe,
			tool.Decision{Verdict: tool.Ask, Reason: "tool memory__delete_entities may destroy data (its server says so), and the policy does not allow it by name", Default: true}},
		{"allow names a destructive tool", tool.Policy{Allow: []string{"memory__*"}}, wipe, allow},
		{"deny wins over destructive", tool.Policy{Deny: []string{"*__delete_*"}}, wipe,
			tool.Decision{Verdict: tool.Deny, Reason: `tool memory__delete_entities is denied by the pattern "*__delete_*"`}},
		{"empty policy denies a risky tool", tool.Policy{}, fetch,
			tool.Decision{Verdict: tool.Deny, Reason: "tool http_fetch reaches the network, runs commands or writes files, and the policy does not allow it by name", Default: true}},
		{"allow list names a risky tool", tool.Policy{Allow: []string{"http_fetch"}}, fetch, allow},
		{"allow glob names a risky tool", tool.Policy{Allow: []string{"http_*"}}, fetch, allow},
		{"bare star names risky tools too", tool.Policy{Allow: []string{"*"}}, shell, allow},
		{"allow list leaves out a safe tool", tool.Policy{Allow: []string{"http_fetch"}}, calc,
			tool.Decision{Verdict: tool.Deny, Reason: "tool calculator is not in the allow list"}},
		{"allow list leaves out a risky tool", tool.Policy{Allow: []string{"calc*"}}, fetch,
			tool.Decision{Verdict: tool.Deny, Reason: "tool http_fetch is not in the allow list"}},
		{"deny wins over allow", tool.Policy{Allow: []string{"*"}, Deny: []string{"shell_*"}}, shell,
			tool.Decision{Verdict: tool.Deny, Reason: `tool shell_exec is denied by the pattern "shell_*"`}},
		{"deny wins over ask", tool.Policy{Ask: []string{"*"}, Deny: []string{"calculator"}}, calc,
			tool.Decision{Verdict: tool.Deny, Reason: `tool calculator is denied by the pattern "calculator"`}},
		{"deny of a safe tool with empty allow", tool.Policy{Deny: []string{"calc?lator"}}, calc,
			tool.Decision{Verdict: tool.Deny, Reason: `tool calculator is denied by the pattern "calc?lator"`}},
		{"deny that does not match", tool.Policy{Deny: []string{"shell_*"}}, calc, allow},
		{"ask wins over allow", tool.Policy{Allow: []string{"*"}, Ask: []string{"http_*"}}, fetch,
			tool.Decision{Verdict: tool.Ask, Reason: `tool http_fetch needs approval (pattern "http_*")`}},
		{"ask names a risky tool", tool.Policy{Ask: []string{"shell_exec"}}, shell,
			tool.Decision{Verdict: tool.Ask, Reason: `tool shell_exec needs approval (pattern "shell_exec")`}},
		{"ask names a tool the allow list leaves out", tool.Policy{Allow: []string{"x"}, Ask: []string{"calculator"}}, calc,
			tool.Decision{Verdict: tool.Ask, Reason: `tool calculator needs approval (pattern "calculator")`}},
		{"ask of one tool leaves a risky one off", tool.Policy{Ask: []string{"shell_exec"}}, fetch,
			tool.Decision{Verdict: tool.Deny, Reason: "tool http_fetch reaches the network, runs commands or writes files, and the policy does not allow it by name", Default: true}},
		{"ask-first tool named exactly is allowed", tool.Policy{Allow: []string{"create_permanent_agent"}}, mkAgent, allow},
		{"ask-first tool allowed by a glob asks", tool.Policy{Allow: []string{"create_*"}}, mkAgent,
			tool.Decision{Verdict: tool.Ask, Reason: "tool create_permanent_agent " + perCall, Default: true}},
		{"ask-first tool allowed by a bare star asks", tool.Policy{Allow: []string{"*"}}, mkAgent,
			tool.Decision{Verdict: tool.Ask, Reason: "tool create_permanent_agent " + perCall, Default: true}},
		{"ask-first tool granted asks", tool.Policy{Grant: []string{"create_permanent_agent"}}, mkAgent,
			tool.Decision{Verdict: tool.Ask, Reason: "tool create_permanent_agent " + perCall, Default: true}},
		{"ask-first risky tool not named is off, with its reach", tool.Policy{}, mkAgent,
			tool.Decision{Verdict: tool.Deny, Reason: "tool create_permanent_agent makes an agent that outlives the turn, and the policy does not allow it by name", Default: true}},
		{"ask-first safe tool not named asks", tool.Policy{}, askFirst, tool.Decision{Verdict: tool.Ask, Reason: "tool publish " + perCall, Default: true}},
		{"ask-first tool left out of the allow list", tool.Policy{Allow: []string{"x"}}, askFirst,
			tool.Decision{Verdict: tool.Deny, Reason: "tool publish is not in the allow list"}},
		{"ask-first tool denied", tool.Policy{Allow: []string{"create_permanent_agent"}, Deny: []string{"create_*"}}, mkAgent,
			tool.Decision{Verdict: tool.Deny, Reason: `tool create_permanent_agent is denied by the pattern "create_*"`}},
		{"a risky tool's reach in its reason", tool.Policy{}, startAgent,
			tool.Decision{Verdict: tool.Deny, Reason: "tool start_background_agent starts and messages other agents, and the policy does not allow it by name", Default: true}},
		{"a risky tool with a reach allowed by a glob", tool.Policy{Allow: []string{"*_agent"}}, startAgent, allow},
		{"character class", tool.Policy{Allow: []string{"[a-h]*"}}, calc, allow},
		{"bad deny pattern fails closed", tool.Policy{Deny: []string{"["}}, calc,
			tool.Decision{Verdict: tool.Deny, Reason: `tool policy has an invalid deny pattern "["`}},
		{"bad allow pattern matches nothing", tool.Policy{Allow: []string{"[", "http_fetch"}}, calc,
			tool.Decision{Verdict: tool.Deny, Reason: "tool calculator is not in the allow list"}},
		{"bad ask pattern matches nothing", tool.Policy{Ask: []string{"calc["}}, calc, allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.policy.Decide(tt.spec)); diff != "" {
				t.Errorf("Decide(%s) (-want +got):\n%s", tt.spec.Name, diff)
			}
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	if err := (tool.Policy{Allow: []string{"*", "a?c", "[a-z]*"}, Deny: []string{`x\*`}}).Validate(); err != nil {
		t.Errorf("valid policy: %v", err)
	}
	err := tool.Policy{Allow: []string{"ok", "[z-"}, Deny: []string{`trailing\`}, Ask: []string{"[]"}}.Validate()
	if !errors.Is(err, tool.ErrBadPattern) {
		t.Fatalf("Validate: got %v, want ErrBadPattern", err)
	}
	want := []string{
		`tool policy: allow: invalid tool pattern "[z-"`,
		`tool policy: deny: invalid tool pattern "trailing\\"`,
		`tool policy: ask: invalid tool pattern "[]"`,
	}
	if diff := cmp.Diff(want, strings.Split(err.Error(), "\n")); diff != "" {
		t.Errorf("Validate (-want +got):\n%s", diff)
	}
}

func TestVerdictString(t *testing.T) {
	got := []string{tool.Deny.String(), tool.Allow.String(), tool.Ask.String(), tool.Verdict(9).String()}
	if diff := cmp.Diff([]string{"deny", "allow", "ask", "Verdict(9)"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestVisible(t *testing.T) {
	r := tool.NewRegistry(nil)
	for _, s := range []tool.Spec{
		{Name: "shell_exec", Risky: true},
		{Name: "calculator"},
		{Name: "http_fetch", Risky: true},
		{Name: "clock"},
		{Name: "memory_write"},
	} {
		if err := r.Register(tool.Func(s, nil)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		policy tool.Policy
		want   []string
	}{
		{"default: safe tools", tool.Policy{}, []string{"calculator", "clock", "memory_write"}},
		{"everything", tool.Policy{Allow: []string{"*"}}, []string{"calculator", "clock", "http_fetch", "memory_write", "shell_exec"}},
		{"ask counts", tool.Policy{Ask: []string{"shell_exec"}, Deny: []string{"memory_*"}}, []string{"calculator", "clock", "shell_exec"}},
		{"allow list", tool.Policy{Allow: []string{"c*", "http_fetch"}}, []string{"calculator", "clock", "http_fetch"}},
		{"deny all", tool.Policy{Deny: []string{"*"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, specNames(r.Visible(tt.policy))); diff != "" {
				t.Errorf("Visible (-want +got):\n%s", diff)
			}
		})
	}
}

func BenchmarkPolicyDecide(b *testing.B) {
	p := tool.Policy{
		Allow: []string{"calculator", "clock", "memory_*", "http_fetch"},
		Deny:  []string{"shell_*", "fs_write"},
		Ask:   []string{"email_*", "payments_*"},
	}
	specs := []tool.Spec{{Name: "memory_search"}, {Name: "http_fetch", Risky: true}, {Name: "shell_exec", Risky: true}, {Name: "unknown"}}
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range specs {
			p.Decide(s)
		}
	}
}
