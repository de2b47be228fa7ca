package pdftext

import (
	"strconv"
)

// Kinds of token.
const (
	tokEOF = iota
	tokString
	tokNumber
	tokOperator
	tokOther // names, arrays' brackets, dictionaries: skipped
)

// lexer reads the tokens of a content stream. Every step consumes at
// least one byte, so a stream of n bytes takes at most n steps.
type lexer struct {
	data []byte
	pos  int
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == 0
}

func isDelim(c byte) bool {
	switch c {
	case '(', ')', '<', '>', '[', ']', '{', '}', '/', '%':
		return true
	}
	return isSpace(c)
}

// next returns the next token and its kind.
func (l *lexer) next() ([]byte, int) {
	d := l.data
	for l.pos < len(d) {
		c := d[l.pos]
		switch {
		case isSpace(c):
			l.pos++
		case c == '%':
			for l.pos < len(d) && d[l.pos] != '\n' && d[l.pos] != '\r' {
				l.pos++
			}
		case c == '(':
			l.pos++
			return l.literal(), tokString
		case c == '<' && l.pos+1 < len(d) && d[l.pos+1] == '<', c == '>' && l.pos+1 < len(d) && d[l.pos+1] == '>':
			l.pos += 2
			return nil, tokOther
		case c == '<':
			l.pos++
			return l.hex(), tokString
		case c == '/':
			l.pos++
			l.word()
			return nil, tokOther
		case c == '[' || c == ']' || c == '{' || c == '}' || c == ')' || c == '>':
			l.pos++
			return nil, tokOther
		default:
			w := l.word()
			if len(w) == 0 {
				l.pos++
				return nil, tokOther
			}
			if c == '+' || c == '-' || c == '.' || (c >= '0' && c <= '9') {
				return w, tokNumber
			}
			return w, tokOperator
		}
	}
	return nil, tokEOF
}

// word reads up to the next delimiter.
func (l *lexer) word() []byte {
	start := l.pos
	for l.pos < len(l.data) && !isDelim(l.data[l.pos]) {
		l.pos++
	}
	return l.data[start:l.pos]
}

// literal reads a (string) after its "(": balanced parentheses and
// backslash escapes, octal ones included.
func (l *lexer) literal() []byte {
	var out []byte
	depth := 1
	d := l.data
	for l.pos < len(d) {
		c := d[l.pos]
		l.pos++
		switch c {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return out
			}
		case '\\':
			if l.pos >= len(d) {
				return out
			}
			e := d[l.pos]
			l.pos++
			switch e {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case '\r', '\n':
				if e == '\r' && l.pos < len(d) && d[l.pos] == '\n' {
					l.pos++
				}
				continue
			default:
				if e >= '0' && e <= '7' {
					v := int(e - '0')
					for k := 0; k < 2 && l.pos < len(d) && d[l.pos] >= '0' && d[l.pos] <= '7'; k++ {
						v = v*8 + int(d[l.pos]-'0')
						l.pos++
					}
					c = byte(v)
				} else {
					c = e
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// hex reads a <hex string> after its "<".
func (l *lexer) hex() []byte {
	var out []byte
	hi, half := byte(0), false
	d := l.data
	for l.pos < len(d) {
		c := d[l.pos]
		l.pos++
		var v byte
		switch {
		case c == '>':
			if half {
				out = append(out, hi<<4)
			}
			return out
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			continue
		}
		if half {
			out = append(out, hi<<4|v)
		} else {
			hi = v
		}
		half = !half
	}
	return out
}

func parseNum(b []byte) float64 {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0
	}
	return f
}
