package openai

import (
	"encoding/json"
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

// decodeChunk decodes data, a JSON text, into ch and reports whether it
// could; when it could not, ch is unchanged.
func decodeChunk(data string, ch *chunk) bool {
	if !json.Valid([]byte(data)) {
		return false
	}
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

// chunkReader reads a valid JSON text (checked before) from s at i.
type chunkReader struct {
	s string
	i int
}

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

// object reads an object, calling member for each key with the reader at
// its value, which member reads. A key met twice fails.
func (d *chunkReader) object(member func(key string) bool) bool {
	d.space()
	if d.i >= len(d.s) || d.s[d.i] != '{' {
		return false
	}
	d.i++
	var buf [8]string
	seen := buf[:0]
	for {
		d.space()
		if d.s[d.i] == '}' {
			d.i++
			return true
		}
		if d.s[d.i] == ',' {
			d.i++
			d.space()
		}
		var key string
		if !d.plainString(&key) {
			return false
		}
		for _, k := range seen {
			if k == key {
				return false
			}
		}
		seen = append(seen, key)
		d.space()
		d.i++ // ':'
		d.space()
		if !member(key) {
			return false
		}
	}
}

// array reads an array, calling elem with the reader at each element.
func (d *chunkReader) array(elem func() bool) bool {
	d.space()
	if d.s[d.i] != '[' {
		return false
	}
	d.i++
	for {
		d.space()
		switch d.s[d.i] {
		case ']':
			d.i++
			return true
		case ',':
			d.i++
			d.space()
		}
		if !elem() {
			return false
		}
	}
}

// null reads a null if one is next.
func (d *chunkReader) null() bool {
	if strings.HasPrefix(d.s[d.i:], "null") {
		d.i += 4
		return true
	}
	return false
}

// plainString reads a string without escapes and of valid UTF-8, which
// stands for itself.
func (d *chunkReader) plainString(s *string) bool {
	if d.s[d.i] != '"' {
		return false
	}
	end := strings.IndexByte(d.s[d.i+1:], '"')
	if end < 0 {
		return false
	}
	v := d.s[d.i+1 : d.i+1+end]
	if strings.IndexByte(v, '\\') >= 0 || !utf8.ValidString(v) {
		return false
	}
	*s = v
	d.i += end + 2
	return true
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

// integer reads a plain integer into n (null leaves it).
func (d *chunkReader) integer(n *int) bool {
	if d.null() {
		return true
	}
	j := d.i
	if j < len(d.s) && d.s[j] == '-' {
		j++
	}
	for j < len(d.s) && d.s[j] >= '0' && d.s[j] <= '9' {
		j++
	}
	if j < len(d.s) && (d.s[j] == '.' || d.s[j] == 'e' || d.s[j] == 'E') {
		return false
	}
	v, err := strconv.Atoi(d.s[d.i:j])
	if err != nil {
		return false
	}
	*n, d.i = v, j
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
	d.space()
	switch d.s[d.i] {
	case '{':
		return d.object(func(string) bool { return d.skip() })
	case '[':
		return d.array(d.skip)
	case '"':
		for j := d.i + 1; j < len(d.s); j++ {
			switch d.s[j] {
			case '\\':
				j++
			case '"':
				d.i = j + 1
				return true
			}
		}
		return false
	}
	// A number, true, false or null.
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return true
		}
		d.i++
	}
	return true
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
