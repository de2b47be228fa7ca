package wire

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"

	"agentd/internal/jsonstr"
	"agentd/internal/model"
)

// Body is a JSON request body built field by field, written as
// encoding/json writes a map: keys in sorted order, values without HTML
// escaping. The clients write the parts every request carries (messages,
// tools) by hand and take each message's and tool's encoding from its
// model.Encoded when it has one; the rest (numbers, stop sequences, a
// request's extra fields) goes through encoding/json.
type Body struct {
	fields []field
}

type field struct {
	key string
	val []byte
}

// Set sets key to val, a JSON value, replacing any value it had.
func (b *Body) Set(key string, val []byte) {
	for i := range b.fields {
		if b.fields[i].key == key {
			b.fields[i].val = val
			return
		}
	}
	b.fields = append(b.fields, field{key, val})
}

// SetValue sets key to v encoded by encoding/json without HTML escaping.
func (b *Body) SetValue(key string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Set(key, bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return nil
}

// SetFloat sets key to f as encoding/json writes a float64.
func (b *Body) SetFloat(key string, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	b.Set(key, AppendFloat(nil, f))
	return nil
}

// Delete removes key.
func (b *Body) Delete(key string) {
	b.fields = slices.DeleteFunc(b.fields, func(f field) bool { return f.key == key })
}

// Bytes returns the body.
func (b *Body) Bytes() []byte {
	slices.SortFunc(b.fields, func(x, y field) int { return strings.Compare(x.key, y.key) })
	n := 2
	for _, f := range b.fields {
		n += len(f.key) + len(f.val) + 4
	}
	out := make([]byte, 0, n)
	out = append(out, '{')
	for i, f := range b.fields {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendKey(out, f.key)
		out = append(out, f.val...)
	}
	return append(out, '}')
}

// AppendFloat appends f as encoding/json writes a finite float64: like
// strconv's shortest form, with exponents only for very small and very
// large values, and two-digit negative exponents without a leading zero.
func AppendFloat(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// AppendList appends a JSON array of each of items' encodings: the one
// kept in its model.Encoded (cache) for format, or one made by encode and
// then kept there.
func AppendList[T any](dst []byte, items []T, format string, cache func(*T) *model.Encoded,
	encode func(dst []byte, it *T) ([]byte, error)) ([]byte, error) {
	dst = append(dst, '[')
	for i := range items {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = AppendCached(dst, &items[i], format, cache(&items[i]), encode); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

// AppendCached appends it's encoding for format: the one kept in c, or one
// made by encode and then kept in c (when c is not nil).
func AppendCached[T any](dst []byte, it *T, format string, c *model.Encoded, encode func(dst []byte, it *T) ([]byte, error)) ([]byte, error) {
	if b := c.Get(format); b != nil {
		return append(dst, b...), nil
	}
	start := len(dst)
	dst, err := encode(dst, it)
	if err != nil {
		return nil, err
	}
	if c != nil {
		c.Put(format, bytes.Clone(dst[start:]))
	}
	return dst, nil
}

// MessageSize is about the size of m's encoding for format: exact when
// one is kept, and a little more than its text otherwise.
func MessageSize(m *model.Message, format string) int {
	if b := m.Wire.Get(format); b != nil {
		return len(b) + 1
	}
	n := len(m.Content) + len(m.ToolCallID) + 64
	for _, tc := range m.ToolCalls {
		n += len(tc.ID) + len(tc.Name) + len(tc.Args) + 80
	}
	for _, img := range m.Images {
		n += len(img.Data)*4/3 + 80
	}
	return n + n/16
}

// ToolsSize is about the size of the encoding of tools for format.
func ToolsSize(tools []model.ToolSpec, format string) int {
	n := 2
	for i := range tools {
		t := &tools[i]
		if b := t.Wire.Get(format); b != nil {
			n += len(b) + 1
			continue
		}
		n += len(t.Name) + len(t.Description) + len(t.Parameters) + 80
	}
	return n
}

// AppendSchema appends t's parameters schema, compacted: an empty object
// schema when the tool declares none, and an ErrBadRequest naming the tool
// when they are not valid JSON.
func (e *Endpoint) AppendSchema(dst []byte, t *model.ToolSpec) ([]byte, error) {
	if len(bytes.TrimSpace(t.Parameters)) == 0 {
		return append(dst, emptySchema...), nil
	}
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, t.Parameters); err != nil {
		return nil, e.Fail(model.ErrBadRequest, 0, "tool "+t.Name+": parameters are not valid JSON")
	}
	return buf.Bytes(), nil
}

// appendKey appends a JSON object key and its colon.
func appendKey(dst []byte, k string) []byte {
	return append(jsonstr.Append(dst, k), ':')
}
