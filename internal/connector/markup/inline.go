package markup

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The inline parser reads a block's text into spans: **bold** or __bold__,
// *italic* or _italic_, ~~strike~~, `code`, [links](url), ![images](url) and
// <https://autolinks>. A marker without its match is text, so a reply cut
// anywhere still parses.

type spanKind uint8

const (
	sText spanKind = iota
	sBold
	sItalic
	sStrike
	sCode
	sLink
	sImage
)

type span struct {
	kind spanKind
	text string // text, code; image: the alt text
	url  string // link, image
	kids []span // bold, italic, strike, link
}

func parseInline(s string) []span {
	return parseSpans(s, 0, false)
}

// delims are the emphasis delimiters, the longer first.
var delims = [...]struct {
	d    string
	kind spanKind
}{{"**", sBold}, {"__", sBold}, {"~~", sStrike}, {"*", sItalic}, {"_", sItalic}}

// memo keeps what one parseSpans call learnt of its string, so a run of
// unmatched markers costs one scan, not one each: without it "[[[[…" or
// "**a **a …" would cost the square of their length.
type memo struct {
	// fail[k] is the least offset from which a closer for delims[k] was
	// looked for and not found: none is found from any later offset either.
	// 0 is none.
	fail [len(delims)]int
	// code[n-1] is the same for a closing run of n backticks.
	code [8]int
	// match[i] is the offset of the ']' closing the '[' at i, -1 if none;
	// made on the first '['.
	match []int32
	// lastParen is the offset of the last ')' (-1 none), found on the first
	// link: no URL closes after it.
	lastParen *int
}

// closingCode is closingRun, remembering where one was not found.
func (m *memo) closingCode(s string, from, n int) int {
	if n <= len(m.code) && m.code[n-1] > 0 && from >= m.code[n-1] {
		return -1
	}
	j := closingRun(s, from, n)
	if j < 0 && n <= len(m.code) {
		m.code[n-1] = from
	}
	return j
}

// closeBracket is the offset of the ']' that closes the '[' at s[i].
func (m *memo) closeBracket(s string, i int) int {
	if m.match == nil {
		m.match = make([]int32, len(s))
		var open []int
		for j := 0; j < len(s); j++ {
			m.match[j] = -1
			switch s[j] {
			case '\\':
				if j+1 < len(s) {
					j++
					m.match[j] = -1
				}
			case '[':
				open = append(open, j)
			case ']':
				if n := len(open); n > 0 {
					m.match[open[n-1]] = int32(j)
					open = open[:n-1]
				}
			}
		}
	}
	return int(m.match[i])
}

func parseSpans(s string, depth int, inLink bool) []span {
	var out []span
	var buf strings.Builder
	flush := func() {
		if buf.Len() > 0 {
			out = appendSpan(out, span{kind: sText, text: buf.String()})
			buf.Reset()
		}
	}
	add := func(sp span) {
		flush()
		out = appendSpan(out, sp)
	}
	var m memo
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && isPunct(s[i+1]):
			buf.WriteByte(s[i+1])
			i += 2
			continue
		case c == '`':
			n := run(s, i, '`')
			if j := m.closingCode(s, i+n, n); j >= 0 {
				add(span{kind: sCode, text: codeText(s[i+n : j])})
				i = j + n
				continue
			}
			buf.WriteString(s[i : i+n])
			i += n
			continue
		case (c == '*' || c == '_' || c == '~') && depth < maxDepth:
			if sp, next, ok := emphasis(s, i, depth, inLink, &m); ok {
				add(sp)
				i = next
				continue
			}
		case c == '!' && !inLink && strings.HasPrefix(s[i+1:], "["):
			if text, url, next, ok := m.link(s, i+1); ok {
				add(span{kind: sImage, text: plainInline(parseSpans(text, depth+1, true)), url: url})
				i = next
				continue
			}
		case c == '[' && !inLink && depth < maxDepth:
			if text, url, next, ok := m.link(s, i); ok {
				add(span{kind: sLink, url: url, kids: parseSpans(text, depth+1, true)})
				i = next
				continue
			}
		case c == '<' && !inLink:
			if url, next, ok := autolink(s, i); ok {
				add(span{kind: sLink, url: url, kids: []span{{kind: sText, text: url}}})
				i = next
				continue
			}
		}
		buf.WriteByte(c)
		i++
	}
	flush()
	return out
}

// appendSpan appends sp, joining it to the span before when both are text,
// or both the same entity: two entities of one kind side by side would
// write markers side by side ("_a__b_"), which a platform reads as another
// marker.
func appendSpan(out []span, sp span) []span {
	if n := len(out); n > 0 && out[n-1].kind == sp.kind {
		last := &out[n-1]
		switch sp.kind {
		case sText, sCode:
			last.text += sp.text
			return out
		case sBold, sItalic, sStrike:
			for _, k := range sp.kids {
				last.kids = appendSpan(last.kids, k)
			}
			return out
		}
	}
	return append(out, sp)
}

// emphasis reads the entity opened by the delimiter at s[i], if it closes.
func emphasis(s string, i, depth int, inLink bool, m *memo) (span, int, bool) {
	for k, dl := range delims {
		d := dl.d
		if !strings.HasPrefix(s[i:], d) {
			continue
		}
		from := i + len(d)
		if from >= len(s) || isSpace(rune(s[from])) {
			continue
		}
		if i > 0 && isWordBefore(s, i) {
			continue // snake_case, 2*3*4: markers inside a word are text
		}
		if f := m.fail[k]; f > 0 && from >= f {
			continue
		}
		j := closer(s, from, d, m)
		if j < 0 {
			m.fail[k] = from
			continue
		}
		return span{kind: dl.kind, kids: parseSpans(s[from:j], depth+1, inLink)}, j + len(d), true
	}
	return span{}, 0, false
}

// closer finds where delimiter d closes in s, searching from from: not
// after a space, not before a word, not in code, not escaped.
func closer(s string, from int, d string, m *memo) int {
	c := d[0]
	for j := from; j < len(s); {
		switch s[j] {
		case '\\':
			j += 2
			continue
		case '`':
			n := run(s, j, '`')
			if k := m.closingCode(s, j+n, n); k >= 0 {
				j = k + n
			} else {
				j += n
			}
			continue
		case c:
			r := run(s, j, c)
			// A longer run closes with its last len(d) bytes when it ends
			// the entity ("***x***": the italic is inside), else with its
			// first ("**a****b**": two bolds).
			end := j
			if r > len(d) && !isWordAt(s, j+r) {
				end = j + r - len(d)
			}
			ok := r >= len(d) && !(len(d) == 1 && r == 2) && !(len(d) == 2 && r == 1) &&
				end > from && !isSpace(rune(s[j-1])) && !isWordAt(s, end+len(d))
			if ok {
				return end
			}
			j += r
			continue
		}
		j++
	}
	return -1
}

// closingRun finds a run of exactly n backticks from s[from].
func closingRun(s string, from, n int) int {
	for j := from; j < len(s); {
		k := strings.IndexByte(s[j:], '`')
		if k < 0 {
			return -1
		}
		j += k
		r := run(s, j, '`')
		if r == n {
			return j
		}
		j += r
	}
	return -1
}

// codeText is a code span's content: one space on each side is dropped
// when both are there, so "“ `x` “" is "`x`".
func codeText(s string) string {
	if len(s) >= 2 && s[0] == ' ' && s[len(s)-1] == ' ' && strings.TrimSpace(s) != "" {
		return s[1 : len(s)-1]
	}
	return s
}

// link reads "[text](url)" at s[i] == '['. A title after the URL is not
// read: the brackets stay text, so no word of it is lost. A URL is at most
// maxURL bytes.
func (m *memo) link(s string, i int) (text, url string, next int, ok bool) {
	j := m.closeBracket(s, i)
	if j < 0 || !strings.HasPrefix(s[j:], "](") {
		return "", "", 0, false
	}
	if m.lastParen == nil {
		last := strings.LastIndexByte(s, ')')
		m.lastParen = &last
	}
	if j+2 > *m.lastParen {
		return "", "", 0, false
	}
	text = s[i+1 : j]
	k := j + 2
	for k < len(s) && s[k] == ' ' {
		k++
	}
	start, paren := k, 0
	for ; k < len(s) && k-start <= maxURL; k++ {
		c := s[k]
		if c <= ' ' || c == 0x7f {
			break
		}
		if c == '(' {
			paren++
		}
		if c == ')' {
			if paren == 0 {
				break
			}
			paren--
		}
	}
	url = strings.TrimSuffix(strings.TrimPrefix(s[start:k], "<"), ">")
	for k < len(s) && s[k] == ' ' {
		k++
	}
	if k >= len(s) || s[k] != ')' || url == "" || !utf8.ValidString(url) {
		return "", "", 0, false
	}
	return text, url, k + 1, true
}

const maxURL = 2048

// autolink reads "<https://…>" or "<mailto:…>" at s[i] == '<'.
func autolink(s string, i int) (url string, next int, ok bool) {
	e := strings.IndexByte(s[i:], '>')
	if e < 0 {
		return "", 0, false
	}
	url = s[i+1 : i+e]
	if !isWebURL(url) && !strings.HasPrefix(url, "mailto:") {
		return "", 0, false
	}
	for _, c := range []byte(url) {
		if c <= ' ' || c == '<' || c == 0x7f {
			return "", 0, false
		}
	}
	return url, i + e + 1, true
}

func isWebURL(u string) bool {
	return (strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")) && len(u) > len("https://")
}

func isPunct(c byte) bool {
	return c < 0x80 && unicode.IsPunct(rune(c)) || c == '`' || c == '^' || c == '|' || c == '~' || c == '<' || c == '>' || c == '=' || c == '+' || c == '$'
}

func isSpace(r rune) bool { return unicode.IsSpace(r) }

func isWordBefore(s string, i int) bool {
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

func isWordAt(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// plainInline is spans' text as Plain writes it.
func plainInline(sp []span) string {
	w := &writer{}
	inline(w, plain{}, sp, 0)
	return string(w.b)
}
