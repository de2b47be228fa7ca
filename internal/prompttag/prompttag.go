// Package prompttag escapes, in text agentd did not write, the tags agentd
// wraps its own text in before a model reads it (a system message, a
// summary, the earlier turns of an OpenAI-style transcript), so that no
// user, tool, memory or model can write text that passes for agentd's.
package prompttag

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns text with the "<" of every opening or closing tag named
// in names — in any case (Unicode's too: "ſ" is an "s"), with any white
// space after "<" or "/" — written as "&lt;". A name is matched whole: it
// must be followed by anything but an ASCII letter, digit or "_". Text
// without such a tag is returned as it is, without copying. Names are
// ASCII.
func Escape(text string, names []string) string {
	var sb strings.Builder
	done := 0
	for i := 0; ; i++ {
		j := strings.IndexByte(text[i:], '<')
		if j < 0 {
			break
		}
		i += j
		if !isTag(text[i+1:], names) {
			continue
		}
		if sb.Len() == 0 {
			sb.Grow(len(text) + 8)
		}
		sb.WriteString(text[done:i])
		sb.WriteString("&lt;")
		done = i + 1
	}
	if done == 0 {
		return text
	}
	sb.WriteString(text[done:])
	return sb.String()
}

// isTag reports whether s, what follows a "<", opens or closes one of the
// tags names.
func isTag(s string, names []string) bool {
	s = strings.TrimLeft(s, " \t\r\n")
	if strings.HasPrefix(s, "/") {
		s = strings.TrimLeft(s[1:], " \t\r\n")
	}
	for _, name := range names {
		n := foldPrefix(s, name)
		if n < 0 {
			continue
		}
		if n == len(s) {
			return true
		}
		c := s[n]
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return true
		}
	}
	return false
}

// foldPrefix returns the length in bytes of the start of s that equals
// the ASCII name under Unicode case folding (as strings.EqualFold
// compares), or -1 if s does not start with it.
func foldPrefix(s, name string) int {
	n := 0
	for i := 0; i < len(name); i++ {
		r, size := utf8.DecodeRuneInString(s[n:])
		if size == 0 || !foldEqual(r, rune(name[i])) {
			return -1
		}
		n += size
	}
	return n
}

// foldEqual reports whether r and c are the same letter under Unicode
// simple case folding.
func foldEqual(r, c rune) bool {
	if r == c {
		return true
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f == c {
			return true
		}
	}
	return false
}
