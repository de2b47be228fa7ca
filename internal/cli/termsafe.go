package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// termSafe returns s as it may be shown on a terminal: text from a model, a
// tool or another user must not move the cursor, retitle the window, write
// to the clipboard or hide part of itself (ANSI and OSC sequences, C1
// controls, bidirectional overrides as in "Trojan Source"). Such
// characters are shown in caret or \u notation instead; line breaks and
// tabs stay. Invalid UTF-8 becomes U+FFFD.
func termSafe(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i, r := range s {
		switch {
		case r == utf8.RuneError && isInvalidAt(s, i):
			b.WriteRune(utf8.RuneError)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20:
			b.WriteByte('^')
			b.WriteByte(byte(r) + '@')
		case r == 0x7f:
			b.WriteString("^?")
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func needsEscape(s string) bool {
	for i, r := range s {
		if r == utf8.RuneError && isInvalidAt(s, i) || r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || unsafeRune(r) {
			return true
		}
	}
	return false
}

// unsafeRune reports a C1 control or a bidirectional control: they change
// how the terminal reads or orders what follows.
func unsafeRune(r rune) bool {
	return r >= 0x80 && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

func isInvalidAt(s string, i int) bool {
	_, size := utf8.DecodeRuneInString(s[i:])
	return size <= 1
}

// isTerminal reports whether w is a terminal: what is written to one is
// shown to a person (termSafe), while a pipe gets the bytes as they are.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// termWriter passes what is written through termSafe.
type termWriter struct{ w io.Writer }

func (t termWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, termSafe(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// shown returns w, wrapped in a termWriter when it is a terminal.
func shown(w io.Writer) io.Writer {
	if isTerminal(w) {
		return termWriter{w}
	}
	return w
}
