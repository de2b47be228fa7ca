package approval

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds how deeply arguments may nest.
const maxDepth = 1000

// HashArguments returns the argumentsHash of a tool call's arguments: the
// SHA-256 of their canonical JSON ([CanonicalJSON]), in lower-case hex.
// arguments is JSON text (json.RawMessage, []byte or string), or values to
// encode as JSON (a map[string]any as an MCP SDK decodes it, a struct ...).
// Absent arguments (nil, empty text or JSON null) hash as the empty object
// {}, which is what agentd sends for a call without arguments. The error
// wraps [ErrMalformed].
func HashArguments(arguments any) (string, error) {
	var text []byte
	switch a := arguments.(type) {
	case nil:
	case json.RawMessage:
		text = a
	case []byte:
		text = a
	case string:
		text = []byte(a)
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return "", fmt.Errorf("%w: arguments: %v", ErrMalformed, err)
		}
		text = b
	}
	if t := bytes.TrimSpace(text); len(t) == 0 || string(t) == "null" {
		text = []byte("{}")
	}
	c, err := CanonicalJSON(text)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// CanonicalJSON returns the JSON Canonicalization Scheme (RFC 8785) form of
// one JSON value: no whitespace, object members sorted by the UTF-16 code
// units of their names, strings with only the escapes JSON requires, and
// numbers written as ECMAScript writes them (JSON.stringify). Numbers are
// read as IEEE 754 doubles, as JavaScript reads them; a number beyond the
// double range is an error. Of duplicate member names the last counts, as
// in most JSON decoders. In JavaScript, JSON.stringify of the parsed value
// with its keys sorted gives the same text. The error wraps [ErrMalformed].
func CanonicalJSON(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: arguments: %v", ErrMalformed, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: arguments: more than one JSON value", ErrMalformed)
	}
	var b []byte
	b, err := appendCanonical(b, v, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: arguments: %v", ErrMalformed, err)
	}
	return b, nil
}

func appendCanonical(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nested more than %d deep", maxDepth)
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("number %s is outside the range of a double", x)
		}
		return appendES6Number(b, f), nil
	case string:
		return appendCanonicalString(b, x), nil
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendCanonical(b, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonicalString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendCanonical(b, x[k], depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	return nil, fmt.Errorf("unexpected %T", v)
}

// compareUTF16 orders strings by their UTF-16 code units, as JavaScript
// sorts them (which differs from byte order only above U+FFFF).
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return slices.Compare(utf16.Encode([]rune{ra}), utf16.Encode([]rune{rb}))
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// appendCanonicalString writes s as a JSON string with only the escapes
// RFC 8785 keeps: \" \\ \b \f \n \r \t and \u00XX (lower-case hex) for the
// other control characters.
func appendCanonicalString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c >= 0x20:
			b = append(b, c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
	}
	return append(b, '"')
}

// appendES6Number writes a finite double as ECMAScript's Number::toString
// does: the shortest digits that read back as the same double, in plain
// notation for exponents from -7 to 20 and as d.ddde±x beyond.
func appendES6Number(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0') // and -0
	}
	if f < 0 {
		b = append(b, '-')
		f = -f
	}
	// d.ddddde±x: the shortest round-trip digits and the exponent.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	n, k := x+1, len(digits) // the value is 0.digits × 10^n
	switch {
	case k <= n && n <= 21:
		b = append(b, digits...)
		for range n - k {
			b = append(b, '0')
		}
	case 0 < n && n <= 21:
		b = append(b, digits[:n]...)
		b = append(b, '.')
		b = append(b, digits[n:]...)
	case -6 < n && n <= 0:
		b = append(b, '0', '.')
		for range -n {
			b = append(b, '0')
		}
		b = append(b, digits...)
	default:
		b = append(b, digits[0])
		if k > 1 {
			b = append(b, '.')
			b = append(b, digits[1:]...)
		}
		b = append(b, 'e')
		if n-1 >= 0 {
			b = append(b, '+')
		}
		b = strconv.AppendInt(b, int64(n-1), 10)
	}
	return b
}
