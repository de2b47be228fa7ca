// Package readable turns an HTML page into Markdown of its main content,
// for a model to read: the title, and the block of the page that holds
// most of its prose (an article, a main, or the densest division), with
// its headings, paragraphs, lists, links, code blocks and tables. What
// is not content (scripts, styles, navigation, headers, footers, sidebars,
// forms) is dropped, never shown as text.
package readable

import (
	"bytes"
	"io"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Page is the readable form of an HTML page.
type Page struct {
	Title    string
	Markdown string
}

// maxDepth bounds how deep the renderer follows nested elements; deeper
// content is left out rather than risk the stack on a hostile page.
const maxDepth = 256

// Convert reads an HTML document and returns its title and main content
// as Markdown. base resolves relative links (nil: links kept as written).
// The output is valid UTF-8 whatever the input.
func Convert(r io.Reader, base *url.URL) (Page, error) {
	doc, err := html.Parse(r)
	if err != nil {
		return Page{}, err
	}
	title := findTitle(doc)
	base = baseOf(doc, base)
	prune(doc)
	main := mainBlock(doc)
	rd := &renderer{base: base}
	md := tidy(rd.blocks(main, 0))
	if title == "" {
		title = firstHeading(main)
	}
	return Page{Title: clean(title), Markdown: md}, nil
}

// ConvertString is Convert over a string.
func ConvertString(s string, base *url.URL) (Page, error) {
	return Convert(strings.NewReader(s), base)
}

// dropped are the elements that are never content.
var dropped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Nav: true, atom.Header: true, atom.Footer: true, atom.Aside: true,
	atom.Form: true, atom.Button: true, atom.Select: true, atom.Input: true,
	atom.Textarea: true, atom.Iframe: true, atom.Object: true, atom.Embed: true,
	atom.Svg: true, atom.Math: true, atom.Canvas: true, atom.Dialog: true,
	atom.Head: true, atom.Link: true, atom.Meta: true,
}

// skipRoles are ARIA roles of blocks that are not content.
var skipRoles = map[string]bool{
	"navigation": true, "banner": true, "contentinfo": true, "complementary": true,
	"search": true, "dialog": true, "alert": true, "menu": true, "menubar": true,
}

// isDropped reports whether n is an element the page would be read without.
func isDropped(n *html.Node) bool {
	if n.Type == html.CommentNode || n.Type == html.DoctypeNode {
		return true
	}
	if n.Type != html.ElementNode {
		return false
	}
	if dropped[n.DataAtom] || (n.DataAtom == 0 && n.Namespace != "") {
		return true
	}
	if n.Namespace == "svg" || n.Namespace == "math" {
		return true
	}
	for _, a := range n.Attr {
		switch a.Key {
		case "hidden":
			return true
		case "aria-hidden":
			if a.Val == "true" {
				return true
			}
		case "role":
			if skipRoles[strings.ToLower(a.Val)] {
				return true
			}
		}
	}
	return false
}

// prune removes every dropped element from the tree, iteratively (a deep
// tree does not grow the stack).
func prune(doc *html.Node) {
	stack := []*html.Node{doc}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for c := n.FirstChild; c != nil; {
			next := c.NextSibling
			if isDropped(c) {
				n.RemoveChild(c)
			} else {
				stack = append(stack, c)
			}
			c = next
		}
	}
}

// findTitle returns the text of the document's <title>.
func findTitle(doc *html.Node) string {
	var title string
	walk(doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.DataAtom == atom.Title {
			title = textOf(n)
			return false
		}
		return title == ""
	})
	return title
}

// baseOf returns the page's <base href> resolved against base, or base
// when the page has none: relative links are relative to it.
func baseOf(doc *html.Node, base *url.URL) *url.URL {
	b := find(doc, atom.Base)
	if b == nil {
		return base
	}
	u, err := url.Parse(strings.TrimSpace(attr(b, "href")))
	if err != nil || attr(b, "href") == "" {
		return base
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	if u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "" {
		return base
	}
	return u
}

// firstHeading returns the text of the first h1 (or h2) under n.
func firstHeading(n *html.Node) string {
	var h string
	walk(n, func(c *html.Node) bool {
		if c.Type == html.ElementNode && (c.DataAtom == atom.H1 || c.DataAtom == atom.H2) {
			h = textOf(c)
		}
		return h == ""
	})
	return h
}

// walk visits n and its descendants depth first, iteratively; when visit
// returns false for a node, its children are not visited.
func walk(n *html.Node, visit func(*html.Node) bool) {
	stack := []*html.Node{n}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !visit(c) {
			continue
		}
		for k := c.LastChild; k != nil; k = k.PrevSibling {
			stack = append(stack, k)
		}
	}
}

// textOf returns the text under n, whitespace collapsed.
func textOf(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) bool {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
			b.WriteByte(' ')
		}
		return true
	})
	return clean(b.String())
}

// isSpace reports whether r is whitespace as a page's text flows (the
// no-break space included).
func isSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\r', '\n', '\f', '\v', '\u00a0':
		return true
	}
	return false
}

// collapse replaces each run of whitespace in s with one space.
func collapse(s string) string {
	i := strings.IndexFunc(s, isSpace)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	space := false
	for _, r := range s[i:] {
		if isSpace(r) {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	if space {
		b.WriteByte(' ')
	}
	return b.String()
}

// clean collapses whitespace and trims.
func clean(s string) string {
	return strings.TrimFunc(collapse(strings.ToValidUTF8(s, "\uFFFD")), isSpace)
}

// textLen is the length of s without its whitespace.
func textLen(s string) int {
	n := 0
	for _, r := range s {
		if !isSpace(r) {
			n++
		}
	}
	return n
}

// tidy makes the rendered Markdown valid UTF-8, trims trailing spaces of
// lines and keeps at most one blank line between blocks.
func tidy(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	lines := strings.Split(s, "\n")
	var b bytes.Buffer
	blank := 0
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			blank++
			continue
		}
		if b.Len() > 0 {
			if blank > 0 {
				b.WriteString("\n\n")
			} else {
				b.WriteByte('\n')
			}
		}
		blank = 0
		b.WriteString(l)
	}
	return b.String()
}
