package markup

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// writer is what a renderer writes into: markers (mark) and text the reader
// sees (text). It counts the text, in the unit asked, as Telegram counts a
// message's length: after its entities are parsed, markers and escapes
// gone.
type writer struct {
	b      []byte
	unit   Unit
	n      int  // the text's length in unit
	quoted bool // inside a quote: no platform nests one, and Telegram's pre cannot be in one
	// closed[k] is where the last close marker of entity kind k ended, and
	// closeLen its length: an entity of kind k opened right there is the
	// same entity going on, so the close is taken back instead ("_a__b_"
	// would be underline to Telegram).
	closed   [sImage + 1]int
	closeLen [sImage + 1]int
}

func (w *writer) mark(s string) { w.b = append(w.b, s...) }

func (w *writer) text(s string) {
	w.b = append(w.b, s...)
	w.n += count(s, w.unit)
}

func (w *writer) textByte(c byte) {
	w.b = append(w.b, c)
	w.n++
}

// atLineStart reports whether the next byte written starts a line.
func (w *writer) atLineStart() bool {
	return len(w.b) == 0 || w.b[len(w.b)-1] == '\n'
}

// count is s's length in unit u; an invalid byte counts as U+FFFD, which
// is what a platform sees of it.
func count(s string, u Unit) int {
	if u != UTF16 {
		return utf8.RuneCountInString(s)
	}
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// renderer writes one dialect. The walk over blocks (renderDoc) is shared;
// what differs is each dialect's markers and escaping.
type renderer interface {
	text(w *writer, s string)           // text outside entities, escaped
	code(w *writer, s string)           // an inline code span
	pre(w *writer, lang, body string)   // a code block (a table's text too)
	open(w *writer, k spanKind)         // bold, italic, strike
	close(w *writer, k spanKind)        //
	link(w *writer, r renderer, s span) // a link or an image
	heading(w *writer, r renderer, level int, inl []span)
	bullet(w *writer, num string) // a list item's marker
	quote(w *writer, body string, n int)
}

// rule is a horizontal rule's text in every dialect: none of them draws
// one, and "---" is a marker in some.
const rule = "──────────"

// renderDoc writes blocks; size is a guess of the output's bytes.
func renderDoc(r renderer, blocks []block, u Unit, size int) (string, int) {
	w := &writer{unit: u, b: make([]byte, 0, size)}
	renderBlocks(w, r, blocks)
	return string(w.b), w.n
}

func renderBlocks(w *writer, r renderer, blocks []block) {
	for i, b := range blocks {
		if i > 0 {
			if b.kind == bItem && blocks[i-1].kind == bItem {
				w.text("\n")
			} else {
				w.text("\n\n")
			}
		}
		switch b.kind {
		case bPara:
			inline(w, r, b.inl, 0)
		case bHeading:
			r.heading(w, r, b.level, b.inl)
		case bItem:
			w.text(strings.Repeat("  ", b.level))
			r.bullet(w, b.num)
			inline(w, r, b.inl, 0)
		case bCode:
			r.pre(w, b.lang, b.text)
		case bTable:
			r.pre(w, "", tableText(b.rows))
		case bRule:
			w.text(rule)
		case bQuote:
			if w.quoted {
				renderBlocks(w, r, b.kids)
				continue
			}
			sub := &writer{unit: w.unit, quoted: true}
			renderBlocks(sub, r, b.kids)
			r.quote(w, string(sub.b), sub.n)
		}
	}
}

// openSet is the set of entity kinds already open: an entity inside one
// of its own kind is written without markers (Telegram and Slack cannot
// nest them, and nothing is lost).
type openSet uint8

func (o openSet) has(k spanKind) bool { return o&(1<<k) != 0 }

func inline(w *writer, r renderer, spans []span, in openSet) {
	for _, s := range spans {
		switch s.kind {
		case sText:
			r.text(w, s.text)
		case sCode:
			r.code(w, s.text)
		case sLink, sImage:
			r.link(w, r, s)
		default:
			if in.has(s.kind) {
				inline(w, r, s.kids, in)
				continue
			}
			if k := s.kind; w.closeLen[k] > 0 && w.closed[k] == len(w.b) {
				w.b = w.b[:len(w.b)-w.closeLen[k]] // go on with the entity just closed
			} else {
				r.open(w, k)
			}
			inline(w, r, s.kids, in|1<<s.kind)
			start := len(w.b)
			r.close(w, s.kind)
			w.closed[s.kind], w.closeLen[s.kind] = len(w.b), len(w.b)-start
		}
	}
}

// linkText is a link's or image's text: an image's alt text, else the
// link's text, the URL when that is empty.
func linkText(s span) []span {
	if s.kind == sImage {
		if s.text == "" {
			return []span{{kind: sText, text: s.url}}
		}
		return []span{{kind: sText, text: s.text}}
	}
	if plainInline(s.kids) == "" {
		return []span{{kind: sText, text: s.url}}
	}
	return s.kids
}

// isBare reports whether the link is its own URL, as an autolink is.
func isBare(s span) bool {
	return s.kind == sLink && len(s.kids) == 1 && s.kids[0].kind == sText && s.kids[0].text == s.url
}

// tableText lays a table out as preformatted text, columns padded.
func tableText(rows [][]string) string {
	var width []int
	for _, row := range rows {
		for i, c := range row {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	line := func(row []string) {
		var l strings.Builder
		for i := range width {
			c := ""
			if i < len(row) {
				c = row[i]
			}
			if i > 0 {
				l.WriteString(" | ")
			}
			l.WriteString(c)
			l.WriteString(strings.Repeat(" ", width[i]-utf8.RuneCountInString(c)))
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
	}
	for i, row := range rows {
		if i > 0 {
			b.WriteByte('\n')
		}
		line(row)
		if i == 0 {
			b.WriteByte('\n')
			for j, n := range width {
				if j > 0 {
					b.WriteString("-+-")
				}
				b.WriteString(strings.Repeat("-", n))
			}
		}
	}
	return b.String()
}

// safeLang keeps a code block's language only when it is a short plain
// word, so it can break no platform's fence.
func safeLang(lang string) string {
	if len(lang) > 20 {
		return ""
	}
	for _, c := range []byte(lang) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '+' || c == '#' || c == '.') {
			return ""
		}
	}
	return lang
}
