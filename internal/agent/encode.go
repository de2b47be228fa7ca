package agent

import (
	"bytes"
	"encoding"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// encodeDefinition writes d as an agent file, leaving out fields that are
// zero so that they take their defaults when the file is loaded.
func encodeDefinition(d *Definition) ([]byte, error) {
	n, err := encodeValue(reflect.ValueOf(d).Elem())
	if err != nil {
		return nil, err
	}
	if n == nil {
		n = &yaml.Node{Kind: yaml.MappingNode}
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, fmt.Errorf("agent: encode %s: %w", d.ID, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("agent: encode %s: %w", d.ID, err)
	}
	return b.Bytes(), nil
}

var textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()

// encodeValue returns the YAML for v, or nil if v is zero and can be left out.
func encodeValue(v reflect.Value) (*yaml.Node, error) {
	if v.IsZero() {
		return nil, nil
	}
	return encodeAny(v)
}

// encodeAny returns the YAML for v, zero or not.
func encodeAny(v reflect.Value) (*yaml.Node, error) {
	if v.Type().Implements(textMarshalerType) {
		return nodeOf(v.Interface())
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: nullTag, Value: "null"}, nil
		}
		return encodeAny(v.Elem())
	case reflect.Struct:
		n := &yaml.Node{Kind: yaml.MappingNode}
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			c, err := encodeValue(v.Field(i))
			if err != nil {
				return nil, err
			}
			if c != nil {
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: strTag, Value: name}, c)
			}
		}
		return n, nil
	case reflect.Slice:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for i := range v.Len() {
			c, err := encodeAny(v.Index(i))
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, c)
		}
		return n, nil
	case reflect.Map:
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		n := &yaml.Node{Kind: yaml.MappingNode}
		for _, k := range keys {
			c, err := encodeAny(v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key())))
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: strTag, Value: k}, c)
		}
		return n, nil
	case reflect.Interface:
		if v.IsNil() {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: nullTag, Value: "null"}, nil
		}
		return nodeOf(v.Interface())
	}
	return nodeOf(v.Interface())
}

func nodeOf(v any) (*yaml.Node, error) {
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return nil, fmt.Errorf("agent: encode: %w", err)
	}
	return &n, nil
}
