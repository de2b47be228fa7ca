package action

import (
	"encoding/json"
	"errors"
	"fmt"
)

// extractor takes what a call returns out of a JSON response.
type extractor struct {
	path     path     // when set
	template template // else
}

func newExtractor(e *Extract) (*extractor, error) {
	switch {
	case e.Path != "" && e.Template != "":
		return nil, errors.New("give path or template, not both")
	case e.Path != "":
		p, err := parsePath(e.Path)
		if err != nil {
			return nil, fmt.Errorf("path: %v", err)
		}
		return &extractor{path: p}, nil
	case e.Template != "":
		t, err := parseTemplate(e.Template)
		if err != nil {
			return nil, fmt.Errorf("template: %v", err)
		}
		return &extractor{template: t}, nil
	}
	return nil, errors.New("give path or template")
}

// apply returns the text of what the extractor takes from v: the value at
// the path (a string as it is, anything else as JSON), or the template
// filled (a reference to nothing is empty).
func (e *extractor) apply(v any) (string, error) {
	if e.path == nil {
		return e.template.String(v), nil
	}
	x, ok := e.path.lookup(v)
	if !ok {
		return "", fmt.Errorf("the response has nothing at %s", e.path)
	}
	if s, ok := x.(string); ok {
		return s, nil
	}
	b, err := json.MarshalIndent(x, "", "  ")
	return string(b), err
}
