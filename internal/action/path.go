package action

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// errPath is wrapped by the errors of parsePath.
var errPath = errors.New("bad path")

// step is one step of a path: a member name, or an index when name is ""
// (and index ≥ 0).
type step struct {
	name  string
	index int
}

// path is a small JSON path: "data.items[0].name", or the same after "$."
// ("$" or "" alone is the whole value). It is how extract names a part of
// a response and how templates name an argument.
type path []step

// parsePath parses a path. A member name is letters, digits, '_', '-' and
// any other character but '.', '[', ']', '{', '}' and white space; an
// index is a non-negative integer in brackets.
func parsePath(s string) (path, error) {
	in := s
	switch {
	case s == "$":
		return path{}, nil
	case strings.HasPrefix(s, "$."):
		s = s[2:]
	case strings.HasPrefix(s, "$["):
		s = s[1:]
	case s == "":
		return nil, fmt.Errorf("%w: empty", errPath)
	}
	var p path
	for first := true; s != ""; first = false {
		switch {
		case s[0] == '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, fmt.Errorf("%w: %q: '[' is not closed", errPath, in)
			}
			digits := s[1:end]
			n, err := strconv.Atoi(digits)
			if err != nil || len(digits) > 9 || strings.Trim(digits, "0123456789") != "" {
				return nil, fmt.Errorf("%w: %q: [%s] is not an index (0, 1, …)", errPath, in, s[1:end])
			}
			p = append(p, step{index: n})
			s = s[end+1:]
			continue
		case !first:
			if s[0] != '.' {
				return nil, fmt.Errorf("%w: %q: want '.' or '[' after %q", errPath, in, in[:len(in)-len(s)])
			}
			s = s[1:]
		}
		n := strings.IndexFunc(s, func(r rune) bool { return strings.ContainsRune(".[]{} \t\r\n", r) })
		if n < 0 {
			n = len(s)
		}
		if n == 0 {
			return nil, fmt.Errorf("%w: %q: a name is missing", errPath, in)
		}
		p = append(p, step{name: s[:n], index: -1})
		s = s[n:]
	}
	return p, nil
}

// String is the path as written, without "$.".
func (p path) String() string {
	var b strings.Builder
	for i, st := range p {
		switch {
		case st.index >= 0:
			fmt.Fprintf(&b, "[%d]", st.index)
		case i > 0:
			b.WriteString("." + st.name)
		default:
			b.WriteString(st.name)
		}
	}
	if b.Len() == 0 {
		return "$"
	}
	return b.String()
}

// lookup returns the part of v (as encoding/json decodes into any) the
// path names.
func (p path) lookup(v any) (any, bool) {
	for _, st := range p {
		switch x := v.(type) {
		case map[string]any:
			if st.index >= 0 {
				return nil, false
			}
			if v = x[st.name]; v == nil {
				if _, ok := x[st.name]; !ok {
					return nil, false
				}
			}
		case []any:
			if st.index < 0 || st.index >= len(x) {
				return nil, false
			}
			v = x[st.index]
		default:
			return nil, false
		}
	}
	return v, true
}
