package readable

import (
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// renderer writes a subtree as Markdown.
type renderer struct {
	base *url.URL
}

// blockElems are the elements that start a block of their own; everything
// else flows inside a paragraph.
var blockElems = map[atom.Atom]bool{
	atom.Address: true, atom.Article: true, atom.Blockquote: true, atom.Details: true,
	atom.Dd: true, atom.Div: true, atom.Dl: true, atom.Dt: true, atom.Fieldset: true,
	atom.Figcaption: true, atom.Figure: true, atom.H1: true, atom.H2: true, atom.H3: true,
	atom.H4: true, atom.H5: true, atom.H6: true, atom.Hgroup: true, atom.Hr: true,
	atom.Li: true, atom.Main: true, atom.Ol: true, atom.P: true, atom.Pre: true,
	atom.Section: true, atom.Table: true, atom.Ul: true, atom.Summary: true,
	atom.Body: true, atom.Html: true, atom.Center: true, atom.Caption: true,
	atom.Tr: true, atom.Td: true, atom.Th: true, atom.Thead: true, atom.Tbody: true, atom.Tfoot: true,
}

func isBlock(n *html.Node) bool {
	return n.Type == html.ElementNode && blockElems[n.DataAtom]
}

// blocks renders n's children: runs of inline content become paragraphs,
// block children render as their kind; blocks are separated by a blank
// line.
func (r *renderer) blocks(n *html.Node, depth int) string {
	if depth > maxDepth {
		return ""
	}
	var out []string
	var para strings.Builder
	flush := func() {
		if p := paragraph(para.String()); p != "" {
			out = append(out, p)
		}
		para.Reset()
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if !isBlock(c) {
			para.WriteString(r.inline(c, depth+1))
			continue
		}
		flush()
		if b := r.block(c, depth+1); strings.TrimSpace(b) != "" {
			out = append(out, b)
		}
	}
	flush()
	return strings.Join(out, "\n\n")
}

// paragraph tidies inline text: each line (a <br> breaks one) trimmed,
// empty lines dropped.
func paragraph(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// block renders one block element.
func (r *renderer) block(n *html.Node, depth int) string {
	switch n.DataAtom {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		t := oneLine(r.inlineChildren(n, depth))
		if t == "" {
			return ""
		}
		return strings.Repeat("#", int(n.Data[1]-'0')) + " " + t
	case atom.Pre:
		return codeBlock(n)
	case atom.Ul, atom.Ol:
		return r.list(n, depth)
	case atom.Blockquote:
		return prefixLines(r.blocks(n, depth), "> ", "> ")
	case atom.Table:
		return r.table(n, depth)
	case atom.Hr:
		return "---"
	case atom.Dt:
		if t := oneLine(r.inlineChildren(n, depth)); t != "" {
			return "**" + t + "**"
		}
		return ""
	}
	return r.blocks(n, depth)
}

// list renders ul and ol items, nested lists indented under their item.
func (r *renderer) list(n *html.Node, depth int) string {
	var items []string
	i := 1
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		var body string
		switch {
		case c.Type == html.ElementNode && c.DataAtom == atom.Li:
			body = r.blocks(c, depth+1)
		case c.Type == html.ElementNode && (c.DataAtom == atom.Ul || c.DataAtom == atom.Ol):
			if len(items) > 0 {
				items[len(items)-1] += "\n" + prefixLines(r.list(c, depth+1), "  ", "  ")
			}
			continue
		default:
			continue
		}
		body = strings.ReplaceAll(body, "\n\n", "\n")
		if strings.TrimSpace(body) == "" {
			continue
		}
		marker := "- "
		if n.DataAtom == atom.Ol {
			marker = strconv.Itoa(i) + ". "
			i++
		}
		items = append(items, prefixLines(body, marker, strings.Repeat(" ", len(marker))))
	}
	return strings.Join(items, "\n")
}

// table renders a table as pipes: its first row is the header.
func (r *renderer) table(n *html.Node, depth int) string {
	var rows [][]string
	walk(n, func(c *html.Node) bool {
		if c != n && c.Type == html.ElementNode && c.DataAtom == atom.Table {
			return false // a nested table's rows are its own
		}
		if c.Type == html.ElementNode && c.DataAtom == atom.Tr {
			var row []string
			for d := c.FirstChild; d != nil; d = d.NextSibling {
				if d.Type == html.ElementNode && (d.DataAtom == atom.Td || d.DataAtom == atom.Th) {
					cell := oneLine(r.inlineChildren(d, depth+1))
					row = append(row, strings.ReplaceAll(cell, "|", `\|`))
				}
			}
			if len(row) > 0 {
				rows = append(rows, row)
			}
			return false
		}
		return true
	})
	if len(rows) == 0 {
		return ""
	}
	width := 0
	for _, row := range rows {
		width = max(width, len(row))
	}
	var b strings.Builder
	for i, row := range rows {
		for len(row) < width {
			row = append(row, "")
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
		if i == 0 {
			b.WriteString("|" + strings.Repeat(" --- |", width) + "\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// inlineChildren renders n's children as inline content, blocks inside
// flattened to their text.
func (r *renderer) inlineChildren(n *html.Node, depth int) string {
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(r.inline(c, depth+1))
		if isBlock(c) {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// inline renders a node inside a paragraph.
func (r *renderer) inline(n *html.Node, depth int) string {
	if depth > maxDepth {
		return ""
	}
	switch n.Type {
	case html.TextNode:
		return collapse(n.Data)
	case html.ElementNode:
	default:
		return ""
	}
	switch n.DataAtom {
	case atom.Br:
		return "\n"
	case atom.A:
		t := oneLine(r.inlineChildren(n, depth))
		if t == "" || isAnchorMark(t, attr(n, "href")) {
			return ""
		}
		if href := r.link(attr(n, "href")); href != "" {
			return "[" + t + "](" + href + ")"
		}
		return t
	case atom.Strong, atom.B:
		return wrap(r.inlineChildren(n, depth), "**")
	case atom.Em, atom.I:
		return wrap(r.inlineChildren(n, depth), "*")
	case atom.Code, atom.Kbd, atom.Samp, atom.Tt:
		t := oneLine(textRaw(n))
		if t == "" {
			return ""
		}
		if strings.Contains(t, "`") {
			return "`` " + t + " ``"
		}
		return "`" + t + "`"
	case atom.Img:
		alt := oneLine(attr(n, "alt"))
		if src := r.link(attr(n, "src")); alt != "" && src != "" && !strings.HasPrefix(src, "data:") {
			return "![" + alt + "](" + src + ")"
		}
		return alt
	}
	if isBlock(n) {
		return " " + r.inlineChildren(n, depth) + " "
	}
	return r.inlineChildren(n, depth)
}

// isAnchorMark reports whether a link is a heading's permalink mark (a
// "¶" or "#" leading to a fragment of the page), which means nothing in
// text.
func isAnchorMark(text, href string) bool {
	return strings.HasPrefix(strings.TrimSpace(href), "#") && utf8.RuneCountInString(text) == 1 && !unicode.IsLetter([]rune(text)[0])
}

// link resolves href against the page; "" for links that lead nowhere a
// reader can follow (fragments, javascript:).
func (r *renderer) link(href string) string {
	href = strings.TrimSpace(href)
	if href == "" || strings.HasPrefix(href, "#") {
		return ""
	}
	u, err := url.Parse(href)
	if err != nil {
		return ""
	}
	if r.base != nil {
		u = r.base.ResolveReference(u)
	}
	switch u.Scheme {
	case "http", "https", "mailto", "":
	default:
		return ""
	}
	return linkEscaper.Replace(u.String())
}

// linkEscaper escapes what would end a Markdown link's target early.
var linkEscaper = strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29")

// codeBlock renders a pre as a fenced block, its language from a
// "language-x" class when there is one.
func codeBlock(n *html.Node) string {
	text := strings.Trim(strings.ReplaceAll(textRaw(n), "\r\n", "\n"), "\n")
	if strings.TrimSpace(text) == "" {
		return ""
	}
	lang := ""
	walk(n, func(c *html.Node) bool {
		for _, f := range strings.Fields(attr(c, "class")) {
			if l, ok := strings.CutPrefix(f, "language-"); ok && lang == "" {
				lang = l
			} else if l, ok := strings.CutPrefix(f, "lang-"); ok && lang == "" {
				lang = l
			}
		}
		return lang == ""
	})
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	return fence + lang + "\n" + text + "\n" + fence
}

// textRaw returns the text under n as written (whitespace kept).
func textRaw(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) bool {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
		return true
	})
	return b.String()
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// oneLine collapses s to one trimmed line.
func oneLine(s string) string { return clean(s) }

// wrap puts mark around s's trimmed text, keeping its outer spaces.
func wrap(s, mark string) string {
	t := strings.TrimSpace(s)
	if t == "" {
		return s
	}
	lead := s[:len(s)-len(strings.TrimLeft(s, " \n"))]
	trail := s[len(strings.TrimRight(s, " \n")):]
	return lead + mark + t + mark + trail
}

// prefixLines puts first before the first line of s and rest before the
// others.
func prefixLines(s, first, rest string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		p := rest
		if i == 0 {
			p = first
		}
		if l == "" && p != "> " {
			continue
		}
		lines[i] = p + l
	}
	return strings.Join(lines, "\n")
}
