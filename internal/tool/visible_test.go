package tool

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestVisible(t *testing.T) {
	for in, want := range map[string]string{
		"README.md":      "README.md",
		"a b/ü ∑.txt":    "a b/ü ∑.txt",
		`back\slash"q`:   `back\slash"q`,
		"a\nb":           `"a\nb"`,
		"tab\there":      `"tab\there"`,
		"x\x1b[2K\r":     `"x\x1b[2K\r"`,
		"del\x7f":        `"del\x7f"`,
		"c1\u0085":       `"c1\u0085"`,
		"txt.\u202eexe":  `"txt.\u202eexe"`,
		"iso\u2066late":  `"iso\u2066late"`,
		"bad\xff":        `"bad\xff"`,
		"zero\u200bwide": "zero\u200bwide", // not a control: shown as it is
	} {
		if got := Visible(in); got != want {
			t.Errorf("Visible(%q) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"print(1)\n\tx\n":  "print(1)\n\tx\n",
		"a\r\nb\x1b[2J\n":  `a\r` + "\n" + `b\x1b[2J` + "\n",
		"\u202eevil\xfe\n": `\u202eevil\xfe` + "\n",
	} {
		if got := VisibleLines(in); got != want {
			t.Errorf("VisibleLines(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzVisibleLines checks VisibleLines against strconv: what it shows
// holds no control character but line breaks and tabs, and reads back as
// Go reads a quoted string.
func FuzzVisibleLines(f *testing.F) {
	for _, s := range []string{"", "a\nb", "\x1b[2K\r", "\u202e\u0085\x7f", "\t\x00\x01", "é\u2069"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := VisibleLines(s)
		if strings.IndexFunc(got, func(r rune) bool { return r != '\n' && r != '\t' && IsControl(r) }) >= 0 || !utf8.ValidString(got) {
			t.Fatalf("VisibleLines(%q) = %q holds a control character", s, got)
		}
		if strings.ContainsAny(s, `\"`) {
			return // a backslash or a quote is shown as it is: not read back
		}
		back, err := strconv.Unquote(`"` + strings.NewReplacer("\n", `\n`, "\t", `\t`).Replace(got) + `"`)
		if err != nil || back != s {
			t.Fatalf("VisibleLines(%q) = %q reads back as %q (%v)", s, got, back, err)
		}
	})
}
