// Package schema validates JSON documents against JSON Schemas of the
// subset agentd's extension types are written in, reporting every problem
// with its JSON pointer, where a general validator stops at the first.
//
// The subset (JSON Schema 2020-12 keywords):
//
//   - type (a name or a list of names; "integer" is a number with no
//     fraction), enum, const;
//   - properties, required, additionalProperties (true, false or a schema),
//     patternProperties, propertyNames, minProperties, maxProperties;
//   - items (one schema for every item), minItems, maxItems, uniqueItems;
//   - minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers),
//     multipleOf;
//   - minLength, maxLength (counted in code points), pattern;
//   - $defs (at the root only) and $ref to "#/$defs/<name>" (or "#");
//   - allOf, anyOf, oneOf, not, if/then/else;
//   - true and false as schemas.
//
// $schema, $id, $comment, title, description, default, examples,
// deprecated, readOnly, writeOnly, format and any keyword starting with
// "x-" are annotations and never change a verdict (format is not
// checked). Any other keyword is a Compile error, so a schema never
// silently relies on something this package does not enforce.
//
// Patterns are RE2 (package regexp) and unanchored, as in JSON Schema. The
// console checks the same schemas in JavaScript (static/schema.js, with
// the "u" flag), so a pattern must mean the same in both: Compile refuses
// RE2-only syntax (flag groups such as (?i), named groups (?P<n>), \A, \z,
// \Q…\E, \C, [[:alpha:]] classes, one-letter \pL classes, lookaround
// and back references, escapes JavaScript lacks, a literal {, } or ]).
// Write \p{L} rather than \pL. \s matches more in JavaScript (Unicode
// spaces) and "." less (not \r nor U+2028/U+2029): prefer [ \t\n\r] and
// [^\n] where it matters.
//
// Messages are plain English ("must be a string", "is required", "must be
// at most 64 characters long"), each under the JSON pointer (RFC 6901) of
// the value it is about. For anyOf and oneOf, when no branch matches, the
// errors are those of the branch that got furthest into the value, or one
// error saying which shapes were allowed.
package schema

import (
	"errors"
	"strings"
)

// ErrInvalidSchema is returned (wrapped) by Compile for a schema outside
// the subset or malformed.
var ErrInvalidSchema = errors.New("invalid schema")

// Error is one problem of a document: where (a JSON pointer into the
// document, "" for its root) and what, in plain words.
type Error struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// String is "pointer: message" ("/spec/url: must be a string").
func (e Error) String() string {
	if e.Pointer == "" {
		return "/: " + e.Message
	}
	return e.Pointer + ": " + e.Message
}

// Under returns errs with prefix (a JSON pointer) put before each pointer.
func Under(prefix string, errs []Error) []Error {
	out := make([]Error, len(errs))
	for i, e := range errs {
		out[i] = Error{Pointer: prefix + e.Pointer, Message: e.Message}
	}
	return out
}

// Escape escapes a property name for a JSON pointer (RFC 6901).
func Escape(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// Schema is a compiled schema. It is immutable and safe for concurrent
// use.
type Schema struct {
	root *node
}

// Validate returns every problem of v (as encoding/json decodes into
// any; numbers may be float64 or json.Number), nil when there is none.
func (s *Schema) Validate(v any) []Error {
	var errs []Error
	s.root.validate(v, "", &errs)
	return dedupe(errs)
}

// dedupe drops repeated errors (two allOf branches requiring the same
// property), keeping the first of each.
func dedupe(errs []Error) []Error {
	if len(errs) < 2 {
		return errs
	}
	seen := make(map[Error]bool, len(errs))
	out := errs[:0]
	for _, e := range errs {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}
