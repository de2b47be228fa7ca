package secret

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Part
		err  string
	}{
		{in: "", want: nil},
		{in: "plain", want: []Part{{Text: "plain"}}},
		{in: "Bearer ${secret:GITHUB_TOKEN}", want: []Part{{Text: "Bearer "}, {Ref: Ref{KindSecret, "GITHUB_TOKEN"}}}},
		{in: "${env:A}${env:_b1}x", want: []Part{{Ref: Ref{KindEnv, "A"}}, {Ref: Ref{KindEnv, "_b1"}}, {Text: "x"}}},
		{in: "cost $5, $${env:X} is literal", want: []Part{{Text: "cost $5, ${env:X} is literal"}}},
		{in: "${file:X}", err: "want ${env:NAME} or ${secret:NAME}"},
		{in: "${X}", err: "want ${env:NAME} or ${secret:NAME}"},
		{in: "${env:1X}", err: "a name is letters"},
		{in: "${env:}", err: "a name is letters"},
		{in: "${env:A-B}", err: "a name is letters"},
		{in: "x ${secret:A", err: "is not closed"},
	} {
		got, err := Parse(tc.in)
		if tc.err != "" {
			if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%q) = %v, want an error with %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", tc.in, d)
		}
	}
}

// refRE is what a reference is, for checking Parse against the standard
// library's regular expressions.
var refRE = regexp.MustCompile(`\$\{(env|secret):([A-Za-z_][A-Za-z0-9_]{0,127})\}`)

// FuzzParse checks Parse against regexp on texts without "$${": the
// references it finds are refRE's matches, it accepts exactly the texts
// where no "${" is left once those are taken out, and joining its parts
// gives the text back.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "a", "Bearer ${secret:T}", "${env:A}${env:B}", "${", "${env:", "$${env:A}", "${x:y}", "$$", "}${env:A}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		parts, err := Parse(s)
		if strings.Contains(s, "$${") {
			return // the escape: checked by the table test
		}
		left := refRE.ReplaceAllString(s, "")
		if wantOK := !strings.Contains(left, "${"); (err == nil) != wantOK {
			t.Fatalf("Parse(%q): err %v, want ok %v", s, err, wantOK)
		}
		if err != nil {
			return
		}
		var refs [][]string
		var b strings.Builder
		for _, p := range parts {
			if p.Ref.Kind == "" {
				b.WriteString(p.Text)
				continue
			}
			refs = append(refs, []string{p.Ref.String(), p.Ref.Kind, p.Ref.Name})
			b.WriteString(p.Ref.String())
		}
		if b.String() != s {
			t.Fatalf("Parse(%q) joins back to %q", s, b.String())
		}
		if d := cmp.Diff(refRE.FindAllStringSubmatch(s, -1), refs); d != "" {
			t.Fatalf("Parse(%q) references (-regexp +Parse):\n%s", s, d)
		}
	})
}
