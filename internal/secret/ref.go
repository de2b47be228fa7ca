// Package secret resolves the secret references extension documents hold
// in place of secrets: ${env:NAME} (the process environment) and
// ${secret:NAME} (the data directory's secrets file, secrets.env). A row
// stores the reference, never the value; the value is read when a call
// needs it and goes no further than the request it is put in, so it is
// never in a row, an event or a log.
package secret

import (
	"errors"
	"fmt"
	"strings"
)

// Kinds of reference.
const (
	KindEnv    = "env"    // ${env:NAME}: the process environment
	KindSecret = "secret" // ${secret:NAME}: the secrets file
)

// Errors.
var (
	// ErrSyntax: a text holds a "${" that does not start a valid
	// reference.
	ErrSyntax = errors.New("bad secret reference")
	// ErrMissing: a reference names a secret that is not set. The error
	// names the reference, never a value.
	ErrMissing = errors.New("secret not set")
)

// Ref is one reference: ${Kind:Name}.
type Ref struct {
	Kind string
	Name string
}

// String is the reference as written: "${secret:GITHUB_TOKEN}".
func (r Ref) String() string { return "${" + r.Kind + ":" + r.Name + "}" }

// Part is a piece of a text: literal text, or a reference when Ref.Kind
// is set.
type Part struct {
	Text string
	Ref  Ref
}

// ValidName reports whether name may name a secret: a letter or '_', then
// letters, digits and '_' (an environment variable's name), at most 128.
func ValidName(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Parse splits s into literal text and references. "$${" is a literal
// "${"; any other "${" must start ${env:NAME} or ${secret:NAME}, or s is
// refused with an error wrapping ErrSyntax that says where. A "$" not
// followed by "{" is literal.
func Parse(s string) ([]Part, error) {
	var parts []Part
	var lit strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			lit.WriteString(s)
			break
		}
		if i > 0 && s[i-1] == '$' { // "$${": an escaped "${"
			lit.WriteString(s[:i-1])
			lit.WriteString("${")
			s = s[i+2:]
			continue
		}
		lit.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return nil, fmt.Errorf("%w: %q is not closed with '}'", ErrSyntax, clip(s[i:]))
		}
		ref, err := parseRef(s[i+2 : i+end])
		if err != nil {
			return nil, err
		}
		if lit.Len() > 0 {
			parts = append(parts, Part{Text: lit.String()})
			lit.Reset()
		}
		parts = append(parts, Part{Ref: ref})
		s = s[i+end+1:]
	}
	if lit.Len() > 0 {
		parts = append(parts, Part{Text: lit.String()})
	}
	return parts, nil
}

// parseRef parses what is between "${" and "}".
func parseRef(in string) (Ref, error) {
	kind, name, ok := strings.Cut(in, ":")
	switch {
	case !ok || kind != KindEnv && kind != KindSecret:
		return Ref{}, fmt.Errorf("%w: ${%s}: want ${env:NAME} or ${secret:NAME} (write $${ for a literal ${)", ErrSyntax, clip(in))
	case !ValidName(name):
		return Ref{}, fmt.Errorf("%w: ${%s}: a name is letters, digits and '_', not starting with a digit", ErrSyntax, clip(in))
	}
	return Ref{Kind: kind, Name: name}, nil
}

// clip shortens what an error quotes from a text.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// Refs returns the references s holds, or the error Parse gives.
func Refs(s string) ([]Ref, error) {
	parts, err := Parse(s)
	if err != nil {
		return nil, err
	}
	var refs []Ref
	for _, p := range parts {
		if p.Ref.Kind != "" {
			refs = append(refs, p.Ref)
		}
	}
	return refs, nil
}
