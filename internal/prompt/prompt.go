// Package prompt fills prompt templates: text with {{name}} references
// that a command's arguments or a job's variables replace. It is not a
// template language — no conditions, loops or calls — so that a template
// written by a person or an agent can only ever produce text, and the
// references a template makes can be listed and checked when the row that
// holds it is saved.
package prompt

import (
	"strings"
)

// A reference is "{{", optional ASCII spaces, a name, optional spaces, "}}". A
// name is letters, digits and '_', in parts joined by single dots
// (payload.repo). Anything else between braces is text as written.

// space is what may surround a reference's name: ASCII white space.
const space = " \t\n\f\r"

// Refs returns the names a template refers to, each once, in the order of
// their first reference.
func Refs(tmpl string) []string {
	var out []string
	seen := map[string]bool{}
	scan(tmpl, func(text string, name string) {
		if name != "" && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	})
	return out
}

// Fill returns the template with each reference replaced by vars' value
// for its name; a reference vars has no value for is left as written.
// Values are inserted as they are: a value that holds "{{x}}" is not
// filled again.
func Fill(tmpl string, vars func(name string) (string, bool)) string {
	var b strings.Builder
	scan(tmpl, func(text, name string) {
		if name == "" {
			b.WriteString(text)
			return
		}
		if v, ok := vars(name); ok {
			b.WriteString(v)
		} else {
			b.WriteString(text)
		}
	})
	return b.String()
}

// scan calls f for each piece of tmpl in order: text (name "") or a
// reference (text is the reference as written).
func scan(tmpl string, f func(text, name string)) {
	for tmpl != "" {
		i := strings.Index(tmpl, "{{")
		if i < 0 {
			f(tmpl, "")
			return
		}
		j := strings.Index(tmpl[i+2:], "}}")
		if j < 0 {
			f(tmpl, "")
			return
		}
		end := i + 2 + j + 2
		name := strings.Trim(tmpl[i+2:i+2+j], space)
		if !ValidName(name) {
			// Not a reference: the braces are text; look again after
			// the first one, so that "{{{x}}" still finds {{x}}.
			f(tmpl[:i+1], "")
			tmpl = tmpl[i+1:]
			continue
		}
		if i > 0 {
			f(tmpl[:i], "")
		}
		f(tmpl[i:end], name)
		tmpl = tmpl[end:]
	}
}

// ValidName reports whether s may be a reference's name: parts of
// letters, digits and '_' (not starting with a digit) joined by single
// dots, at most 64 bytes.
func ValidName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for part := range strings.SplitSeq(s, ".") {
		if part == "" || part[0] >= '0' && part[0] <= '9' {
			return false
		}
		for _, c := range []byte(part) {
			if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
				return false
			}
		}
	}
	return true
}
