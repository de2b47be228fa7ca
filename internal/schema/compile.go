package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// node is one compiled schema (or subschema).
type node struct {
	never bool   // the schema false: nothing matches
	title string // for messages naming the shapes of anyOf and oneOf

	types []string // allowed JSON types; nil: any

	enum     []any
	hasEnum  bool
	constVal any
	hasConst bool

	minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf *float64

	minLength, maxLength *int
	pattern              *regexp.Regexp

	items              *node
	minItems, maxItems *int
	uniqueItems        bool

	properties                   map[string]*node
	required                     []string
	additional                   *node // nil: any other property is allowed
	patternProperties            []patternProperty
	propertyNames                *node
	minProperties, maxProperties *int

	ref                    *node
	allOf, anyOf, oneOf    []*node
	not, ifS, thenS, elseS *node
}

type patternProperty struct {
	re     *regexp.Regexp
	schema *node
}

// annotations are keywords that never change a verdict.
var annotations = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "title": true, "description": true, "default": true,
	"examples": true, "deprecated": true, "readOnly": true, "writeOnly": true, "format": true,
}

// typeNames are the names "type" accepts.
var typeNames = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// compiler holds what compiling one schema needs: the root and its $defs,
// which "$ref" points at.
type compiler struct {
	root *node
	defs map[string]*node
}

// Compile compiles a schema; a keyword outside the subset is an error
// (ErrInvalidSchema) naming where it is.
func Compile(raw []byte) (*Schema, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("schema: %w: %v", ErrInvalidSchema, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("schema: %w: text after the schema", ErrInvalidSchema)
	}
	c := &compiler{root: new(node), defs: map[string]*node{}}
	if err := c.compileRoot(v); err != nil {
		return nil, err
	}
	if err := checkCycles(c.root); err != nil {
		return nil, err
	}
	return &Schema{root: c.root}, nil
}

func (c *compiler) compileRoot(v any) error {
	if m, ok := v.(map[string]any); ok {
		if d, ok := m["$defs"]; ok {
			dm, ok := d.(map[string]any)
			if !ok {
				return schemaError("/$defs", "must be an object")
			}
			for name := range dm {
				c.defs[name] = new(node)
			}
			for _, name := range sortedKeys(dm) {
				n, err := c.compile(dm[name], "/$defs/"+Escape(name))
				if err != nil {
					return err
				}
				*c.defs[name] = *n
			}
		}
	}
	n, err := c.compile(v, "")
	if err != nil {
		return err
	}
	*c.root = *n
	return nil
}

func schemaError(ptr, format string, args ...any) error {
	if ptr == "" {
		ptr = "/"
	}
	return fmt.Errorf("schema: %w: %s: %s", ErrInvalidSchema, ptr, fmt.Sprintf(format, args...))
}

// compile compiles the schema v found at ptr (a JSON pointer into the
// schema, for errors).
func (c *compiler) compile(v any, ptr string) (*node, error) {
	switch v := v.(type) {
	case bool:
		return &node{never: !v}, nil
	case map[string]any:
		n := new(node)
		for _, k := range sortedKeys(v) {
			if err := c.keyword(n, k, v[k], ptr); err != nil {
				return nil, err
			}
		}
		return n, nil
	}
	return nil, schemaError(ptr, "a schema must be an object, true or false")
}

// keyword compiles one keyword of an object schema into n.
func (c *compiler) keyword(n *node, k string, v any, ptr string) error {
	at := ptr + "/" + Escape(k)
	var err error
	switch k {
	case "title":
		n.title, _ = v.(string)
	case "$defs":
		if ptr != "" {
			return schemaError(at, "$defs is allowed at the root only")
		}
	case "$ref":
		n.ref, err = c.refTarget(v, at)
	case "type":
		n.types, err = compileTypes(v, at)
	case "enum":
		arr, ok := v.([]any)
		if !ok || len(arr) == 0 {
			return schemaError(at, "must be a non-empty array")
		}
		n.enum, n.hasEnum = arr, true
	case "const":
		n.constVal, n.hasConst = v, true
	case "minimum":
		n.minimum, err = number(v, at)
	case "maximum":
		n.maximum, err = number(v, at)
	case "exclusiveMinimum":
		n.exclusiveMinimum, err = number(v, at)
	case "exclusiveMaximum":
		n.exclusiveMaximum, err = number(v, at)
	case "multipleOf":
		if n.multipleOf, err = number(v, at); err == nil && *n.multipleOf <= 0 {
			err = schemaError(at, "must be greater than 0")
		}
	case "minLength":
		n.minLength, err = count(v, at)
	case "maxLength":
		n.maxLength, err = count(v, at)
	case "minItems":
		n.minItems, err = count(v, at)
	case "maxItems":
		n.maxItems, err = count(v, at)
	case "minProperties":
		n.minProperties, err = count(v, at)
	case "maxProperties":
		n.maxProperties, err = count(v, at)
	case "uniqueItems":
		b, ok := v.(bool)
		if !ok {
			return schemaError(at, "must be true or false")
		}
		n.uniqueItems = b
	case "pattern":
		n.pattern, err = compilePattern(v, at)
	case "required":
		n.required, err = stringList(v, at)
	case "properties":
		n.properties, err = c.schemaMap(v, at)
	case "patternProperties":
		n.patternProperties, err = c.patternProperties(v, at)
	case "additionalProperties":
		n.additional, err = c.compile(v, at)
	case "propertyNames":
		n.propertyNames, err = c.compile(v, at)
	case "items":
		n.items, err = c.compile(v, at)
	case "not":
		n.not, err = c.compile(v, at)
	case "if":
		n.ifS, err = c.compile(v, at)
	case "then":
		n.thenS, err = c.compile(v, at)
	case "else":
		n.elseS, err = c.compile(v, at)
	case "allOf":
		n.allOf, err = c.schemaList(v, at)
	case "anyOf":
		n.anyOf, err = c.schemaList(v, at)
	case "oneOf":
		n.oneOf, err = c.schemaList(v, at)
	default:
		if !annotations[k] && !strings.HasPrefix(k, "x-") {
			return schemaError(at, "keyword %q is not supported", k)
		}
	}
	return err
}

func (c *compiler) refTarget(v any, at string) (*node, error) {
	s, ok := v.(string)
	if !ok {
		return nil, schemaError(at, "must be a string")
	}
	if s == "#" {
		return c.root, nil
	}
	name, ok := strings.CutPrefix(s, "#/$defs/")
	if !ok {
		return nil, schemaError(at, "only \"#\" and \"#/$defs/<name>\" are supported, not %q", s)
	}
	name = strings.NewReplacer("~1", "/", "~0", "~").Replace(name)
	t, ok := c.defs[name]
	if !ok {
		return nil, schemaError(at, "no $defs entry %q", name)
	}
	return t, nil
}

func compileTypes(v any, at string) ([]string, error) {
	var list []string
	switch v := v.(type) {
	case string:
		list = []string{v}
	case []any:
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, schemaError(at, "must be a type name or a list of them")
			}
			if slices.Contains(list, s) {
				return nil, schemaError(at, "names %q twice", s)
			}
			list = append(list, s)
		}
		if len(list) == 0 {
			return nil, schemaError(at, "must not be empty")
		}
	default:
		return nil, schemaError(at, "must be a type name or a list of them")
	}
	for _, s := range list {
		if !slices.Contains(typeNames, s) {
			return nil, schemaError(at, "unknown type %q", s)
		}
	}
	return list, nil
}

func number(v any, at string) (*float64, error) {
	f, ok := toFloat(v)
	if !ok || math.IsInf(f, 0) {
		return nil, schemaError(at, "must be a number")
	}
	return &f, nil
}

func count(v any, at string) (*int, error) {
	f, ok := toFloat(v)
	if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		return nil, schemaError(at, "must be a whole number, 0 or more")
	}
	n := int(f)
	return &n, nil
}

func stringList(v any, at string) ([]string, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, schemaError(at, "must be an array of strings")
	}
	out := make([]string, 0, len(arr))
	for _, x := range arr {
		s, ok := x.(string)
		if !ok {
			return nil, schemaError(at, "must be an array of strings")
		}
		if slices.Contains(out, s) {
			return nil, schemaError(at, "names %q twice", s)
		}
		out = append(out, s)
	}
	return out, nil
}

func (c *compiler) schemaMap(v any, at string) (map[string]*node, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, schemaError(at, "must be an object")
	}
	out := make(map[string]*node, len(m))
	for _, k := range sortedKeys(m) {
		n, err := c.compile(m[k], at+"/"+Escape(k))
		if err != nil {
			return nil, err
		}
		out[k] = n
	}
	return out, nil
}

func (c *compiler) patternProperties(v any, at string) ([]patternProperty, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, schemaError(at, "must be an object")
	}
	var out []patternProperty
	for _, k := range sortedKeys(m) {
		re, err := compilePattern(k, at+"/"+Escape(k))
		if err != nil {
			return nil, err
		}
		n, err := c.compile(m[k], at+"/"+Escape(k))
		if err != nil {
			return nil, err
		}
		out = append(out, patternProperty{re: re, schema: n})
	}
	return out, nil
}

func (c *compiler) schemaList(v any, at string) ([]*node, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, schemaError(at, "must be a non-empty array of schemas")
	}
	out := make([]*node, len(arr))
	for i, sub := range arr {
		n, err := c.compile(sub, fmt.Sprintf("%s/%d", at, i))
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

func compilePattern(v any, at string) (*regexp.Regexp, error) {
	s, ok := v.(string)
	if !ok {
		return nil, schemaError(at, "must be a string")
	}
	if bad := notPortable(s); bad != "" {
		return nil, schemaError(at, "pattern %q uses %s, which JavaScript reads differently", s, bad)
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, schemaError(at, "bad pattern %q: %v", s, err)
	}
	return re, nil
}

// notPortable returns the first piece of RE2 syntax in pattern p that
// JavaScript (with the "u" flag) refuses or reads differently — flag
// groups such as (?i), Go's named groups (?P<n>), \A \z \Q \E \C,
// POSIX classes such as [[:alpha:]], one-letter classes such as \pL,
// escapes JavaScript does not have, a brace or bracket RE2 takes as a
// literal — or "" when there is none.
func notPortable(p string) string {
	inClass := false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\' && i+1 < len(p):
			i++
			skip, bad := badEscape(p[i:], inClass)
			if bad != "" {
				return bad
			}
			i += skip
		case c == '[' && !inClass:
			inClass = true
			if strings.HasPrefix(p[i+1:], "^") {
				i++
			}
			if strings.HasPrefix(p[i+1:], "]") {
				return "a class starting with ']'"
			}
		case c == '[' && inClass && strings.HasPrefix(p[i+1:], ":"):
			return "a POSIX class"
		case c == ']' && inClass:
			inClass = false
		case (c == ']' || c == '}') && !inClass:
			return "a literal " + string(c) + " (escape it)"
		case c == '{' && !inClass:
			n := quantifierRE.FindStringIndex(p[i:])
			if n == nil {
				return "a literal { (escape it)"
			}
			i += n[1] - 1
		case c == '(' && !inClass && strings.HasPrefix(p[i+1:], "?") && !strings.HasPrefix(p[i+1:], "?:"):
			return "a flag or named group"
		}
	}
	return ""
}

// quantifierRE is a counted repetition: {n}, {n,} or {n,m}.
var quantifierRE = regexp.MustCompile(`^\{[0-9]+(?:,[0-9]*)?\}`)

// badEscape checks the escape whose letter starts rest; skip is how many
// bytes after the letter the escape takes.
func badEscape(rest string, inClass bool) (skip int, bad string) {
	c := rest[0]
	switch {
	case strings.IndexByte("dDsSwWtnrfv^$\\.*+?()[]{}|/", c) >= 0:
		return 0, ""
	case (c == 'b' || c == 'B') && !inClass:
		return 0, ""
	case c == '-' && inClass:
		return 0, ""
	case c == 'p' || c == 'P':
		if strings.HasPrefix(rest[1:], "{") {
			if end := strings.IndexByte(rest, '}'); end > 0 {
				return end, ""
			}
		}
	case c == 'x':
		if len(rest) >= 3 && isHex(rest[1]) && isHex(rest[2]) {
			return 2, ""
		}
	}
	_, size := utf8.DecodeRuneInString(rest)
	return 0, "the escape \\" + rest[:size]
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// checkCycles refuses a $ref loop that never goes into the value (a
// definition that refers to itself through $ref, allOf, anyOf, oneOf, not
// or if/then/else alone), which would never end.
func checkCycles(root *node) error {
	var all []*node
	seen := map[*node]bool{}
	var collect func(n *node)
	collect = func(n *node) {
		if seen[n] {
			return
		}
		seen[n] = true
		all = append(all, n)
		for _, m := range append(n.inPlace(), n.children()...) {
			collect(m)
		}
	}
	collect(root)

	const visiting, done = 1, 2
	state := map[*node]int{}
	var visit func(n *node) bool
	visit = func(n *node) bool {
		switch state[n] {
		case visiting:
			return false
		case done:
			return true
		}
		state[n] = visiting
		for _, m := range n.inPlace() {
			if !visit(m) {
				return false
			}
		}
		state[n] = done
		return true
	}
	for _, n := range all {
		if !visit(n) {
			return schemaError("", "a $ref refers back to itself without going into the value")
		}
	}
	return nil
}

// inPlace lists the subschemas n applies to the same value.
func (n *node) inPlace() []*node {
	out := append([]*node{n.ref, n.not, n.ifS, n.thenS, n.elseS}, n.allOf...)
	out = append(out, n.anyOf...)
	out = append(out, n.oneOf...)
	return slices.DeleteFunc(out, func(m *node) bool { return m == nil })
}

// children lists the subschemas n applies to values inside the value.
func (n *node) children() []*node {
	out := []*node{n.items, n.additional, n.propertyNames}
	for _, k := range sortedKeys(n.properties) {
		out = append(out, n.properties[k])
	}
	for _, p := range n.patternProperties {
		out = append(out, p.schema)
	}
	return slices.DeleteFunc(out, func(m *node) bool { return m == nil })
}
