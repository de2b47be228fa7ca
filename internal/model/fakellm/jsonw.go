package fakellm

import (
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// appendQuoted appends s as a quoted JSON string.
func appendQuoted[T string | []byte](dst []byte, s T) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, s)
	return append(dst, '"')
}

// appendEscaped appends s escaped for use inside a JSON string, without the
// quotes. Invalid UTF-8 becomes U+FFFD, as encoding/json does.
func appendEscaped[T string | []byte](dst []byte, s T) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
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
		r, size := decodeRune(s, i)
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

func decodeRune[T string | []byte](s T, i int) (rune, int) {
	// Decode from at most utf8.UTFMax bytes so that the conversion of a
	// []byte stays on the stack.
	end := min(i+utf8.UTFMax, len(s))
	var buf [utf8.UTFMax]byte
	n := copy(buf[:], s[i:end])
	return utf8.DecodeRune(buf[:n])
}

func appendInt(dst []byte, n int) []byte { return strconv.AppendInt(dst, int64(n), 10) }

func appendUint(dst []byte, n uint64) []byte { return strconv.AppendUint(dst, n, 10) }
