package prompt_test

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/prompt"
)

func vars(m map[string]string) func(string) (string, bool) {
	return func(n string) (string, bool) { v, ok := m[n]; return v, ok }
}

func TestFill(t *testing.T) {
	m := map[string]string{"team": "platform", "payload.repo": "agentd", "x": "{{team}}"}
	for _, tt := range []struct{ in, want string }{
		{"standup for {{team}}", "standup for platform"},
		{"{{ team }} and {{team}}", "platform and platform"},
		{"{{payload.repo}}!", "agentd!"},
		{"{{unknown}} stays", "{{unknown}} stays"},
		{"{{x}}", "{{team}}"}, // a value is not filled again
		{"{{{team}}}", "{platform}"},
		{"{{ 1x }} {{a..b}} {{}} {{team", "{{ 1x }} {{a..b}} {{}} {{team"},
		{"no refs", "no refs"},
		{"", ""},
	} {
		if got := prompt.Fill(tt.in, vars(m)); got != tt.want {
			t.Errorf("Fill(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRefs(t *testing.T) {
	got := prompt.Refs("{{b}} {{ a }} {{b}} {{payload.k}} {{not a ref}}")
	if diff := cmp.Diff([]string{"b", "a", "payload.k"}, got); diff != "" {
		t.Error(diff)
	}
}

// refRE is what a reference is, written as a regular expression.
var refRE = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\}\}`)

// FuzzRefs holds the scanner to the regular expression: the same
// references, in the same order.
func FuzzRefs(f *testing.F) {
	for _, s := range []string{"{{a}}", "{{{a}}}", "{{ a.b }}x{{c}", "{{a}b}}", "{{{{x}}", "{{\u00a0x}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want []string
		seen := map[string]bool{}
		for _, m := range refRE.FindAllStringSubmatch(s, -1) {
			if len(m[1]) <= 64 && !seen[m[1]] {
				seen[m[1]] = true
				want = append(want, m[1])
			}
		}
		if diff := cmp.Diff(want, prompt.Refs(s)); diff != "" {
			t.Fatalf("Refs(%q): %s", s, diff)
		}
	})
}

func ExampleFill() {
	text := prompt.Fill("Write the standup for team {{team}}.", func(name string) (string, bool) {
		return map[string]string{"team": "platform"}[name], name == "team"
	})
	fmt.Println(text)
	// Output: Write the standup for team platform.
}
