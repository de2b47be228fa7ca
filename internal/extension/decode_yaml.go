package extension

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

var (
	// yamlLineRE splits the YAML library's "yaml: line 3: …" messages.
	yamlLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`) })
	// jsonNumberRE is a number as JSON writes it.
	jsonNumberRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$`)
	})
)

// decodeYAML reads documents from data as YAML: documents separated by
// "---", each a mapping or (when many) a list of mappings.
func decodeYAML(data []byte, many, named bool) ([]Doc, error) {
	var ps problems
	var docs []Doc
	c := &converter{ps: &ps, maxBytes: expansion*len(data) + minExpansion, open: map[*yaml.Node]bool{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	texts := 0
	for {
		var root yaml.Node
		err := dec.Decode(&root)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			yamlProblem(err, &ps)
			return nil, ps.err()
		}
		if len(root.Content) == 0 || isNullNode(root.Content[0]) {
			continue // an empty document
		}
		n := root.Content[0]
		if texts++; texts > 1 && !many {
			ps.add(n.Line, "", "must be one document; this is another")
			break
		}
		switch {
		case n.Kind == yaml.MappingNode:
			docs = append(docs, c.doc(n, named))
		case n.Kind == yaml.SequenceNode && many:
			for _, item := range n.Content {
				if item.Kind != yaml.MappingNode {
					ps.add(item.Line, "", "each document must be a mapping with type, name and spec")
					continue
				}
				docs = append(docs, c.doc(item, named))
			}
		default:
			ps.add(n.Line, "", "must be a mapping with type, name and spec, not %s", describeNode(n))
		}
		if c.stopped {
			break
		}
	}
	if len(docs) == 0 && len(ps) == 0 {
		ps.add(0, "", "no documents")
	}
	if len(ps) > 0 {
		return nil, ps.err()
	}
	return docs, nil
}

// yamlProblem records an error of the YAML library, keeping its line.
func yamlProblem(err error, ps *problems) {
	msgs := []string{err.Error()}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	for _, m := range msgs {
		line := 0
		m = strings.TrimPrefix(m, "yaml: ")
		if sm := yamlLineRE().FindStringSubmatch(m); sm != nil {
			line, _ = strconv.Atoi(sm[1])
			m = sm[2]
		}
		ps.add(line, "", "%s", m)
	}
}

// converter turns YAML documents into Docs, their specs into JSON, within
// a budget of nodes and bytes that aliases cannot get around.
type converter struct {
	ps       *problems
	nodes    int
	maxBytes int
	out      int  // bytes of JSON written so far
	stopped  bool // the budget ran out: stop reading
	depth    int  // of the value being written
	// open holds the mappings and lists being written, so that an alias
	// to one of them (a value containing itself) is an error, not a loop.
	open map[*yaml.Node]bool
}

// doc reads one document, a mapping.
func (c *converter) doc(n *yaml.Node, named bool) Doc {
	d := Doc{Line: n.Line}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content) && !c.stopped; i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		key, ok := c.key(k, "", seen)
		if !ok {
			continue
		}
		switch key {
		case "type", "name":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
				c.ps.add(k.Line, key, "must be a string, not %s", describeNode(v))
			} else if key == "type" {
				d.Type = v.Value
			} else {
				d.Name = v.Value
			}
		case "enabled":
			var b bool
			switch {
			case isNullNode(v):
			case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool" && v.Decode(&b) == nil:
				d.Enabled = &b
			default:
				c.ps.add(k.Line, key, "must be true or false, not %s", describeNode(v))
			}
		case "spec":
			if v.Kind != yaml.MappingNode {
				c.ps.add(k.Line, key, "must be a mapping, not %s", describeNode(v))
				continue
			}
			before := len(*c.ps)
			var b bytes.Buffer
			c.value(v, "spec", &b)
			c.out += b.Len()
			if len(*c.ps) == before {
				d.Spec = b.Bytes()
			}
		default:
			c.ps.add(k.Line, key, "unknown field (a document has %s)", orList(docKeys))
		}
	}
	checkDoc(&d, seen, named, c.ps)
	return d
}

// key reads a mapping's key: a string, not written before in the mapping.
func (c *converter) key(k *yaml.Node, path string, seen map[string]int) (string, bool) {
	switch {
	case k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge":
		c.ps.add(k.Line, joinField(path, "<<"), "merge keys (<<) are not supported; write the entries out")
		return "", false
	case k.Kind != yaml.ScalarNode:
		c.ps.add(k.Line, path, "keys must be strings, not %s", describeNode(k))
		return "", false
	case k.ShortTag() != "!!str":
		c.ps.add(k.Line, joinField(path, k.Value), "keys must be strings; quote it: %q", k.Value)
		return "", false
	}
	if first, dup := seen[k.Value]; dup {
		c.ps.add(k.Line, joinField(path, k.Value), "set twice (first on line %d)", first)
		return "", false
	}
	seen[k.Value] = k.Line
	return k.Value, true
}

// value writes n as JSON to b, recording what cannot be JSON.
func (c *converter) value(n *yaml.Node, path string, b *bytes.Buffer) {
	if c.stopped {
		return
	}
	if c.nodes++; c.nodes > maxNodes || c.out+b.Len() > c.maxBytes {
		c.ps.add(n.Line, path, "the document is too large, or its aliases repeat too much")
		c.stopped = true
		return
	}
	if c.depth >= maxDepth {
		c.ps.add(n.Line, path, "nested more than %d deep", maxDepth)
		c.stopped = true
		return
	}
	c.depth++
	defer func() { c.depth-- }()
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			c.ps.add(n.Line, path, "alias to nothing")
			return
		}
		if c.open[n.Alias] {
			c.ps.add(n.Line, path, "the alias *%s is inside the value it names", n.Value)
			return
		}
		c.value(n.Alias, path, b)
	case yaml.MappingNode:
		c.open[n] = true
		defer delete(c.open, n)
		b.WriteByte('{')
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, ok := c.key(n.Content[i], path, seen)
			if !ok {
				continue
			}
			if len(seen) > 1 {
				b.WriteByte(',')
			}
			writeString(b, key)
			b.WriteByte(':')
			c.value(n.Content[i+1], joinField(path, key), b)
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		c.open[n] = true
		defer delete(c.open, n)
		b.WriteByte('[')
		for i, item := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			c.value(item, path+"["+strconv.Itoa(i)+"]", b)
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		c.scalar(n, path, b)
	default:
		c.ps.add(n.Line, path, "unexpected YAML")
	}
}

// scalar writes a scalar as JSON: null, a boolean, a finite number or a
// string (timestamps stay the text they were written as).
func (c *converter) scalar(n *yaml.Node, path string, b *bytes.Buffer) {
	switch tag := n.ShortTag(); tag {
	case "!!null":
		b.WriteString("null")
	case "!!bool":
		var v bool
		if n.Decode(&v) != nil {
			c.ps.add(n.Line, path, "invalid value %s", describeNode(n))
			return
		}
		b.WriteString(strconv.FormatBool(v))
	case "!!int", "!!float":
		if jsonNumberRE().MatchString(n.Value) {
			if f, err := strconv.ParseFloat(n.Value, 64); err != nil || math.IsInf(f, 0) {
				c.ps.add(n.Line, path, "must be a finite number, not %s", describeNode(n))
				return
			}
			b.WriteString(n.Value)
			return
		}
		var v any
		if n.Decode(&v) != nil {
			c.ps.add(n.Line, path, "invalid number %s", describeNode(n))
			return
		}
		if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
			c.ps.add(n.Line, path, "must be a finite number, not %s", describeNode(n))
			return
		}
		out, err := json.Marshal(v)
		if err != nil {
			c.ps.add(n.Line, path, "invalid number %s", describeNode(n))
			return
		}
		b.Write(out)
	case "!!str", "!!timestamp":
		writeString(b, n.Value)
	case "!!binary":
		c.ps.add(n.Line, path, "binary values are not supported; write the text, or base64 as a plain string")
	default:
		c.ps.add(n.Line, path, "the tag %s is not supported", tag)
	}
}

// writeString writes s as a JSON string, leaving <, > and & as they are.
func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // the encoder's newline
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func isNullNode(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
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
