package tool

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// IsControl reports the characters a name or an argument shown to a person
// must not carry as they are: C0 controls, DEL, C1 controls and the
// bidirectional embeddings, overrides and isolates (U+202A–U+202E,
// U+2066–U+2069). Each can move a terminal's cursor, start a new line or
// reorder what follows, so that a card or a result reads other than it is.
func IsControl(r rune) bool {
	return r < 0x20 || r >= 0x7f && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// HasControl reports whether s holds a character IsControl reports, or
// bytes that are not UTF-8.
func HasControl(s string) bool {
	return strings.IndexFunc(s, IsControl) >= 0 || !utf8.ValidString(s)
}

// Visible is s as a card or a result shows a name or an argument: as it is
// when it holds no control character (HasControl), else quoted as Go
// quotes a string ("a\nb", "\x1b[2K", "\u202e"), so that every character
// is seen and none starts a line.
func Visible(s string) string {
	if !HasControl(s) {
		return s
	}
	return strconv.Quote(s)
}

// VisibleLines is text of several lines (a command's input) as a card
// shows it in a block of its own: its control characters escaped as Go
// escapes them (\r, \x1b, \u202e) and bytes that are not UTF-8 as \xNN,
// but its line breaks and tabs kept.
func VisibleLines(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r != '\n' && r != '\t' && IsControl(r) }) < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && invalidAt(s, i):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t' || !IsControl(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

func invalidAt(s string, i int) bool {
	_, size := utf8.DecodeRuneInString(s[i:])
	return size <= 1
}
