package gateway

// Extension documents as text: a PUT's body (JSON, or YAML), and the one
// or several documents of a file `agentd ext put` reads. A document is
// {"type", "name", "spec", "enabled"}; what is wrong with its shape is
// said with JSON pointers, as the schema's problems are.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"agentd/internal/extension"
	"agentd/internal/schema"
)

// docFields are the fields of a document.
var docFields = []string{"type", "name", "spec", "enabled"}

// specTypes are the content types of a PUT's document: JSON (none given
// counts too), or YAML.
var specTypes = map[string]bool{
	"": false, "application/json": false, "application/yaml": true, "application/x-yaml": true, "text/yaml": true, "text/x-yaml": true,
}

// decodeSpec reads the document of a PUT: JSON, or YAML by its content
// type (as extension.DecodeSpec will).
func decodeSpec(text []byte, contentType string) (extension.Doc, error) {
	mt := ""
	if contentType != "" {
		var err error
		mt, _, err = mime.ParseMediaType(contentType)
		if err != nil {
			mt = "?"
		}
	}
	yml, ok := specTypes[mt]
	if !ok {
		return extension.Doc{}, say(errMediaType, "content type %.60q: send the document as JSON (application/json) or YAML (application/yaml)", contentType)
	}
	if len(bytes.TrimSpace(text)) == 0 {
		return extension.Doc{}, badRequest("body: want an extension document {\"type\", \"name\", \"spec\"}, in JSON or YAML")
	}
	if !yml {
		return docFromJSON(text, 0)
	}
	docs, err := DecodeDocs(text)
	if err != nil {
		return extension.Doc{}, err
	}
	if len(docs) != 1 {
		return extension.Doc{}, badRequest("body: %d YAML documents: send one", len(docs))
	}
	return docs[0], nil
}

// DecodeDocs reads one or several extension documents: YAML documents
// separated by "---", or JSON (a JSON document is YAML). Each Doc's Line
// is where it starts. A document whose shape is wrong is a
// *extension.ValidationError; text that is not YAML at all, an error
// naming the line.
func DecodeDocs(text []byte) ([]extension.Doc, error) {
	if t := bytes.TrimLeft(text, " \t\r\n"); len(t) > 0 && t[0] == '{' && json.Valid(text) {
		// JSON, read as encoding/json reads it (a key given twice: the
		// last), as a PUT's JSON body is.
		d, err := docFromJSON(text, 1+bytes.Count(text[:len(text)-len(t)], []byte("\n")))
		if err != nil {
			return nil, err
		}
		return []extension.Doc{d}, nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(text))
	var out []extension.Doc
	var errs []error
	for i := 1; ; i++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, say(ErrBadRequest, "document %d: %s", i, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		line := n.Line
		if len(n.Content) > 0 {
			line = n.Content[0].Line
		}
		js, err := nodeJSON(&n)
		if err != nil {
			return nil, say(ErrBadRequest, "document %d (line %d): %v", i, line, err)
		}
		d, err := docFromJSON(js, line)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, d)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(out) == 0 {
		return nil, say(ErrBadRequest, "no extension document: want {\"type\", \"name\", \"spec\"}, in JSON or YAML")
	}
	return out, nil
}

// nodeJSON is a YAML document as JSON.
func nodeJSON(n *yaml.Node) ([]byte, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	b, err := json.Marshal(v)
	if err != nil {
		// A mapping with keys that are not strings, which JSON cannot say.
		return nil, fmt.Errorf("not a JSON document: %w", err)
	}
	return b, nil
}

// docFromJSON reads a document from JSON text, saying every problem of its
// shape with its pointer.
func docFromJSON(text []byte, line int) (extension.Doc, error) {
	d := extension.Doc{Line: line}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(text, &fields); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return d, docError(d, schema.Error{Message: "must be an object {\"type\", \"name\", \"spec\"}"})
		}
		return d, say(ErrBadRequest, "not JSON: %v", err)
	}
	var errs []schema.Error
	str := func(name string, to *string) {
		if raw, ok := fields[name]; ok && json.Unmarshal(raw, to) != nil {
			errs = append(errs, schema.Error{Pointer: "/" + name, Message: "must be a string"})
		}
	}
	str("type", &d.Type)
	str("name", &d.Name)
	if raw, ok := fields["enabled"]; ok && json.Unmarshal(raw, &d.Enabled) != nil {
		errs = append(errs, schema.Error{Pointer: "/enabled", Message: "must be true or false"})
	}
	if raw, ok := fields["spec"]; !ok || string(raw) == "null" {
		errs = append(errs, schema.Error{Pointer: "/spec", Message: "missing: the document's content, an object"})
	} else {
		d.Spec = raw
	}
	if d.Name != "" && !extension.ValidName(d.Name) {
		errs = append(errs, nameError(d.Name))
	}
	var unknown []string
	for k := range fields {
		if !slices.Contains(docFields, k) {
			unknown = append(unknown, k)
		}
	}
	slices.Sort(unknown)
	for _, k := range unknown {
		errs = append(errs, schema.Error{Pointer: "/" + schema.Escape(k), Message: "unknown field: a document has type, name, spec and enabled"})
	}
	if errs != nil {
		return d, docError(d, errs...)
	}
	return d, nil
}

// docError is the *extension.ValidationError of d's problems.
func docError(d extension.Doc, errs ...schema.Error) error {
	where := d.Key()
	if d.Type == "" || d.Name == "" {
		where = "document"
	}
	if d.Line > 0 {
		where += fmt.Sprintf(" (line %d)", d.Line)
	}
	return &extension.ValidationError{Doc: where, Errors: errs}
}
