package action

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// errTemplate is wrapped by the errors of parseTemplate.
var errTemplate = errors.New("bad template")

// piece is a piece of a template: literal text, or a reference when ref
// is not nil.
type piece struct {
	text string
	ref  path
}

// template is a text with {{name}} / {{a.b}} / {{a.items[0]}} references.
type template []piece

// parseTemplate parses s. Every "{{" starts a reference closed by "}}";
// spaces inside the braces are allowed.
func parseTemplate(s string) (template, error) {
	var t template
	for s != "" {
		i := strings.Index(s, "{{")
		if i < 0 {
			t = append(t, piece{text: s})
			break
		}
		if i > 0 {
			t = append(t, piece{text: s[:i]})
		}
		end := strings.Index(s[i:], "}}")
		if end < 0 {
			return nil, fmt.Errorf("%w: %q is not closed with }}", errTemplate, clip(s[i:]))
		}
		ref := strings.TrimSpace(s[i+2 : i+end])
		p, err := parsePath(ref)
		if err != nil {
			return nil, fmt.Errorf("%w: {{%s}}: %v", errTemplate, clip(ref), err)
		}
		if len(p) == 0 {
			return nil, fmt.Errorf("%w: {{%s}} names no argument", errTemplate, ref)
		}
		t = append(t, piece{ref: p})
		s = s[i+end+2:]
	}
	return t, nil
}

// clip shortens what an error quotes.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// whole returns the reference when the template is one reference and
// nothing else ("{{count}}").
func (t template) whole() (path, bool) {
	if len(t) == 1 && t[0].ref != nil {
		return t[0].ref, true
	}
	return nil, false
}

// refs returns the template's references.
func (t template) refs() []path {
	var out []path
	for _, p := range t {
		if p.ref != nil {
			out = append(out, p.ref)
		}
	}
	return out
}

// fill writes the template with each reference replaced by the text of
// what it names in v, passed through esc (nil: as is). A reference to
// nothing is empty text.
func (t template) fill(b *strings.Builder, v any, esc func(string) string) {
	for _, p := range t {
		if p.ref == nil {
			b.WriteString(p.text)
			continue
		}
		x, _ := p.ref.lookup(v)
		s := text(x)
		if esc != nil {
			s = esc(s)
		}
		b.WriteString(s)
	}
}

// String fills the template without escaping.
func (t template) String(v any) string {
	var b strings.Builder
	t.fill(&b, v, nil)
	return b.String()
}

// text is a JSON value as text: a string as it is, a number or a boolean
// as JSON writes it, null as nothing, an object or array as compact JSON.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
