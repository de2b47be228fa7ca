package secret

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// Resolver fills references with their values. It is safe for
// concurrent use.
type Resolver struct {
	file      *File
	lookupEnv func(string) (string, bool)
}

// Options configures a Resolver.
type Options struct {
	// LookupEnv reads the environment; default os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// NewResolver returns a Resolver reading ${secret:NAME} from the secrets
// file in the data directory dir ("": no secrets file, every
// ${secret:NAME} is missing). opts may be nil.
func NewResolver(dir string, opts *Options) *Resolver {
	r := &Resolver{lookupEnv: os.LookupEnv}
	if opts != nil && opts.LookupEnv != nil {
		r.lookupEnv = opts.LookupEnv
	}
	if dir != "" {
		r.file = NewFile(dir)
	}
	return r
}

// Expand returns s with its references replaced by their values, and the
// values it put in (so that what a request's answer or error echoes of
// them can be taken out again, see Redact). The secrets file is read at
// most once, and only when s refers to it.
func (r *Resolver) Expand(s string) (string, []Value, error) {
	if !strings.Contains(s, "${") {
		return s, nil, nil
	}
	parts, err := Parse(s)
	if err != nil {
		return "", nil, err
	}
	var b strings.Builder
	var vals []Value
	var file map[string]string
	for _, p := range parts {
		if p.Ref.Kind == "" {
			b.WriteString(p.Text)
			continue
		}
		v, ok := "", false
		switch p.Ref.Kind {
		case KindEnv:
			v, ok = r.lookupEnv(p.Ref.Name)
		case KindSecret:
			if r.file == nil {
				return "", nil, fmt.Errorf("secret: %w: %s (there is no secrets file)", ErrMissing, p.Ref)
			}
			if file == nil {
				if file, err = r.file.Load(); err != nil {
					return "", nil, err
				}
			}
			v, ok = file[p.Ref.Name]
		}
		if !ok {
			return "", nil, fmt.Errorf("secret: %w: %s", ErrMissing, p.Ref)
		}
		b.WriteString(v)
		vals = append(vals, Value{Ref: p.Ref, value: v})
	}
	return b.String(), vals, nil
}

// Value is a reference with the value it had.
type Value struct {
	Ref   Ref
	value string
}

// Redact replaces every value of vals in s with its reference, so that
// a server echoing a header, or an error quoting a request, shows
// "${secret:TOKEN}" rather than the token.
// Longer values go first, so that one holding another is replaced whole.
func Redact(s string, vals []Value) string {
	vals = slices.Clone(vals)
	slices.SortFunc(vals, func(a, b Value) int { return len(b.value) - len(a.value) })
	for _, v := range vals {
		if v.value != "" {
			s = strings.ReplaceAll(s, v.value, v.Ref.String())
		}
	}
	return s
}
