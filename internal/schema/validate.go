package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// validate appends every problem of v (found at ptr) to errs.
func (n *node) validate(v any, ptr string, errs *[]Error) {
	add := func(format string, args ...any) {
		*errs = append(*errs, Error{Pointer: ptr, Message: fmt.Sprintf(format, args...)})
	}
	if n.never {
		add("is not allowed here")
		return
	}
	kind := kindOf(v)
	if kind == "" {
		add("is not a JSON value (%T)", v)
		return
	}
	if n.types != nil && !typeMatches(n.types, kind, v) {
		add("%s", typeMessage(n.types))
		return
	}
	if n.hasEnum && !slices.ContainsFunc(n.enum, func(e any) bool { return equal(e, v) }) {
		add("%s", enumMessage(n.enum))
		return
	}
	if n.hasConst && !equal(n.constVal, v) {
		add("must be %s", literal(n.constVal, true))
		return
	}
	switch kind {
	case "number":
		n.validateNumber(toFloatValue(v), add)
	case "string":
		n.validateString(v.(string), add)
	case "array":
		n.validateArray(v.([]any), ptr, errs)
	case "object":
		n.validateObject(v.(map[string]any), ptr, errs)
	}
	n.validateApplicators(v, ptr, errs)
}

func (n *node) validateNumber(f float64, add func(string, ...any)) {
	if n.minimum != nil && f < *n.minimum {
		add("must be at least %s", formatNumber(*n.minimum))
	}
	if n.maximum != nil && f > *n.maximum {
		add("must be at most %s", formatNumber(*n.maximum))
	}
	if n.exclusiveMinimum != nil && f <= *n.exclusiveMinimum {
		add("must be greater than %s", formatNumber(*n.exclusiveMinimum))
	}
	if n.exclusiveMaximum != nil && f >= *n.exclusiveMaximum {
		add("must be less than %s", formatNumber(*n.exclusiveMaximum))
	}
	if n.multipleOf != nil {
		// The quotient's test is the common one (and JavaScript's), so that
		// the console and the server agree on 0.3 and 0.1.
		if q := f / *n.multipleOf; math.IsInf(q, 0) || math.IsNaN(q) || q != math.Trunc(q) {
			add("must be a multiple of %s", formatNumber(*n.multipleOf))
		}
	}
}

func (n *node) validateString(s string, add func(string, ...any)) {
	if n.minLength != nil || n.maxLength != nil {
		l := utf8.RuneCountInString(s)
		if n.minLength != nil && l < *n.minLength {
			if *n.minLength == 1 {
				add("must not be empty")
			} else {
				add("must be at least %s long", plural(*n.minLength, "character", "characters"))
			}
		}
		if n.maxLength != nil && l > *n.maxLength {
			add("must be at most %s long", plural(*n.maxLength, "character", "characters"))
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		add("must match %s", n.pattern.String())
	}
}

func (n *node) validateArray(a []any, ptr string, errs *[]Error) {
	add := func(format string, args ...any) {
		*errs = append(*errs, Error{Pointer: ptr, Message: fmt.Sprintf(format, args...)})
	}
	if n.minItems != nil && len(a) < *n.minItems {
		add("must have at least %s", plural(*n.minItems, "item", "items"))
	}
	if n.maxItems != nil && len(a) > *n.maxItems {
		add("must have at most %s", plural(*n.maxItems, "item", "items"))
	}
	if n.uniqueItems {
		// literal is the same text for equal values (numbers by value,
		// keys sorted), so a map finds repeats in one pass.
		first := make(map[string]int, len(a))
		for j, x := range a {
			key := literal(x, false)
			if i, ok := first[key]; ok {
				*errs = append(*errs, Error{Pointer: ptr + "/" + strconv.Itoa(j), Message: fmt.Sprintf("is the same as item %d; items must be unique", i)})
				continue
			}
			first[key] = j
		}
	}
	if n.items != nil {
		for i, x := range a {
			n.items.validate(x, ptr+"/"+strconv.Itoa(i), errs)
		}
	}
}

func (n *node) validateObject(o map[string]any, ptr string, errs *[]Error) {
	add := func(format string, args ...any) {
		*errs = append(*errs, Error{Pointer: ptr, Message: fmt.Sprintf(format, args...)})
	}
	if n.minProperties != nil && len(o) < *n.minProperties {
		add("must have at least %s", plural(*n.minProperties, "property", "properties"))
	}
	if n.maxProperties != nil && len(o) > *n.maxProperties {
		add("must have at most %s", plural(*n.maxProperties, "property", "properties"))
	}
	for _, r := range n.required {
		if _, ok := o[r]; !ok {
			*errs = append(*errs, Error{Pointer: ptr + "/" + Escape(r), Message: "is required"})
		}
	}
	for _, k := range sortedKeys(o) {
		at := ptr + "/" + Escape(k)
		if n.propertyNames != nil {
			var nameErrs []Error
			n.propertyNames.validate(k, at, &nameErrs)
			for _, e := range nameErrs {
				*errs = append(*errs, Error{Pointer: at, Message: "the name " + e.Message})
			}
		}
		matched := false
		if s, ok := n.properties[k]; ok {
			matched = true
			s.validate(o[k], at, errs)
		}
		for _, p := range n.patternProperties {
			if p.re.MatchString(k) {
				matched = true
				p.schema.validate(o[k], at, errs)
			}
		}
		if !matched && n.additional != nil {
			n.additional.validate(o[k], at, errs)
		}
	}
}

func (n *node) validateApplicators(v any, ptr string, errs *[]Error) {
	if n.ref != nil {
		n.ref.validate(v, ptr, errs)
	}
	for _, s := range n.allOf {
		s.validate(v, ptr, errs)
	}
	if n.anyOf != nil {
		branches, matched := tryAll(n.anyOf, v, ptr)
		if len(matched) == 0 {
			*errs = append(*errs, noMatch(n.anyOf, branches, v, ptr)...)
		}
	}
	if n.oneOf != nil {
		branches, matched := tryAll(n.oneOf, v, ptr)
		switch {
		case len(matched) == 0:
			*errs = append(*errs, noMatch(n.oneOf, branches, v, ptr)...)
		case len(matched) > 1:
			msg := fmt.Sprintf("must match exactly one of the allowed shapes, but matches %d", len(matched))
			if names := titles(n.oneOf, matched); names != "" {
				msg += " (" + names + ")"
			}
			*errs = append(*errs, Error{Pointer: ptr, Message: msg})
		}
	}
	if n.not != nil && n.not.valid(v) {
		msg := "must not match the excluded shape"
		if t := n.not.titleOf(); t != "" {
			msg = "must not be " + t
		}
		*errs = append(*errs, Error{Pointer: ptr, Message: msg})
	}
	if n.ifS != nil {
		if n.ifS.valid(v) {
			if n.thenS != nil {
				n.thenS.validate(v, ptr, errs)
			}
		} else if n.elseS != nil {
			n.elseS.validate(v, ptr, errs)
		}
	}
}

func (n *node) valid(v any) bool {
	var errs []Error
	n.validate(v, "", &errs)
	return len(errs) == 0
}

// tryAll validates v against each branch, returning each branch's errors
// and the indexes of those that matched.
func tryAll(branches []*node, v any, ptr string) ([][]Error, []int) {
	out := make([][]Error, len(branches))
	var matched []int
	for i, b := range branches {
		b.validate(v, ptr, &out[i])
		if len(out[i]) == 0 {
			matched = append(matched, i)
		}
	}
	return out, matched
}

// noMatch says why v matched none of branches. Branches that want another
// type than v's are set aside: when all are, the message lists the types
// that would do; when one branch is left, its errors are the answer; of
// several, the one that got furthest into v (its deepest error is deepest,
// then it has fewer errors) gives its errors. When none is ahead, the
// message says v must have one of the allowed shapes, named by their
// titles when they all have one.
func noMatch(branches []*node, errs [][]Error, v any, ptr string) []Error {
	var types []string
	var candidates []int
	for i, b := range branches {
		t := b.typesOf()
		if t == nil || typeMatches(t, kindOf(v), v) {
			candidates = append(candidates, i)
			continue
		}
		for _, x := range t {
			if !slices.Contains(types, x) {
				types = append(types, x)
			}
		}
	}
	switch len(candidates) {
	case 0:
		return []Error{{Pointer: ptr, Message: typeMessage(types)}}
	case 1:
		return errs[candidates[0]]
	}
	best, tie := -1, false
	bestDepth := 0
	for _, i := range candidates {
		d := 0
		for _, x := range errs[i] {
			d = max(d, depth(x.Pointer))
		}
		switch {
		case best < 0 || d > bestDepth || (d == bestDepth && len(errs[i]) < len(errs[best])):
			best, bestDepth, tie = i, d, false
		case d == bestDepth && len(errs[i]) == len(errs[best]):
			tie = true
		}
	}
	if !tie {
		return errs[best]
	}
	msg := "must match one of the allowed shapes"
	if names := titles(branches, candidates); names != "" {
		msg = "must be one of: " + names
	}
	return []Error{{Pointer: ptr, Message: msg}}
}

// depth counts the tokens of a JSON pointer.
func depth(ptr string) int { return strings.Count(ptr, "/") }

// titles joins the titles of branches[idx], or is "" when one has none.
func titles(branches []*node, idx []int) string {
	names := make([]string, len(idx))
	for i, j := range idx {
		if names[i] = branches[j].titleOf(); names[i] == "" {
			return ""
		}
	}
	return strings.Join(names, ", ")
}

// titleOf is n's title, or that of the definition it refers to.
func (n *node) titleOf() string {
	for ; n != nil; n = n.ref {
		if n.title != "" {
			return n.title
		}
	}
	return ""
}

// typesOf is n's type list, or that of the definition it refers to; nil
// when neither says.
func (n *node) typesOf() []string {
	for ; n != nil; n = n.ref {
		if n.never {
			return nil
		}
		if n.types != nil {
			return n.types
		}
	}
	return nil
}

// kindOf is v's JSON type ("" for a value that is not JSON).
func kindOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return ""
		}
		return "number"
	case json.Number:
		if _, err := v.Float64(); err != nil && !isRange(err) {
			return ""
		}
		return "number"
	case int, int64, int32:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return ""
}

func isRange(err error) bool {
	var ne *strconv.NumError
	ok := errors.As(err, &ne)
	return ok && ne.Err == strconv.ErrRange
}

func typeMatches(types []string, kind string, v any) bool {
	for _, t := range types {
		switch {
		case t == kind:
			return true
		case t == "integer" && kind == "number":
			if f := toFloatValue(v); !math.IsInf(f, 0) && f == math.Trunc(f) {
				return true
			}
		}
	}
	return false
}

// typeNoun is how a message names a JSON type.
var typeNoun = map[string]string{
	"array": "an array", "boolean": "true or false", "integer": "a whole number", "null": "null",
	"number": "a number", "object": "an object", "string": "a string",
}

// typeMessage: "must be a string", "must be a string or null", "must be a
// string, a number or null".
func typeMessage(types []string) string {
	nouns := make([]string, len(types))
	for i, t := range types {
		nouns[i] = typeNoun[t]
	}
	return "must be " + orList(nouns)
}

func orList(items []string) string {
	if len(items) == 1 {
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

func enumMessage(enum []any) string {
	if len(enum) == 1 {
		return "must be " + literal(enum[0], true)
	}
	items := make([]string, len(enum))
	for i, e := range enum {
		items[i] = literal(e, true)
	}
	return "must be one of: " + strings.Join(items, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
