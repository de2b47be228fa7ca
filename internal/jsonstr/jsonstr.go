// Package jsonstr writes JSON strings. It is the one string encoder of
// agentd's hand-written JSON (live text deltas, event stream frames,
// fakellm's replies), where encoding/json would cost allocations on a hot
// path: whatever bytes it is given, what it writes is a valid JSON string
// that decodes to what encoding/json's own encoding of them decodes to.
//
// Control characters (U+0000–U+001F) are escaped, \n, \r and \t by name
// and the others as \u00XX; U+2028 and U+2029 are escaped too, so the
// output is also safe inside JavaScript; each byte that is not part of
// valid UTF-8 becomes U+FFFD, as encoding/json does. Nothing else is
// escaped: <, > and & are written as they are.
package jsonstr

const hexDigits = "0123456789abcdef"

// plain[c] tells whether ASCII byte c stands for itself inside a JSON
// string: printable, and neither " nor \. It is never written after
// initialisation.
var plain = func() (t [0x80]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// Append appends s to dst as a quoted JSON string.
func Append[T string | []byte](dst []byte, s T) []byte {
	dst = append(dst, '"')
	dst = AppendEscaped(dst, s)
	return append(dst, '"')
}

// AppendEscaped appends s to dst escaped for use inside a JSON string,
// without the quotes.
func AppendEscaped[T string | []byte](dst []byte, s T) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			if plain[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		// A character of two to four bytes: valid as unicode/utf8 has it
		// (no overlong forms, surrogates or values past U+10FFFF).
		x := lead[c]
		if n := int(x & 7); n != 0 && i+n <= len(s) {
			r := second[x>>3]
			b1 := s[i+1]
			if r.lo <= b1 && b1 <= r.hi && (n < 3 || s[i+2]&0xc0 == 0x80) && (n < 4 || s[i+3]&0xc0 == 0x80) {
				if c != 0xe2 || b1 != 0x80 || s[i+2]&^1 != 0xa8 {
					i += n
					continue
				}
				// U+2028 (e2 80 a8) and U+2029 (e2 80 a9).
				dst = append(dst, s[start:i]...)
				dst = append(dst, '\\', 'u', '2', '0', '2', '8'+s[i+2]&1)
				i += 3
				start = i
				continue
			}
		}
		dst = append(dst, s[start:i]...)
		dst = append(dst, `\ufffd`...)
		i++
		start = i
	}
	return append(dst, s[start:]...)
}

// lead describes the bytes that may start a character of more than one
// byte: the low three bits are its length (0: such a byte starts none),
// the rest index second, the range its second byte must be in.
var lead = func() (t [0x100]uint8) {
	for c := 0xc2; c < 0xf5; c++ {
		switch {
		case c < 0xe0:
			t[c] = 2
		case c == 0xe0:
			t[c] = 1<<3 | 3
		case c == 0xed:
			t[c] = 2<<3 | 3
		case c < 0xf0:
			t[c] = 3
		case c == 0xf0:
			t[c] = 3<<3 | 4
		case c == 0xf4:
			t[c] = 4<<3 | 4
		default:
			t[c] = 4
		}
	}
	return t
}()

// second holds the ranges of a character's second byte, by lead's index.
var second = [...]struct{ lo, hi byte }{
	{0x80, 0xbf},
	{0xa0, 0xbf}, // after e0: no overlong forms
	{0x80, 0x9f}, // after ed: no surrogates
	{0x90, 0xbf}, // after f0: no overlong forms
	{0x80, 0x8f}, // after f4: nothing past U+10FFFF
}
