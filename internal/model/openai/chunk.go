package openai

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// A streamed response is a chunk per piece of text, and encoding/json
// spent most of a short turn's stream decoding on reflection and
// allocation. decodeChunk reads the chunks servers send while streaming —
// an object of choices with a delta of content, reasoning or tool-call
// fragments, a finish reason, usage — directly, skipping the fields agentd
// does not use; anything else (an error object, text as content parts, a
// key that differs from a field's name only in case, a repeated key, a
// number where a string belongs, an escape sequence) leaves it to
// encoding/json, so the result is always the one encoding/json gives (a
// fuzz test holds the two equal).

// decodeChunk decodes data into ch and reports whether it could; when it
// could not (data is not JSON, or not of a shape it reads), ch is
// unchanged. It checks the syntax of all of data as it goes, as
// encoding/json does before it decodes.
func decodeChunk(data string, ch *chunk) bool {
	d := chunkReader{s: data}
	var c chunk
	if !d.object(func(key string) bool {
		switch key {
		case "object":
			return d.str(&c.Object)
		case "model":
			return d.str(&c.Model)
		case "choices":
			return d.choices(&c.Choices)
		case "usage":
			return d.usage(&c.Usage)
		}
		return d.skipUnless(key, "object", "model", "choices", "usage", "error", "message", "type", "code")
	}) || d.space() != len(d.s) {
		return false
	}
	*ch = c
	return true
}

// chunkReader reads a JSON text from s at i. Every method fails on what is
// not JSON as well as on what it does not read.
type chunkReader struct {
	s     string
	i     int
	depth int // of objects and arrays: past maxDepth it gives up
}

// maxDepth is how deeply objects and arrays nest before the reader leaves
// the text to encoding/json (which has a limit of its own).
const maxDepth = 100

func (d *chunkReader) space() int {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\r', '\n':
			d.i++
			continue
		}
		break
	}
	return d.i
}

// next skips white space and reports whether c is next, taking it if so.
func (d *chunkReader) next(c byte) bool {
	d.space()
	if d.i < len(d.s) && d.s[d.i] == c {
		d.i++
		return true
	}
	return false
}

// object reads an object, calling member for each key with the reader at
// its value, which member reads. A key met twice fails.
func (d *chunkReader) object(member func(key string) bool) bool {
	if !d.next('{') || d.depth >= maxDepth {
		return false
	}
	d.depth++
	defer func() { d.depth-- }()
	if d.next('}') {
		return true
	}
	var buf [8]string
	seen := buf[:0]
	for {
		var key string
		if d.space(); !d.plainString(&key) {
			return false
		}
		for _, k := range seen {
			if k == key {
				return false
			}
		}
		seen = append(seen, key)
		if !d.next(':') {
			return false
		}
		d.space()
		if !member(key) {
			return false
		}
		if d.next('}') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

// array reads an array, calling elem with the reader at each element.
func (d *chunkReader) array(elem func() bool) bool {
	if !d.next('[') || d.depth >= maxDepth {
		return false
	}
	d.depth++
	defer func() { d.depth-- }()
	if d.next(']') {
		return true
	}
	for {
		d.space()
		if !elem() {
			return false
		}
		if d.next(']') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

// literal reads lit (true, false or null) if it is next.
func (d *chunkReader) literal(lit string) bool {
	if strings.HasPrefix(d.s[d.i:], lit) {
		d.i += len(lit)
		return true
	}
	return false
}

// null reads a null if one is next.
func (d *chunkReader) null() bool { return d.literal("null") }

// plainString reads a string without escapes or control characters and
// of valid UTF-8, which stands for itself.
func (d *chunkReader) plainString(s *string) bool {
	if d.i >= len(d.s) || d.s[d.i] != '"' {
		return false
	}
	for j := d.i + 1; j < len(d.s); j++ {
		switch c := d.s[j]; {
		case c == '"':
			v := d.s[d.i+1 : j]
			if !utf8.ValidString(v) {
				return false
			}
			*s, d.i = v, j+1
			return true
		case c == '\\' || c < 0x20:
			return false
		}
	}
	return false
}

// str reads a string field: a plain string, or null, which leaves it.
func (d *chunkReader) str(s *string) bool {
	return d.null() || d.plainString(s)
}

// text reads a text field as text.UnmarshalJSON does for a string or null.
func (d *chunkReader) text(t *text) bool {
	var s string
	if d.null() {
		return true
	}
	if !d.plainString(&s) {
		return false
	}
	*t = text(s)
	return true
}

// number reads a JSON number and reports whether it is an integer.
func (d *chunkReader) number() (ok, integer bool) {
	j := d.i
	if j < len(d.s) && d.s[j] == '-' {
		j++
	}
	digits := func() int {
		n := 0
		for j < len(d.s) && d.s[j] >= '0' && d.s[j] <= '9' {
			j++
			n++
		}
		return n
	}
	start := j
	if n := digits(); n == 0 || n > 1 && d.s[start] == '0' {
		return false, false
	}
	integer = true
	if j < len(d.s) && d.s[j] == '.' {
		j++
		if digits() == 0 {
			return false, false
		}
		integer = false
	}
	if j < len(d.s) && (d.s[j] == 'e' || d.s[j] == 'E') {
		j++
		if j < len(d.s) && (d.s[j] == '+' || d.s[j] == '-') {
			j++
		}
		if digits() == 0 {
			return false, false
		}
		integer = false
	}
	d.i = j
	return true, integer
}

// integer reads an integer into n (null leaves it).
func (d *chunkReader) integer(n *int) bool {
	if d.null() {
		return true
	}
	start := d.i
	if ok, integer := d.number(); !ok || !integer {
		return false
	}
	v, err := strconv.Atoi(d.s[start:d.i])
	if err != nil {
		return false
	}
	*n = v
	return true
}

// skipUnless skips the value of key, which must not be one of fields in
// any case: encoding/json matches keys without regard to case.
func (d *chunkReader) skipUnless(key string, fields ...string) bool {
	for _, f := range fields {
		if strings.EqualFold(key, f) {
			return false
		}
	}
	return d.skip()
}

// skip skips a value.
func (d *chunkReader) skip() bool {
	if d.space() >= len(d.s) {
		return false
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object(func(string) bool { return d.skip() })
	case c == '[':
		return d.array(d.skip)
	case c == '"':
		return d.skipString()
	case c == '-' || c >= '0' && c <= '9':
		ok, _ := d.number()
		return ok
	}
	return d.literal("true") || d.literal("false") || d.null()
}

// skipString skips a string, escapes and all.
func (d *chunkReader) skipString() bool {
	for j := d.i + 1; j < len(d.s); j++ {
		switch c := d.s[j]; {
		case c == '"':
			d.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			j++
			if j >= len(d.s) {
				return false
			}
			switch d.s[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(d.s) {
					return false
				}
				for _, h := range d.s[j+1 : j+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				j += 4
			default:
				return false
			}
		}
	}
	return false
}

func (d *chunkReader) choices(cs *[]choice) bool {
	if d.null() {
		*cs = nil
		return true
	}
	out := []choice{}
	ok := d.array(func() bool {
		var c choice
		if !d.object(func(key string) bool {
			switch key {
			case "index":
				return d.integer(&c.Index)
			case "delta":
				return d.delta(&c.Delta)
			case "finish_reason":
				if d.null() {
					c.FinishReason = nil
					return true
				}
				var s string
				if !d.plainString(&s) {
					return false
				}
				c.FinishReason = &s
				return true
			}
			return d.skipUnless(key, "index", "delta", "message", "finish_reason")
		}) {
			return false
		}
		out = append(out, c)
		return true
	})
	*cs = out
	return ok
}

func (d *chunkReader) delta(dp **delta) bool {
	if d.null() {
		*dp = nil
		return true
	}
	x := new(delta)
	*dp = x
	return d.object(func(key string) bool {
		switch key {
		case "content":
			return d.text(&x.Content)
		case "reasoning_content":
			return d.text(&x.ReasoningContent)
		case "reasoning":
			return d.text(&x.Reasoning)
		case "tool_calls":
			return d.toolCalls(&x.ToolCalls)
		}
		return d.skipUnless(key, "content", "reasoning_content", "reasoning", "tool_calls")
	})
}

func (d *chunkReader) toolCalls(tcs *[]toolCallDelta) bool {
	if d.null() {
		*tcs = nil
		return true
	}
	out := []toolCallDelta{}
	ok := d.array(func() bool {
		var tc toolCallDelta
		if !d.object(func(key string) bool {
			switch key {
			case "index":
				if d.null() {
					tc.Index = nil
					return true
				}
				n := new(int)
				tc.Index = n
				return d.integer(n)
			case "id":
				return d.str(&tc.ID)
			case "function":
				if d.null() {
					return true
				}
				return d.object(func(key string) bool {
					switch key {
					case "name":
						return d.str(&tc.Function.Name)
					case "arguments":
						return d.text(&tc.Function.Arguments)
					}
					return d.skipUnless(key, "name", "arguments")
				})
			}
			return d.skipUnless(key, "index", "id", "function")
		}) {
			return false
		}
		out = append(out, tc)
		return true
	})
	*tcs = out
	return ok
}

func (d *chunkReader) usage(up **usage) bool {
	if d.null() {
		*up = nil
		return true
	}
	u := new(usage)
	*up = u
	return d.object(func(key string) bool {
		switch key {
		case "prompt_tokens":
			return d.integer(&u.PromptTokens)
		case "completion_tokens":
			return d.integer(&u.CompletionTokens)
		}
		return d.skipUnless(key, "prompt_tokens", "completion_tokens")
	})
}
