package extension

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"slices"
	"strings"
)

// Sentinel errors of decoding.
var (
	// ErrMalformed: a text is not extension documents; the error is a
	// *DecodeError naming the line and field of every problem.
	ErrMalformed = errors.New("malformed extension document")
	// ErrMediaType: DecodeSpec was given a content type that is neither
	// JSON nor YAML.
	ErrMediaType = errors.New("unsupported content type")
)

// Limits of decoding, so that a small text cannot become a large spec.
const (
	// maxNodes bounds the values visited in one text, aliases expanded.
	maxNodes = 100_000
	// expansion bounds a spec's JSON to this many times the text's size
	// (plus minExpansion), however its aliases repeat things.
	expansion    = 4
	minExpansion = 1 << 20
	// maxDepth bounds the nesting of a spec.
	maxDepth = 100
)

// Problem is one thing wrong with a text of documents: its line (1-based;
// 0 when unknown), the field (a dotted path: "spec.url",
// "spec.headers[2]"; "" for the document as a whole) and what.
type Problem struct {
	Line  int
	Field string
	Msg   string
}

// String is "line 7: spec.url: must be a string".
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// DecodeError lists every problem found in a text of documents.
type DecodeError struct {
	Problems []Problem
}

// Error prints one problem per line.
func (e *DecodeError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

func (e *DecodeError) Unwrap() error { return ErrMalformed }

// problems collects the problems of one text.
type problems []Problem

func (ps *problems) add(line int, field, format string, args ...any) {
	*ps = append(*ps, Problem{Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &DecodeError{Problems: ps}
}

// docKeys are the keys a document has; type, name and spec are required.
var docKeys = []string{"type", "name", "spec", "enabled"}

// DecodeDocs reads extension documents from data: YAML or JSON, one
// document, several YAML documents separated by "---", or a list (a JSON
// array) of documents. A document has the keys type, name and spec
// (a mapping), and may have enabled; any other key is an error. Each
// Doc's Spec is compact JSON and its Line the line it starts on. A text
// with any problem gives no documents and a *DecodeError (ErrMalformed)
// naming the line and field of each.
func DecodeDocs(data []byte) ([]Doc, error) {
	if isJSON(data) {
		return decodeJSON(data, true, true)
	}
	return decodeYAML(data, true, true)
}

// DecodeSpec reads the body of a PUT: one document, JSON when contentType
// is application/json, YAML when it is application/yaml or text/yaml
// (JSON is YAML too), either when it is empty. type and name may be left
// out (the route names them); spec is required.
func DecodeSpec(data []byte, contentType string) (Doc, error) {
	mt := ""
	if contentType != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(contentType); err != nil {
			return Doc{}, fmt.Errorf("extension: %w %q", ErrMediaType, contentType)
		}
	}
	var docs []Doc
	var err error
	switch {
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		docs, err = decodeJSON(data, false, false)
	case mt == "" || mt == "application/yaml" || mt == "text/yaml" || mt == "application/x-yaml" || mt == "text/x-yaml":
		if isJSON(data) {
			docs, err = decodeJSON(data, false, false)
		} else {
			docs, err = decodeYAML(data, false, false)
		}
	default:
		return Doc{}, fmt.Errorf("extension: %w %q: send the document as JSON or YAML", ErrMediaType, contentType)
	}
	if err != nil {
		return Doc{}, err
	}
	return docs[0], nil
}

// isJSON reports whether data is one JSON value, an object or an array;
// anything else is read as YAML.
func isJSON(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(data)
}

// checkDoc checks what a document must have once its keys are read.
func checkDoc(d *Doc, seen map[string]int, named bool, ps *problems) {
	required := []string{"spec"}
	if named {
		required = []string{"type", "name", "spec"}
	}
	for _, k := range required {
		if _, ok := seen[k]; !ok {
			ps.add(d.Line, k, "is required")
		}
	}
}

// lineIndex finds the line of an offset in a text: it holds the offset
// of each line's start.
type lineIndex []int

func newLineIndex(data []byte) lineIndex {
	li := lineIndex{0}
	for i, c := range data {
		if c == '\n' {
			li = append(li, i+1)
		}
	}
	return li
}

// at is the line (1-based) of offset off.
func (li lineIndex) at(off int) int {
	n, _ := slices.BinarySearch(li, off+1)
	return n
}

// skipSpace skips the JSON white space and commas at data[off:].
func skipSpace(data []byte, off int) int {
	for off < len(data) && strings.IndexByte(" \t\r\n,", data[off]) >= 0 {
		off++
	}
	return off
}

// joinField appends a key to a dotted field path.
func joinField(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// orList: "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}
