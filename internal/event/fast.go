package event

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Building a session's context decodes thousands of small payloads, and
// encoding/json spends most of that time validating and reflecting. The
// payloads a context is mostly made of (inputs, text, tool results) are
// flat objects of strings, integers and booleans, which flatObject reads
// directly; anything it does not recognise exactly (another shape, an
// unknown or differently-cased key, a number that is not a plain integer,
// invalid UTF-8) falls back to encoding/json, so the result is always the
// one encoding/json gives. Payloads with images (an "images" array of
// InputData or ToolResultData) are such a shape: they always take
// encoding/json, which also decodes the base64 image data.

// decodeFast decodes data into v if v is a payload with a decodeFlat
// method (which sets the field named key from the JSON value val, and
// reports false for a key or value it does not handle) and data a flat
// object it handles entirely; it reports whether it did.
func decodeFast(data []byte, v any) bool {
	switch d := v.(type) {
	case *InputData:
		c := *d
		if flatObject(data, c.decodeFlat) {
			*d = c
			return true
		}
	case *TextData:
		c := *d
		if flatObject(data, c.decodeFlat) {
			*d = c
			return true
		}
	case *ToolResultData:
		c := *d
		if flatObject(data, c.decodeFlat) {
			*d = c
			return true
		}
	}
	return false
}

func (d *InputData) decodeFlat(key string, val []byte) bool {
	switch key {
	case "text":
		return flatString(val, &d.Text)
	case "source":
		return flatString(val, &d.Source)
	case "origin":
		return flatString(val, &d.Origin)
	case "idempotency_key":
		return flatString(val, &d.IdempotencyKey)
	case "silent":
		return flatBool(val, &d.Silent)
	case "hops":
		return flatInt(val, &d.Hops)
	}
	return false
}

func (d *TextData) decodeFlat(key string, val []byte) bool {
	switch key {
	case "text":
		return flatString(val, &d.Text)
	case "step":
		return flatInt(val, &d.Step)
	}
	return false
}

func (d *ToolResultData) decodeFlat(key string, val []byte) bool {
	switch key {
	case "id":
		return flatString(val, &d.ID)
	case "name":
		return flatString(val, &d.Name)
	case "output":
		return flatString(val, &d.Output)
	case "is_error":
		return flatBool(val, &d.IsError)
	case "interrupted":
		return flatBool(val, &d.Interrupted)
	case "truncated":
		return flatBool(val, &d.Truncated)
	case "duration_ms":
		var n int
		if !flatInt(val, &n) {
			return false
		}
		d.DurationMS = int64(n)
		return true
	}
	return false
}

// flatObject calls fn for each member of the JSON object in data, in
// order, and reports whether data was a flat object (values: strings,
// numbers, true, false, null) whose every member fn accepted.
func flatObject(data []byte, fn func(key string, val []byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return skipSpace(data, i+1) == len(data)
	}
	for {
		end, esc := scanString(data, i)
		if end < 0 || esc {
			return false
		}
		key := data[i+1 : end-1]
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = skipSpace(data, i+1)
		vend := scanValue(data, i)
		if vend < 0 || !fn(string(key), data[i:vend]) {
			return false
		}
		i = skipSpace(data, vend)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return skipSpace(data, i+1) == len(data)
		default:
			return false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the index after the JSON string starting at b[i] and
// whether it holds escapes; -1 if there is no valid string there (control
// characters and invalid UTF-8 count as invalid: encoding/json handles
// those itself).
func scanString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return -1, false
	}
	esc, ascii := false, true
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			if !ascii && !utf8.Valid(b[i+1:j]) {
				return -1, false
			}
			return j + 1, esc
		case c == '\\':
			esc = true
			j++
		case c < 0x20:
			return -1, false
		case c >= 0x80:
			ascii = false
		}
	}
	return -1, false
}

// scanValue returns the index after the flat JSON value at b[i], or -1.
func scanValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		end, _ := scanString(b, i)
		return end
	case c == '-' || c >= '0' && c <= '9':
		j := i
		for j < len(b) && (b[j] == '-' || b[j] == '+' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] >= '0' && b[j] <= '9') {
			j++
		}
		return j
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
			return i + len(lit)
		}
	}
	return -1
}

// flatString sets *s from a JSON string or leaves it for null.
func flatString(val []byte, s *string) bool {
	if string(val) == "null" {
		return true
	}
	if len(val) < 2 || val[0] != '"' {
		return false
	}
	for _, c := range val[1 : len(val)-1] {
		if c == '\\' {
			// Escapes are rare enough to leave to encoding/json.
			return json.Unmarshal(val, s) == nil
		}
	}
	*s = string(val[1 : len(val)-1])
	return true
}

func flatBool(val []byte, v *bool) bool {
	switch string(val) {
	case "true":
		*v = true
	case "false":
		*v = false
	case "null":
	default:
		return false
	}
	return true
}

// flatInt sets *v from a plain JSON integer (no fraction or exponent) or
// leaves it for null.
func flatInt(val []byte, v *int) bool {
	if string(val) == "null" {
		return true
	}
	if len(val) == 0 || len(val) > 1 && (val[0] == '0' || val[0] == '-' && len(val) > 2 && val[1] == '0') {
		return false
	}
	n, err := strconv.Atoi(string(val))
	if err != nil {
		return false
	}
	*v = n
	return true
}
