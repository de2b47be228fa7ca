package telegramfake

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestParseMarkdownV2(t *testing.T) {
	tests := []struct {
		in    string
		plain string
		ents  []Entity
		err   string
	}{
		{in: "hello", plain: "hello"},
		{in: "end.", err: `Character '.' is reserved and must be escaped with the preceding '\'`},
		{in: `end\.`, plain: "end."},
		{in: "a-b", err: `Character '-' is reserved`},
		{in: `*bold* _it_ __u__ ~s~ ||sp||`, plain: "bold it u s sp", ents: []Entity{
			{Type: "bold", Offset: 0, Length: 4}, {Type: "italic", Offset: 5, Length: 2},
			{Type: "underline", Offset: 8, Length: 1}, {Type: "strikethrough", Offset: 10, Length: 1},
			{Type: "spoiler", Offset: 12, Length: 2}}},
		{in: "*open", err: "Can't find end of Bold entity at byte offset 0"},
		{in: "*a _b* c_", err: "Can't find end of"},
		{in: "`a.b_c`", plain: "a.b_c", ents: []Entity{{Type: "code", Offset: 0, Length: 5}}},
		{in: "`a\\`b`", plain: "a`b", ents: []Entity{{Type: "code", Offset: 0, Length: 3}}},
		{in: "```go\nx := 1.0\n```", plain: "x := 1.0\n", ents: []Entity{{Type: "pre", Offset: 0, Length: 9, Language: "go"}}},
		{in: "```\nplain\n```", plain: "plain\n", ents: []Entity{{Type: "pre", Offset: 0, Length: 6}}},
		{in: `[site](https://x.test/a_(b\))`, plain: "site", ents: []Entity{{Type: "text_link", Offset: 0, Length: 4, URL: "https://x.test/a_(b)"}}},
		{in: `[site](https://x.test`, err: "Can't find end of a URL"},
		{in: "[x]", err: `Character ']' is reserved`},
		{in: ">quoted\n>more\nafter", plain: "quoted\nmore\nafter", ents: []Entity{{Type: "blockquote", Offset: 0, Length: 12}}},
		{in: "a >b", err: `Character '>' is reserved`},
		{in: "😀 *b*", plain: "😀 b", ents: []Entity{{Type: "bold", Offset: 3, Length: 1}}},
		{in: `\`, err: `Character '\' is reserved`},
		{in: "|a", err: `Character '|' is reserved`},
	}
	for _, tt := range tests {
		plain, ents, err := ParseMarkdownV2(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseMarkdownV2(%q) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseMarkdownV2(%q): %v", tt.in, err)
			continue
		}
		if plain != tt.plain {
			t.Errorf("ParseMarkdownV2(%q) = %q, want %q", tt.in, plain, tt.plain)
		}
		if diff := cmp.Diff(tt.ents, ents); diff != "" {
			t.Errorf("ParseMarkdownV2(%q) entities (-want +got):\n%s", tt.in, diff)
		}
	}
}

// escape is the MarkdownV2 escaping of plain text as the Bot API's rules
// state it: every character of code 1–126 may be escaped, so escaping
// every ASCII punctuation character keeps any text as it is.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 127 && strings.ContainsRune("_*[]()~`>#+-=|{}.!\\", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// FuzzParseMarkdownV2: the parser never panics; what it accepts has
// entities inside the text it returns; any text escaped parses back to
// itself with no entities.
func FuzzParseMarkdownV2(f *testing.F) {
	for _, s := range []string{"*a* _b_ `c` ```go\nd```", "[x](y\\))", ">q\n>r", "a.b", "||s||", "__u__", "😀*é*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		plain, ents, err := ParseMarkdownV2(s)
		if err == nil {
			n := utf16Len(plain)
			for _, e := range ents {
				if e.Offset < 0 || e.Length <= 0 || e.Offset+e.Length > n {
					t.Fatalf("ParseMarkdownV2(%q): entity %+v outside %d units", s, e, n)
				}
			}
		}
		if strings.ContainsRune(s, 0) || !utf8.ValidString(s) {
			return // NUL cannot be escaped (codes 1–126); the Bot API refuses text that is not UTF-8 first
		}
		got, ents, err := ParseMarkdownV2(escape(s))
		if err != nil || got != s || len(ents) != 0 {
			t.Fatalf("escaped %q parsed to %q %v %v", s, got, ents, err)
		}
	})
}
