package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"agentd/internal/xmlproto"
)

// WorkingBudget bounds the bytes of working memory shown to the model
// each step; the keys past it are named by number and size only.
const WorkingBudget = 4 << 10

// stepState is what the model is shown of the turn's state in one step:
// the context instance (its instructions and renders) and the session's
// working memory. It is made once per step (refreshState), because the
// system prompt is built several times a step (sizing, compaction, the
// request). Only the turn's own goroutine reads and writes it.
type stepState struct {
	sections []xmlproto.Section // as the XML protocol shows it
	native   string             // as the native protocol's system prompt shows it
}

// stateSections are what the model is shown of the turn's state each
// step: the context instance's instructions and renders, then the
// session's working memory (budgeted). The native protocol renders them
// as sections of the system prompt, the XML protocol as elements.
func (r *run) stateSections() []xmlproto.Section {
	return r.state.sections
}

// refreshState reads the turn's state for the step about to be made: the
// context instance prepared again (a tool may have changed its state)
// and the session's working memory. A context that fails to prepare ends
// the turn; working memory that cannot be read is left out, and logged.
func (r *run) refreshState(ctx context.Context) error {
	if err := r.refreshContext(ctx); err != nil {
		return err
	}
	var wm map[string]json.RawMessage
	if r.e.o.Working != nil {
		var err error
		if wm, err = r.e.o.Working(ctx, r.t.Session.ID); err != nil {
			r.e.o.Logger.Warn("working memory left out of the prompt", "session", r.t.Session.Address(), "err", err)
		}
	}
	r.state = renderState(r.ctxView, wm, WorkingBudget)
	return nil
}

// renderState renders a context instance (nil: none) and working memory
// for both protocols.
func renderState(v *ContextView, wm map[string]json.RawMessage, budget int) stepState {
	var s stepState
	var nb strings.Builder
	if v != nil {
		for i, c := range v.Renders {
			body := xmlText.Replace(c.Text)
			if i == 0 && v.Instructions != "" {
				body = "<instructions>" + xmlText.Replace(v.Instructions) + "</instructions>\n" + body
			}
			// Native: the same element under a heading of agentd's, its
			// body escaped so that nothing in it can close it — a line in
			// a render that looks like one of agentd's headings stays
			// inside the context it came from.
			nb.WriteString("\n\n# Context " + Neutralise(contextName(c.Type, c.Key)) + "\n\n")
			nb.WriteString("<context type=\"" + xmlAttr.Replace(c.Type) + "\" key=\"" + xmlAttr.Replace(c.Key) + "\">\n" + body + "\n</context>\n")
			s.sections = append(s.sections, xmlproto.Section{Tag: "context", Body: body, Raw: true,
				Attrs: []xmlproto.Attr{{Name: "type", Value: c.Type}, {Name: "key", Value: c.Key}}})
		}
	}
	if lines := workingLines(wm, budget); lines != "" {
		nb.WriteString("\n\n# Working memory (wm_set changes a key, wm_delete removes one)\n\n")
		nb.WriteString(Neutralise(lines))
		nb.WriteString("\n")
		s.sections = append(s.sections, xmlproto.Section{Tag: "working_memory", Body: lines})
	}
	s.native = nb.String()
	return s
}

// contextName is how a context instance is named to the model: its key,
// prefixed with its type unless the key starts with it ("chat:alice").
func contextName(typ, key string) string {
	if key == "" || strings.HasPrefix(key, typ+":") {
		return cmp.Or(key, typ)
	}
	return typ + ":" + key
}

// xmlText escapes text for an XML element's body, xmlAttr for an
// attribute's value in double quotes.
var (
	xmlText = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	xmlAttr = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "\n", "&#10;", "\r", "&#13;")
)

// workingLines renders working memory as "key: value" lines, keys sorted,
// values as compact JSON (so a value's new lines cannot pass for keys),
// up to budget bytes; the rest is named in a last line. Keys that begin
// with "_" are agentd's own (a context's state) and are left out.
func workingLines(wm map[string]json.RawMessage, budget int) string {
	keys := make([]string, 0, len(wm))
	for k := range wm {
		if !strings.HasPrefix(k, "_") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		line := workingLine(k, wm[k])
		if b.Len()+len(line) > budget {
			n := 0
			for _, k := range keys[i:] {
				n += len(workingLine(k, wm[k]))
			}
			fmt.Fprintf(&b, "%d more %s (%s bytes) left out; wm_get reads a key", len(keys)-i, plural(len(keys)-i, "key", "keys"), thousands(n))
			break
		}
		b.WriteString(line)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func workingLine(k string, v json.RawMessage) string {
	var c bytes.Buffer
	if json.Compact(&c, v) != nil {
		c.Reset()
		q, _ := json.Marshal(string(v))
		c.Write(q)
	}
	q := strconv.Quote(k) // a key's own new lines and quotes escaped
	return q[1:len(q)-1] + ": " + c.String() + "\n"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
