package markup

import (
	"strings"
)

// The block parser reads the Markdown models write, line by line, into
// blocks. It never fails: a line that starts nothing is paragraph text. A
// fence left open (a reply still streaming) runs to the end of the document
// and renders closed.

type blockKind uint8

const (
	bPara blockKind = iota
	bHeading
	bCode
	bQuote
	bItem
	bRule
	bTable
)

type block struct {
	kind  blockKind
	level int    // heading: 1–6; item: nesting depth (indent / 2)
	num   string // item: "" for a bullet, else the number written ("3")
	lang  string // code: the fence's language
	text  string // para, heading, item: inline source; code: the body
	inl   []span // para, heading, item
	kids  []block
	rows  [][]string // table: cells' plain text, the header first
}

// maxDepth bounds nested quotes and inline entities, so a hostile document
// of ten thousand '>' or '*' costs no deep recursion: past it, markers are
// text.
const maxDepth = 16

func parse(md string) []block {
	md = strings.ReplaceAll(md, "\r\n", "\n")
	return parseLines(strings.Split(md, "\n"), 0)
}

func parseLines(lines []string, depth int) []block {
	var out []block
	for i := 0; i < len(lines); {
		line := lines[i]
		if isBlank(line) {
			i++
			continue
		}
		if fence, ok := fenceOpen(line); ok {
			var body []string
			i++
			for i < len(lines) && !fence.closes(lines[i]) {
				body = append(body, lines[i])
				i++
			}
			text := strings.Join(body, "\n")
			if i >= len(lines) { // left open: the lines a stream ends with are not code yet
				text = strings.TrimRight(text, "\n")
			}
			i++ // the closing fence
			out = append(out, block{kind: bCode, lang: fence.lang, text: text})
			continue
		}
		if level, text, ok := heading(line); ok {
			out = append(out, block{kind: bHeading, level: level, text: text, inl: parseInline(text)})
			i++
			continue
		}
		if isRule(line) {
			out = append(out, block{kind: bRule})
			i++
			continue
		}
		if _, ok := quoteLine(line); ok && depth < maxDepth {
			var inner []string
			for i < len(lines) {
				rest, ok := quoteLine(lines[i])
				if !ok {
					break
				}
				inner = append(inner, rest)
				i++
			}
			out = append(out, block{kind: bQuote, kids: parseLines(inner, depth+1)})
			continue
		}
		if isTable(lines, i) {
			var rows [][]string
			rows = append(rows, cells(lines[i]))
			i += 2 // the header and the delimiter row
			for i < len(lines) && strings.Contains(lines[i], "|") && !isBlank(lines[i]) && !blockStart(lines, i) {
				rows = append(rows, cells(lines[i]))
				i++
			}
			out = append(out, block{kind: bTable, rows: rows})
			continue
		}
		b := block{kind: bPara}
		first := strings.TrimSpace(line)
		if level, num, text, ok := listItem(line); ok {
			b = block{kind: bItem, level: level, num: num}
			first = text
		}
		i++
		j := i
		for i < len(lines) && !isBlank(lines[i]) && !blockStart(lines, i) {
			i++
		}
		b.text = joinTrimmed(first, lines[j:i])
		b.inl = parseInline(b.text)
		out = append(out, b)
	}
	return out
}

// joinTrimmed joins first and the lines after it, each trimmed, with
// newlines.
func joinTrimmed(first string, more []string) string {
	if len(more) == 0 {
		return first
	}
	var b strings.Builder
	b.WriteString(first)
	for _, l := range more {
		b.WriteByte('\n')
		b.WriteString(strings.TrimSpace(l))
	}
	return b.String()
}

// blockStart reports whether lines[i] starts a block other than a
// paragraph; such a line ends the paragraph or list item before it.
func blockStart(lines []string, i int) bool {
	l := lines[i]
	if _, ok := fenceOpen(l); ok {
		return true
	}
	if _, _, ok := heading(l); ok {
		return true
	}
	if _, ok := quoteLine(l); ok {
		return true
	}
	if _, _, _, ok := listItem(l); ok {
		return true
	}
	return isRule(l) || isTable(lines, i)
}

func isBlank(l string) bool { return strings.TrimSpace(l) == "" }

// indent is the count of leading spaces (a tab counts as four).
func indent(l string) (n int, rest string) {
	for i := 0; i < len(l); i++ {
		switch l[i] {
		case ' ':
			n++
		case '\t':
			n += 4
		default:
			return n, l[i:]
		}
	}
	return n, ""
}

type fence struct {
	char byte
	n    int
	lang string
}

// fenceOpen reads a fence's opening line: at most three spaces, then three
// or more backticks or tildes, then the language.
func fenceOpen(l string) (fence, bool) {
	n, rest := indent(l)
	if n > 3 || len(rest) < 3 || (rest[0] != '`' && rest[0] != '~') {
		return fence{}, false
	}
	c := rest[0]
	k := run(rest, 0, c)
	if k < 3 {
		return fence{}, false
	}
	info := strings.TrimSpace(rest[k:])
	if c == '`' && strings.IndexByte(info, '`') >= 0 {
		return fence{}, false
	}
	lang, _, _ := strings.Cut(info, " ")
	return fence{char: c, n: k, lang: lang}, true
}

func (f fence) closes(l string) bool {
	n, rest := indent(l)
	if n > 3 {
		return false
	}
	k := run(rest, 0, f.char)
	return k >= f.n && isBlank(rest[k:])
}

func heading(l string) (level int, text string, ok bool) {
	n, rest := indent(l)
	if n > 3 {
		return 0, "", false
	}
	k := run(rest, 0, '#')
	if k < 1 || k > 6 || (k < len(rest) && rest[k] != ' ' && rest[k] != '\t') {
		return 0, "", false
	}
	text = strings.TrimSpace(rest[k:])
	// A closing run of '#' after a space is not text.
	if t := strings.TrimRight(text, "#"); t == "" || strings.HasSuffix(t, " ") {
		text = strings.TrimSpace(t)
	}
	return k, text, text != "" // a lone "#" is text: an empty heading would be an empty entity
}

func isRule(l string) bool {
	n, rest := indent(l)
	if n > 3 || rest == "" || (rest[0] != '-' && rest[0] != '*' && rest[0] != '_') {
		return false
	}
	c, count := rest[0], 0
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case c:
			count++
		case ' ', '\t':
		default:
			return false
		}
	}
	return count >= 3
}

func quoteLine(l string) (string, bool) {
	n, rest := indent(l)
	if n > 3 || !strings.HasPrefix(rest, ">") {
		return "", false
	}
	return strings.TrimPrefix(rest[1:], " "), true
}

// listItem reads "- text", "* text", "+ text", "1. text" or "1) text",
// indented by two spaces a level.
func listItem(l string) (level int, num, text string, ok bool) {
	n, rest := indent(l)
	k := 0
	switch {
	case rest != "" && (rest[0] == '-' || rest[0] == '*' || rest[0] == '+'):
		k = 1
	default:
		for k < len(rest) && k < 9 && rest[k] >= '0' && rest[k] <= '9' {
			k++
		}
		if k == 0 || k >= len(rest) || (rest[k] != '.' && rest[k] != ')') {
			return 0, "", "", false
		}
		num = rest[:k]
		k++
	}
	if k < len(rest) && rest[k] != ' ' && rest[k] != '\t' {
		return 0, "", "", false
	}
	text = strings.TrimSpace(rest[k:])
	if text == "" {
		return 0, "", "", false // a lone marker is text, not an empty item
	}
	return min(n/2, maxDepth), num, text, true
}

// isTable reports whether lines[i] is a table's header: it has a '|' and
// the next line is a delimiter row ("|---|:--:|").
func isTable(lines []string, i int) bool {
	if i+1 >= len(lines) || !strings.Contains(lines[i], "|") {
		return false
	}
	d := strings.TrimSpace(lines[i+1])
	if !strings.Contains(d, "-") {
		return false
	}
	for _, c := range []byte(d) {
		if c != '|' && c != '-' && c != ':' && c != ' ' && c != '\t' {
			return false
		}
	}
	return strings.Contains(d, "|") // "---" alone under a line is a rule
}

// cells splits a table row on the '|' not escaped and not in code, and
// gives each cell's plain text.
func cells(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(l, "|")
	if strings.HasSuffix(l, "|") && !strings.HasSuffix(l, `\|`) {
		l = l[:len(l)-1]
	}
	var out []string
	start, code := 0, 0
	for i := 0; i < len(l); i++ {
		switch l[i] {
		case '\\':
			i++
		case '`':
			k := run(l, i, '`')
			if code == 0 {
				code = k
			} else if code == k {
				code = 0
			}
			i += k - 1
		case '|':
			if code == 0 {
				out = append(out, cellText(l[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, cellText(l[start:]))
}

func cellText(s string) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), `\|`, "|")
	return plainInline(parseInline(s))
}

// run counts the bytes c from s[i] on.
func run(s string, i int, c byte) int {
	k := 0
	for i+k < len(s) && s[i+k] == c {
		k++
	}
	return k
}
