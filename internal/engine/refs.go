package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"agentd/internal/event"
)

// Template references let one call of a step use what an earlier call of
// the same step returned: in a call's arguments, {{calls[0].data}} stands
// for the result of the step's first call, {{calls[1].data.items[2].id}}
// and {{calls[0].data["odd key"]}} for parts of it. A result's data is its
// output parsed as JSON when it parses, else the output as a string.
//
// A string that is exactly one reference becomes the value referred to
// (a number stays a number); a reference inside a longer string inserts
// its text (a string as it is, any other value as compact JSON). Text
// with "{{" that does not go on with "calls[" is left alone.
//
// Resolution depends only on the logged results of the step's calls, so
// a turn resumed after a restart resolves a call's references again to
// the same arguments.

// ErrRef is wrapped by every error of a reference the model wrote.
var ErrRef = errors.New("template reference")

// refOpen is what starts a reference, after "{{" and optional spaces.
const refOpen = "calls["

// refSeg is one step of a reference's path into a result's data: an
// object's member (Key) or an array's element (Index, when IsIndex).
type refSeg struct {
	Key     string
	Index   int
	IsIndex bool
}

// ref is a parsed reference: the index of the call it names and the path
// into that call's data.
type ref struct {
	Call int
	Path []refSeg
}

// String is the reference as its canonical text (without the braces).
func (f ref) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "calls[%d].data", f.Call)
	for _, s := range f.Path {
		switch {
		case s.IsIndex:
			fmt.Fprintf(&b, "[%d]", s.Index)
		case isIdent(s.Key):
			b.WriteString("." + s.Key)
		default:
			q, _ := json.Marshal(s.Key)
			b.WriteString("[" + string(q) + "]")
		}
	}
	return b.String()
}

// parseRef parses the inside of a reference's braces: calls[N].data
// followed by .name, [N] and ["key"] steps (a key in the JSON string
// syntax), with spaces allowed around the whole.
func parseRef(s string) (ref, error) {
	var f ref
	p := strings.TrimSpace(s)
	if !strings.HasPrefix(p, refOpen) {
		return f, fmt.Errorf("%w {{%s}}: it must start with calls[", ErrRef, s)
	}
	p = p[len(refOpen):]
	n, rest, ok := parseIndex(p)
	if !ok {
		return f, fmt.Errorf("%w {{%s}}: calls[ must be followed by a call's index and ]", ErrRef, s)
	}
	f.Call = n
	if !strings.HasPrefix(rest, ".data") {
		return f, fmt.Errorf("%w {{%s}}: calls[%d] must be followed by .data", ErrRef, s, n)
	}
	p = rest[len(".data"):]
	for p != "" {
		var seg refSeg
		var err error
		seg, p, err = parseSeg(p)
		if err != nil {
			return f, fmt.Errorf("%w {{%s}}: %v", ErrRef, s, err)
		}
		f.Path = append(f.Path, seg)
	}
	return f, nil
}

// parseIndex reads a non-negative decimal number and the "]" after it.
func parseIndex(p string) (n int, rest string, ok bool) {
	i := 0
	for i < len(p) && p[i] >= '0' && p[i] <= '9' {
		i++
	}
	if i == 0 || i > 9 || i >= len(p) || p[i] != ']' {
		return 0, p, false
	}
	n, _ = strconv.Atoi(p[:i])
	return n, p[i+1:], true
}

// parseSeg reads one path step from the start of p.
func parseSeg(p string) (refSeg, string, error) {
	switch p[0] {
	case '.':
		i := 1
		for i < len(p) && identByte(p[i]) {
			i++
		}
		if i == 1 {
			return refSeg{}, p, fmt.Errorf("a name must follow %q", ".")
		}
		return refSeg{Key: p[1:i]}, p[i:], nil
	case '[':
		if len(p) > 1 && p[1] == '"' {
			end := quoteEnd(p[1:])
			if end < 0 || end+2 >= len(p) || p[end+2] != ']' {
				return refSeg{}, p, errors.New(`a quoted key must be closed with "]`)
			}
			var key string
			if err := json.Unmarshal([]byte(p[1:end+2]), &key); err != nil {
				return refSeg{}, p, fmt.Errorf("bad quoted key %s", p[1:end+2])
			}
			return refSeg{Key: key}, p[end+3:], nil
		}
		n, rest, ok := parseIndex(p[1:])
		if !ok {
			return refSeg{}, p, errors.New(`[ must hold an index or a "quoted key", then ]`)
		}
		return refSeg{Index: n, IsIndex: true}, rest, nil
	}
	return refSeg{}, p, fmt.Errorf("unexpected %q (a path goes on with .name, [index] or [\"key\"])", p[:1])
}

// quoteEnd returns the index in q (which starts with '"') of the quote
// that closes the string, or -1.
func quoteEnd(q string) int {
	for i := 1; i < len(q); i++ {
		switch q[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

func identByte(c byte) bool {
	return c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !identByte(s[i]) {
			return false
		}
	}
	return true
}

// span is a reference found in a string: where it is and what it says.
type span struct {
	start, end int // of the whole "{{…}}"
	ref        ref
}

// findRefs returns the references in s. "{{" not followed (after spaces)
// by "calls[" is text; one that is, but is not a well-formed reference
// closed by "}}", is an error.
func findRefs(s string) ([]span, error) {
	var out []span
	for i := 0; ; {
		j := strings.Index(s[i:], "{{")
		if j < 0 {
			return out, nil
		}
		start := i + j
		inner := s[start+2:]
		if !strings.HasPrefix(strings.TrimLeft(inner, " "), refOpen) {
			i = start + 2
			continue
		}
		k := strings.Index(inner, "}}")
		if k < 0 {
			return nil, fmt.Errorf("%w %q is not closed with }}", ErrRef, clip(s[start:], 60))
		}
		f, err := parseRef(inner[:k])
		if err != nil {
			return nil, err
		}
		out = append(out, span{start: start, end: start + 2 + k + 2, ref: f})
		i = start + 2 + k + 2
	}
}

// clip shortens s to at most n bytes for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// mayRefer reports whether args can hold a reference at all: most calls'
// arguments have no "{{" (nor a \u escape that could spell one), and are
// then used as they are, without decoding.
func mayRefer(args json.RawMessage) bool {
	return bytes.Contains(args, []byte("{{")) || bytes.Contains(args, []byte(`\u`))
}

// argRefs returns the indexes of the calls args refers to (for waiting on
// them); malformed references are left for resolveArgs to report.
func argRefs(args json.RawMessage) []int {
	if !mayRefer(args) {
		return nil
	}
	v, err := decodeArgs(args)
	if err != nil {
		return nil
	}
	var idx []int
	walkStrings(v, func(s string) {
		spans, _ := findRefs(s)
		for _, sp := range spans {
			idx = append(idx, sp.ref.Call)
		}
	})
	return idx
}

// results gives the result of the step's call i, if it has one.
type results func(i int) (event.ToolResultData, bool)

// resolveArgs returns args with the references in its strings resolved
// against the results of the step's calls before own (the index of the
// call args are of). changed is false when args held no reference (it is
// then returned as it is). An error names the reference that failed.
func resolveArgs(args json.RawMessage, own int, get results) (out json.RawMessage, changed bool, err error) {
	if !mayRefer(args) {
		return args, false, nil
	}
	v, err := decodeArgs(args)
	if err != nil {
		return args, false, nil // not JSON: validation tells the model
	}
	data := map[int]any{}
	// Each reference spends its value's size from budget, which each call
	// referred to adds its result's size to once: one result referred to
	// many times cannot make the arguments (and the logged resolved_args)
	// grow without bound.
	budget := len(args) + maxResolvedExtra
	sizes := map[string]int{} // of composite values, by reference
	nv, changed, err := resolveValue(v, func(f ref) (any, error) {
		if f.Call >= own {
			return nil, fmt.Errorf("%w {{%s}}: a call may refer only to calls before it in the step (this is calls[%d])", ErrRef, f, own)
		}
		d, seen := data[f.Call]
		if !seen {
			res, ok := get(f.Call)
			switch {
			case !ok:
				return nil, fmt.Errorf("%w {{%s}}: the step has no calls[%d]", ErrRef, f, f.Call)
			case res.IsError:
				return nil, fmt.Errorf("%w {{%s}}: calls[%d] (%s) failed: %s", ErrRef, f, f.Call, res.Name, clip(res.Output, 200))
			}
			d = resultData(res.Output)
			data[f.Call] = d
			budget += len(res.Output)
		}
		v, err := walkPath(d, f)
		if err != nil {
			return nil, err
		}
		if budget -= valueSize(v, f, sizes); budget < 0 {
			return nil, fmt.Errorf("%w {{%s}}: the references make the arguments too large (more than the results they refer to, each once, and %d KiB)", ErrRef, f, maxResolvedExtra>>10)
		}
		return v, nil
	})
	if err != nil || !changed {
		return args, false, err
	}
	b, err := json.Marshal(nv)
	if err != nil {
		return args, false, fmt.Errorf("%w: encode the resolved arguments: %v", ErrRef, err)
	}
	return b, true, nil
}

// maxResolvedExtra is how many bytes resolving a call's references may
// add to its arguments beyond the results they refer to, each once.
const maxResolvedExtra = 1 << 20

// valueSize is about how many bytes v adds to the arguments it is put
// in: a string's or a number's length, a composite's JSON length (known
// by f in sizes once computed).
func valueSize(v any, f ref, sizes map[string]int) int {
	switch x := v.(type) {
	case string:
		return len(x)
	case json.Number:
		return len(x)
	case nil, bool:
		return 5
	}
	k := f.String()
	n, ok := sizes[k]
	if !ok {
		b, _ := json.Marshal(v)
		n = len(b)
		sizes[k] = n
	}
	return n
}

// decodeArgs decodes JSON arguments keeping numbers as they were written.
func decodeArgs(args json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// resultData is what a result's data is: its output as JSON when it
// parses, else the output itself.
func resultData(output string) any {
	if !json.Valid([]byte(output)) {
		return output
	}
	v, err := decodeArgs(json.RawMessage(output))
	if err != nil {
		return output
	}
	return v
}

// walkStrings calls f with every string value in v (not object keys).
func walkStrings(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case []any:
		for _, e := range x {
			walkStrings(e, f)
		}
	case map[string]any:
		for _, e := range x {
			walkStrings(e, f)
		}
	}
}

// resolveValue returns v with the references in its strings replaced by
// what lookup returns for them.
func resolveValue(v any, lookup func(ref) (any, error)) (any, bool, error) {
	switch x := v.(type) {
	case string:
		return resolveString(x, lookup)
	case []any:
		changed := false
		for i, e := range x {
			n, c, err := resolveValue(e, lookup)
			if err != nil {
				return nil, false, err
			}
			x[i], changed = n, changed || c
		}
		return x, changed, nil
	case map[string]any:
		changed := false
		for k, e := range x {
			n, c, err := resolveValue(e, lookup)
			if err != nil {
				return nil, false, err
			}
			x[k], changed = n, changed || c
		}
		return x, changed, nil
	}
	return v, false, nil
}

// resolveString resolves the references in s: a string that is exactly
// one becomes the value; others insert their text.
func resolveString(s string, lookup func(ref) (any, error)) (any, bool, error) {
	spans, err := findRefs(s)
	if err != nil || len(spans) == 0 {
		return s, false, err
	}
	if len(spans) == 1 && spans[0].start == 0 && spans[0].end == len(s) {
		v, err := lookup(spans[0].ref)
		return v, err == nil, err
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		v, err := lookup(sp.ref)
		if err != nil {
			return nil, false, err
		}
		b.WriteString(s[last:sp.start])
		if str, ok := v.(string); ok {
			b.WriteString(str)
		} else {
			j, _ := json.Marshal(v)
			b.Write(j)
		}
		last = sp.end
	}
	b.WriteString(s[last:])
	return b.String(), true, nil
}

// walkPath follows f's path into d. The place it reached is written out
// only for an error: writing it at each step would cost the square of
// the path's depth.
func walkPath(d any, f ref) (any, error) {
	for i, s := range f.Path {
		at := func() string { return ref{Call: f.Call, Path: f.Path[:i]}.String() }
		switch x := d.(type) {
		case map[string]any:
			if s.IsIndex {
				return nil, fmt.Errorf("%w {{%s}}: %s is an object, not an array", ErrRef, f, at())
			}
			v, ok := x[s.Key]
			if !ok {
				return nil, fmt.Errorf("%w {{%s}}: %s has no member %q", ErrRef, f, at(), s.Key)
			}
			d = v
		case []any:
			if !s.IsIndex {
				return nil, fmt.Errorf("%w {{%s}}: %s is an array, not an object", ErrRef, f, at())
			}
			if s.Index >= len(x) {
				return nil, fmt.Errorf("%w {{%s}}: %s has %d elements", ErrRef, f, at(), len(x))
			}
			d = x[s.Index]
		default:
			return nil, fmt.Errorf("%w {{%s}}: %s is %s, which has no members", ErrRef, f, at(), jsonKind(d))
		}
	}
	return d, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// stepRefs is what the calls of one runTools resolve their references
// against: the results of the calls running beside them, each known when
// its done channel is closed, and the results of calls of the same step
// logged before a restart (run.priorResults).
type stepRefs struct {
	r     *run
	calls []pendingCall
	done  []chan struct{}
	res   []event.ToolResultData
	ok    []bool
}

func newStepRefs(r *run, calls []pendingCall) *stepRefs {
	s := &stepRefs{r: r, calls: calls, done: make([]chan struct{}, len(calls)),
		res: make([]event.ToolResultData, len(calls)), ok: make([]bool, len(calls))}
	for i := range s.done {
		s.done[i] = make(chan struct{})
	}
	return s
}

// finish records the result of calls[i] (ok false: it has none) and lets
// the calls that refer to it go on.
func (s *stepRefs) finish(i int, res event.ToolResultData, ok bool) {
	s.res[i], s.ok[i] = res, ok
	close(s.done[i])
}

// find returns the position in s.calls of the call of step at index.
func (s *stepRefs) find(step, index int) (int, bool) {
	for j := range s.calls {
		if s.calls[j].Step == step && s.calls[j].index == index {
			return j, true
		}
	}
	return 0, false
}

// wait waits until the calls that calls[i] refers to have finished; false
// if ctx ended first. A call refers only to calls before it, so waits
// never go round in a circle.
func (s *stepRefs) wait(ctx context.Context, i int) bool {
	c := &s.calls[i]
	for _, n := range argRefs(c.Args) {
		j, ok := s.find(c.Step, n)
		if !ok || n >= c.index {
			continue // logged before a restart, or an error resolveArgs reports
		}
		select {
		case <-s.done[j]:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// resolve returns calls[i]'s arguments with their references resolved.
func (s *stepRefs) resolve(i int) (json.RawMessage, bool, error) {
	c := &s.calls[i]
	return resolveArgs(c.Args, c.index, func(n int) (event.ToolResultData, bool) {
		if j, ok := s.find(c.Step, n); ok {
			return s.res[j], s.ok[j]
		}
		res, ok := s.r.priorResults[[2]int{c.Step, n}]
		return res, ok
	})
}
