package readable_test

import (
	"flag"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"

	"agentd/internal/readable"
	"agentd/internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/*.txtar")

// TestGolden converts the real-shaped pages of testdata and compares the
// title and Markdown with the archive's want.md (its first line is the
// title). No text of a script reaches the output.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			a, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			page, _ := a.Get("page.html")
			raw, _ := a.Get("url")
			base, err := url.Parse(strings.TrimSpace(raw))
			if err != nil {
				t.Fatal(err)
			}
			p, err := readable.ConvertString(page, base)
			if err != nil {
				t.Fatal(err)
			}
			got := "title: " + p.Title + "\n\n" + p.Markdown + "\n"
			if strings.Contains(got, "CANARY") {
				t.Errorf("script text in the output:\n%s", got)
			}
			if *update {
				a.Set("want.md", got)
				if err := os.WriteFile(file, a.Format(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, _ := a.Get("want.md")
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("markdown (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCases(t *testing.T) {
	base, _ := url.Parse("https://example.com/dir/page")
	tests := []struct {
		name, in, title, md string
	}{
		{"empty", "", "", ""},
		{"title only", "<title> A  B </title>", "A B", ""},
		{"h1 as title", "<body><h1>Head</h1><p>text</p></body>", "Head", "# Head\n\ntext"},
		{"relative link", `<p><a href="../x?a=b">x</a> and <a href="#top">top</a> and <a href="javascript:alert(1)">js</a></p>`, "",
			"[x](https://example.com/x?a=b) and top and js"},
		{"br", "<p>a<br>b</p>", "", "a\nb"},
		{"base href", `<head><base href="/docs/v2/"></head><p><a href="intro">i</a></p>`, "", "[i](https://example.com/docs/v2/intro)"},
		{"base javascript", `<base href="javascript:x"><p><a href="intro">i</a></p>`, "", "[i](https://example.com/dir/intro)"},
		{"nested list", "<ul><li>a<ul><li>b</li></ul></li><li>c</li></ul>", "", "- a\n  - b\n- c"},
		{"ordered", "<ol><li>one</li><li>two</li></ol>", "", "1. one\n2. two"},
		{"inline code with backtick", "<p><code>a`b</code></p>", "", "`` a`b ``"},
		{"table pipes", "<table><tr><td>a|b</td><td>c</td></tr><tr><td>d</td></tr></table>", "",
			"| a\\|b | c |\n| --- | --- |\n| d |  |"},
		{"hidden", `<p hidden>no</p><div aria-hidden="true">no</div><p>yes</p>`, "", "yes"},
		{"svg", `<p>a<svg><text>no</text></svg>b</p>`, "", "ab"},
		{"invalid utf8", "<p>a\xffb</p>", "", "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := readable.ConvertString(tt.in, base)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(readable.Page{Title: tt.title, Markdown: tt.md}, p); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeep converts a page nested deeper than the renderer follows, and
// one deeper than the parser reads (an error, not a crash).
func TestDeep(t *testing.T) {
	in := strings.Repeat("<div>", 500) + "deep" + strings.Repeat("</div>", 500)
	if _, err := readable.ConvertString(in, nil); err != nil {
		t.Fatal(err)
	}
	in = strings.Repeat("<div>", 100000) + "deep"
	if _, err := readable.ConvertString(in, nil); err == nil {
		t.Fatal("a page nested 100000 deep was read")
	}
}

// FuzzConvert: Convert never panics, its output is valid UTF-8, and the
// text of a script element (as the x/net/html parser reads the page)
// never reaches it.
func FuzzConvert(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txtar")
	for _, file := range files {
		if a, err := txtar.ParseFile(file); err == nil {
			page, _ := a.Get("page.html")
			f.Add(page)
		}
	}
	f.Add("<p>a<script>b</script>c</p>")
	f.Add("<table><tr><td><pre>x</pre></td></tr></table>")
	const canary = "ZQXJSCRIPTTEXT"
	f.Fuzz(func(t *testing.T, in string) {
		if strings.Contains(strings.ToUpper(in), canary[:4]) {
			return
		}
		page := in + "<script>" + canary + "</script>"
		p, err := readable.ConvertString(page, nil)
		if err != nil {
			return
		}
		if !utf8.ValidString(p.Title) || !utf8.ValidString(p.Markdown) {
			t.Fatalf("invalid UTF-8 out: %q %q", p.Title, p.Markdown)
		}
		if inScriptOnly(t, page, canary) && strings.Contains(p.Title+p.Markdown, canary) {
			t.Fatalf("script text in the output: %q", p.Markdown)
		}
	})
}

// inScriptOnly reports whether every text node holding s is inside a
// script element, as the standard parser reads the page.
func inScriptOnly(t *testing.T, page, s string) bool {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Skip()
	}
	only, found := true, false
	var visit func(n *html.Node, inScript bool, depth int)
	visit = func(n *html.Node, inScript bool, depth int) {
		if depth > 1000 {
			only = false
			return
		}
		if n.Type == html.ElementNode && n.Data == "script" {
			inScript = true
		}
		if (n.Type == html.TextNode || n.Type == html.CommentNode || n.Type == html.ElementNode) && strings.Contains(n.Data, s) {
			found = true
			only = only && inScript && n.Type == html.TextNode
		}
		for _, a := range n.Attr {
			if strings.Contains(a.Val, s) {
				only = false
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			visit(c, inScript, depth+1)
		}
	}
	visit(doc, false, 0)
	return found && only
}
