package markup

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"agentd/internal/txtar"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the expected outputs in testdata")

var dialects = []Dialect{Telegram, Discord, Slack, Plain}

// TestRender renders each testdata/render archive's in.md in every dialect
// and compares with the file named after the dialect; Telegram's output is
// also read back by the MarkdownV2 checker.
func TestRender(t *testing.T) {
	files, _ := filepath.Glob("testdata/render/*.txtar")
	if len(files) == 0 {
		t.Fatal("no testdata/render archives")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			in, ok := a.Get("in.md")
			if !ok {
				t.Fatal("no in.md")
			}
			for _, d := range dialects {
				got := Render(d, in) + "\n"
				if d == Telegram {
					if _, err := checkMarkdownV2(got); err != nil {
						t.Errorf("telegram: %v\n%s", err, got)
					}
				}
				if *update {
					a.Set(string(d), got)
					continue
				}
				want, _ := a.Get(string(d))
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", d, diff)
				}
			}
			if *update {
				if err := os.WriteFile(file, a.Format(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestRenderCases pins small cases of each dialect's rules.
func TestRenderCases(t *testing.T) {
	for _, tc := range []struct {
		d        Dialect
		in, want string
	}{
		{Telegram, "a.b!", `a\.b\!`},
		{Telegram, "`a\\b`c`", "`a\\\\b`c\\`"},
		{Telegram, "[x](https://e.com/a)b)", `[x](https://e.com/a)b\)`},
		{Telegram, "[x](https://e.com/(a)b)", `[x](https://e.com/(a\)b)`},
		{Telegram, "*a* *b*", `_a_ _b_`},
		{Telegram, "*a*_b_", `_ab_`}, // two italics side by side are one: "__" is underline
		{Telegram, "**a****b**", `*ab*`},
		{Telegram, "***x***", `*_x_*`},
		{Telegram, "2*3*4 snake_case_x", `2\*3\*4 snake\_case\_x`},
		{Telegram, "# Title", `*Title*`},
		{Telegram, "3. x", `3\. x`},
		{Telegram, "**unclosed", `\*\*unclosed`},
		{Discord, "@everyone", "@\u200beveryone"},
		{Discord, "<@123>", "<@\u200b123>"},
		{Discord, "a_b *c* 1. x", `a\_b _c_ 1. x`},
		{Discord, "\\# not a heading", `\# not a heading`},
		{Discord, "https://e.com/a_b", "https://e.com/a_b"},
		{Slack, "**b** _i_ ~~s~~ a<b & c>d", "*b* _i_ ~s~ a&lt;b &amp; c&gt;d"},
		{Slack, "[t|x](https://e.com/?a=1&b=|)", "<https://e.com/?a=1&amp;b=%7C|t|x>"},
		{Plain, "**b** [t](https://e.com)", "b t (https://e.com)"},
		{Plain, "```\ncode", "code"},
		{Plain, "", ""},
		{Plain, "a\xffb", "a\uFFFDb"},
	} {
		if got := Render(tc.d, tc.in); got != tc.want {
			t.Errorf("Render(%s, %q) = %q, want %q", tc.d, tc.in, got, tc.want)
		}
	}
}

// TestLen checks Telegram's count: the text after entities, in UTF-16.
func TestLen(t *testing.T) {
	for _, tc := range []struct {
		d    Dialect
		in   string
		u    Unit
		want int
	}{
		{Telegram, "**ab** c.", UTF16, 5},
		{Telegram, "😀", UTF16, 2},
		{Telegram, "😀", Runes, 1},
		{Discord, "**ab**", Runes, 6},
		{Slack, "a<b", Runes, 6},
	} {
		if got := Len(tc.d, tc.in, tc.u); got != tc.want {
			t.Errorf("Len(%s, %q) = %d, want %d", tc.d, tc.in, got, tc.want)
		}
	}
}

// words are the runs of letters and digits of s.
func words(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// textWords are the words of md a reader should see: a code fence's
// language is not one.
func textWords(md string) map[string]bool {
	w := map[string]bool{}
	for _, l := range strings.Split(strings.ToValidUTF8(md, "\uFFFD"), "\n") {
		rest := strings.TrimLeft(l, " \t>")
		for strings.TrimLeft(rest, " \t>") != rest {
			rest = strings.TrimLeft(rest, " \t>")
		}
		if f, ok := fenceOpen(rest); ok {
			l = strings.Replace(l, f.lang, "", 1)
			if i := strings.IndexAny(rest, "`~"); i >= 0 {
				l = rest[:i+f.n]
			}
		}
		for _, x := range words(l) {
			w[x] = true
		}
	}
	return w
}

func FuzzRender(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, md string) {
		for _, d := range dialects {
			out := Render(d, md)
			if !utf8.ValidString(out) {
				t.Fatalf("%s: not UTF-8: %q", d, out)
			}
		}
		tg := Render(Telegram, md)
		text, err := checkMarkdownV2(tg)
		if err != nil {
			t.Fatalf("telegram: %v\nin:  %q\nout: %q", err, md, tg)
		}
		if n := Len(Telegram, md, UTF16); count(text, UTF16) > n {
			t.Fatalf("Len = %d, but Telegram counts %d: %q", n, count(text, UTF16), tg)
		}
		// Slack: every '<' is one of the links the renderer wrote; text
		// cannot make <!channel>, <@U…> or a link of its own.
		sl := Render(Slack, md)
		for _, r := range strings.Split(sl, "<")[1:] {
			if !strings.HasPrefix(r, "http://") && !strings.HasPrefix(r, "https://") && !strings.HasPrefix(r, "mailto:") {
				t.Fatalf("slack: a '<' the renderer did not write: %q", sl)
			}
		}
		// Discord: text pings no one (code and URLs are not text).
		if !strings.ContainsAny(md, "`~") && !strings.Contains(md, "http") {
			dc := Render(Discord, md)
			for _, m := range []string{"@everyone", "@here", "<@0", "<@1", "<@2", "<@3", "<@4", "<@5", "<@6", "<@7", "<@8", "<@9", "<@!", "<@&"} {
				if strings.Contains(dc, m) {
					t.Fatalf("discord: %q pings: %q", m, dc)
				}
			}
		}
		plain := Render(Plain, md)
		for w := range textWords(md) {
			if !strings.Contains(plain, w) {
				t.Fatalf("plain lost %q\nin:  %q\nout: %q", w, md, Render(Plain, md))
			}
		}
	})
}

// seed adds the golden inputs and a few sharp cases to a fuzz corpus.
func seed(f *testing.F) {
	files, _ := filepath.Glob("testdata/render/*.txtar")
	for _, file := range files {
		a, err := txtar.ParseFile(file)
		if err != nil {
			f.Fatal(err)
		}
		in, _ := a.Get("in.md")
		f.Add(in)
	}
	for _, s := range []string{"", "*", "**", "_a__b_", "```", "> ```\n", "[a](b", "![", "\\", "`", "|a|\n|-|", "1.", "- ", "***x***", "<http://a>", "\xff"} {
		f.Add(s)
	}
}

func BenchmarkRenderMarkdownV2(b *testing.B) {
	md := benchReply()
	b.SetBytes(int64(len(md)))
	b.ReportAllocs()
	for b.Loop() {
		Render(Telegram, md)
	}
}

// benchReply is a 2,000-character reply of the kind models write.
func benchReply() string {
	para := "Here is **what I found** in `config.yaml`: the _timeout_ is 30s, see [the docs](https://example.com/docs/timeouts). "
	var b strings.Builder
	b.WriteString("## Summary\n\n")
	for b.Len() < 1200 {
		b.WriteString(para)
	}
	b.WriteString("\n\n- first point\n- second point with `code`\n1. step one\n2. step two\n\n")
	b.WriteString("```go\nfunc main() {\n\tfmt.Println(\"hello, world\")\n}\n```\n\n")
	for b.Len() < 2000 {
		b.WriteString("More text (with parens) and punctuation! ")
	}
	return b.String()[:2000]
}
