package cli

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTermSafe(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain text, ünïcode, 日本語\n\tindented", "plain text, ünïcode, 日本語\n\tindented"},
		{"\x1b[31mred\x1b[0m", "^[[31mred^[[0m"},
		{"\x1b]52;c;ZXZpbA==\x07", "^[]52;c;ZXZpbA==^G"},
		{"a\rb\x00c\x7f", "a^Mb^@c^?"},
		{"\u009b31m \u202eright-to-left\u2066", `\u009B31m \u202Eright-to-left\u2066`},
		{"bad \xff byte", "bad \ufffd byte"},
	} {
		if got := termSafe(tt.in); got != tt.want {
			t.Errorf("termSafe(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// Whatever the input, the output is valid UTF-8 with no character a
// terminal obeys but line breaks and tabs; input without one is unchanged.
func FuzzTermSafe(f *testing.F) {
	for _, s := range []string{"", "hello", "\x1b[2J", "\u202e", "\xff\xfe", "a\nb\tc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := termSafe(s)
		if !utf8.ValidString(out) {
			t.Fatalf("%q: invalid UTF-8 %q", s, out)
		}
		for _, r := range out {
			if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || unsafeRune(r) {
				t.Fatalf("%q: %q holds %U", s, out, r)
			}
		}
		if !needsEscape(s) && out != s {
			t.Fatalf("%q changed to %q", s, out)
		}
		if strings.ContainsAny(s, "\n\t") && strings.Count(out, "\n") != strings.Count(s, "\n") {
			t.Fatalf("%q: line breaks changed in %q", s, out)
		}
	})
}
