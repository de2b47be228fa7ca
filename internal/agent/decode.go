package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

const (
	// maxFileSize bounds a configuration file or a system prompt.
	maxFileSize = 1 << 20
	// maxNodes bounds the nodes visited while checking one document, so a
	// small file cannot become expensive through aliases.
	maxNodes = 100_000
)

const (
	nullTag  = "!!null"
	strTag   = "!!str"
	floatTag = "!!float"
	mergeTag = "!!merge"
)

var (
	durationType = reflect.TypeFor[Duration]()
	// storeConfigType may be written as a scalar: the store's URL.
	storeConfigType = reflect.TypeFor[StoreConfig]()
	yamlLineRE      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`) })
)

// document is one parsed YAML file: what was decoded, where each field
// is, and what was wrong with it.
type document struct {
	file  string
	lines map[string]int // field path → line of its key (or of its list item); fields set to null are left out
	errs  []FieldError
	bad   []string // field paths with a structural error; checks below them are skipped
	nodes int
	drop  map[*yaml.Node]bool // key nodes whose pair is removed before decoding
}

// decodeDocument parses data into out (a pointer to a struct), checking the
// YAML against out's type: unknown fields, duplicate keys and values of the
// wrong type are reported with their line and field path, then removed so
// the rest of the file can still be decoded and checked.
func decodeDocument(file string, data []byte, out any) *document {
	doc := &document{file: file, lines: map[string]int{}, drop: map[*yaml.Node]bool{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if !errors.Is(err, io.EOF) {
			doc.yamlError(err)
			doc.bad = append(doc.bad, "")
		}
		return doc // empty file: nothing set
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		doc.yamlError(err)
		doc.bad = append(doc.bad, "")
		return doc
	case !isEmptyDocument(&next):
		doc.add(next.Line, "", "only one YAML document is allowed per file")
		doc.bad = append(doc.bad, "")
		return doc
	}
	if isEmptyDocument(&root) {
		return doc
	}

	n := &root
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	t := reflect.TypeOf(out).Elem()
	if n.Kind == yaml.AliasNode || (n.Kind != yaml.MappingNode && !isNull(n)) {
		doc.add(n.Line, "", fmt.Sprintf("must be %s, got %s", describeType(t), describeNode(n)))
		doc.bad = append(doc.bad, "")
		return doc
	}
	doc.walk(n, t, "")
	if doc.nodes > maxNodes {
		return doc // too expensive to decode as well
	}

	if len(doc.errs) == 0 {
		// The file is well formed: decode it as written, rejecting any
		// field the type does not have.
		strict := yaml.NewDecoder(bytes.NewReader(data))
		strict.KnownFields(true)
		if err := strict.Decode(out); err != nil {
			doc.yamlError(err)
			doc.bad = append(doc.bad, "")
		}
		return doc
	}
	// Decode what is left after removing the broken entries, so the values
	// that are there can still be checked.
	removeDropped(n, doc.drop, map[*yaml.Node]bool{})
	if err := n.Decode(out); err != nil {
		doc.yamlError(err)
		doc.bad = append(doc.bad, "")
	}
	return doc
}

func (d *document) add(line int, field, msg string) {
	d.errs = append(d.errs, FieldError{File: d.file, Line: line, Field: field, Msg: msg})
}

// fail records a structural error at path.
func (d *document) fail(line int, path, format string, args ...any) {
	d.add(line, path, fmt.Sprintf(format, args...))
	d.bad = append(d.bad, path)
}

// yamlError records an error from the YAML library, keeping its line.
func (d *document) yamlError(err error) {
	var te *yaml.TypeError
	msgs := []string{err.Error()}
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	for _, m := range msgs {
		m = strings.TrimPrefix(m, "yaml: ")
		line := 0
		if sm := yamlLineRE().FindStringSubmatch(m); sm != nil {
			line, _ = strconv.Atoi(sm[1])
			m = sm[2]
		}
		d.add(line, "", m)
	}
}

// step counts a visited node and reports whether the budget allows more.
func (d *document) step(n *yaml.Node) bool {
	d.nodes++
	if d.nodes == maxNodes+1 {
		d.fail(n.Line, "", "document is too large or uses too many aliases")
	}
	return d.nodes <= maxNodes
}

// pair is one key and value of a mapping.
type pair struct{ k, v *yaml.Node }

// pairs lists the entries of mapping n with merge keys (<<) expanded;
// entries written in n win over merged ones. A key written twice is an
// error and its second entry is dropped.
func (d *document) pairs(n *yaml.Node, path string) []pair {
	var out, merged []pair
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !d.step(k) {
			return nil
		}
		if isMerge(k) {
			merged = append(merged, d.merge(v, path)...)
			continue
		}
		if k.Kind == yaml.ScalarNode {
			if first, dup := seen[k.Value]; dup {
				d.fail(k.Line, join(path, k.Value), "set twice (first on line %d)", first)
				d.drop[k] = true
				continue
			}
			seen[k.Value] = k.Line
		}
		out = append(out, pair{k, v})
	}
	for _, p := range merged {
		if !d.step(p.k) {
			return nil
		}
		if p.k.Kind == yaml.ScalarNode {
			if _, dup := seen[p.k.Value]; dup {
				continue
			}
			seen[p.k.Value] = p.k.Line
		}
		out = append(out, p)
	}
	return out
}

// merge returns the entries a merge key's value brings in.
func (d *document) merge(v *yaml.Node, path string) []pair {
	if !d.step(v) {
		return nil
	}
	switch v.Kind {
	case yaml.AliasNode:
		if v.Alias != nil {
			return d.merge(v.Alias, path)
		}
	case yaml.MappingNode:
		return d.pairs(v, path)
	case yaml.SequenceNode:
		var out []pair
		for _, item := range v.Content {
			if item.Kind == yaml.SequenceNode {
				d.fail(item.Line, path, "<< must merge a mapping or a list of mappings")
				continue
			}
			out = append(out, d.merge(item, path)...)
		}
		return out
	}
	d.fail(v.Line, path, "<< must merge a mapping or a list of mappings")
	return nil
}

// key returns the name of a mapping key.
func (d *document) key(k *yaml.Node, path string) (string, bool) {
	if k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode || isNull(k) {
		d.fail(k.Line, path, "keys must be plain strings, got %s", describeNode(k))
		return "", false
	}
	return k.Value, true
}

// walk checks node n against type t.
func (d *document) walk(n *yaml.Node, t reflect.Type, path string) {
	if !d.step(n) {
		return
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias != nil {
			d.walk(n.Alias, t, path)
		}
		return
	}
	if isNull(n) {
		return
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == durationType {
		var v Duration
		if n.Kind != yaml.ScalarNode || v.UnmarshalText([]byte(n.Value)) != nil {
			d.mismatch(n, t, path)
		}
		return
	}
	if t == storeConfigType && n.Kind == yaml.ScalarNode {
		d.lines[join(path, "url")] = n.Line // the URL alone (see StoreConfig.UnmarshalYAML)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.mismatch(n, t, path)
			return
		}
		fields := yamlFields(t)
		for _, p := range d.pairs(n, path) {
			name, ok := d.key(p.k, path)
			if !ok {
				d.drop[p.k] = true
				continue
			}
			sub := join(path, name)
			f, ok := fields[name]
			if !ok {
				d.fail(p.k.Line, sub, "unknown field")
				d.drop[p.k] = true
				continue
			}
			if !isNull(resolve(p.v)) {
				d.lines[sub] = p.k.Line
			}
			d.walk(p.v, f.Type, sub)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.mismatch(n, t, path)
			return
		}
		for _, p := range d.pairs(n, path) {
			name, ok := d.key(p.k, path)
			if !ok {
				d.drop[p.k] = true
				continue
			}
			sub := join(path, name)
			d.lines[sub] = p.k.Line
			d.walk(p.v, t.Elem(), sub)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.mismatch(n, t, path)
			return
		}
		for i, item := range n.Content {
			sub := fmt.Sprintf("%s[%d]", path, i)
			d.lines[sub] = item.Line
			d.walk(item, t.Elem(), sub)
		}
	case reflect.Interface:
		d.walkAny(n, path)
	default:
		d.walkScalar(n, t, path)
	}
}

// anyType is the type of a free-form value.
var anyType = reflect.TypeFor[any]()

// walkAny checks a free-form value (model.params.extra), which is sent to
// the provider as JSON: mapping keys must be strings and numbers finite.
func (d *document) walkAny(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.MappingNode:
		for _, p := range d.pairs(n, path) {
			name, ok := d.key(p.k, path)
			if !ok {
				d.drop[p.k] = true
				continue
			}
			sub := join(path, name)
			if p.k.ShortTag() != strTag {
				d.fail(p.k.Line, sub, "keys must be strings; quote it: %q", name)
				d.drop[p.k] = true
				continue
			}
			d.lines[sub] = p.k.Line
			d.walk(p.v, anyType, sub)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			sub := fmt.Sprintf("%s[%d]", path, i)
			d.lines[sub] = item.Line
			d.walk(item, anyType, sub)
		}
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			d.fail(n.Line, path, "invalid value %s", describeNode(n))
			nullify(n)
			return
		}
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			d.fail(n.Line, path, "must be a finite number, got %s", describeNode(n))
			nullify(n)
		}
	default:
		d.mismatch(n, anyType, path)
	}
}

// walkScalar checks a string, number or boolean.
func (d *document) walkScalar(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.ScalarNode {
		d.mismatch(n, t, path)
		return
	}
	v := reflect.New(t)
	if err := n.Decode(v.Interface()); err != nil {
		d.mismatch(n, t, path)
		return
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Elem().Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			d.fail(n.Line, path, "must be a finite number, got %s", describeNode(n))
			nullify(n)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.ShortTag() == floatTag {
			var f float64
			if err := n.Decode(&f); err != nil || f != math.Trunc(f) {
				d.mismatch(n, t, path)
			}
		}
	}
}

// mismatch reports a value of the wrong type and removes it.
func (d *document) mismatch(n *yaml.Node, t reflect.Type, path string) {
	d.fail(n.Line, path, "must be %s, got %s", describeType(t), describeNode(n))
	nullify(n)
}

// nullify turns n into a null, so decoding leaves its field zero.
func nullify(n *yaml.Node) {
	*n = yaml.Node{Kind: yaml.ScalarNode, Tag: nullTag, Value: "null", Line: n.Line, Column: n.Column}
}

// removeDropped deletes the entries whose key is in drop.
func removeDropped(n *yaml.Node, drop, seen map[*yaml.Node]bool) {
	if n == nil || seen[n] {
		return
	}
	seen[n] = true
	if n.Kind == yaml.MappingNode {
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			if !drop[n.Content[i]] {
				kept = append(kept, n.Content[i], n.Content[i+1])
			}
		}
		n.Content = kept
	}
	for _, c := range n.Content {
		removeDropped(c, drop, seen)
	}
	removeDropped(n.Alias, drop, seen)
}

// yamlField is a struct field and its YAML name.
type yamlField struct {
	Index int
	Type  reflect.Type
}

// yamlFields maps the YAML names of struct t's fields to the fields.
func yamlFields(t reflect.Type) map[string]yamlField {
	out := make(map[string]yamlField, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = yamlField{Index: i, Type: f.Type}
	}
	return out
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == nullTag
}

func isMerge(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Value == "<<" && (n.Tag == "" || n.Tag == "!" || n.Tag == mergeTag || n.Tag == "tag:yaml.org,2002:merge")
}

func isEmptyDocument(n *yaml.Node) bool {
	if n.Kind == yaml.DocumentNode {
		return len(n.Content) == 0 || (len(n.Content) == 1 && isNull(n.Content[0]))
	}
	return n.Kind == 0 || isNull(n)
}

// join appends a field name to a path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// describeType says what a value of type t looks like in YAML.
func describeType(t reflect.Type) string {
	if t == durationType {
		return `a duration such as "30s" or "5m"`
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Struct:
		return "a mapping of fields"
	case reflect.Map:
		return "a mapping"
	case reflect.Slice:
		return "a list"
	}
	return "a value"
}

// describeNode says what a YAML node is, quoting (and shortening) scalars.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	v := n.Value
	if r := []rune(v); len(r) > 40 {
		v = string(r[:40]) + "…"
	}
	return strconv.Quote(v)
}
