package extension

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"agentd/internal/schema"
)

// Check validates a document without writing it: its type, its name, its
// spec against the type's schema, then the type's own checks. The error is
// a *ValidationError listing every problem, or ErrUnknownType.
func (m *Manager) Check(ctx context.Context, d Doc) error {
	_, _, err := m.check(ctx, &d)
	return err
}

// check validates d and returns its type and canonical spec.
func (m *Manager) check(ctx context.Context, d *Doc) (*compiled, json.RawMessage, error) {
	c, ok := m.typ(d.Type)
	if !ok {
		return nil, nil, fmt.Errorf("extension: %w: %q", ErrUnknownType, d.Type)
	}
	var errs []schema.Error
	if !ValidName(d.Name) {
		errs = append(errs, schema.Error{Pointer: "/name", Message: fmt.Sprintf(
			"must be 1 to %d letters, digits, '-', '_' or inner dots (not a path)", MaxName)})
	}
	spec, v, err := canon(d.Spec)
	switch {
	case err != nil:
		errs = append(errs, schema.Error{Pointer: "/spec", Message: err.Error()})
	default:
		errs = append(errs, schema.Under("/spec", c.schema.Validate(v))...)
	}
	if len(errs) == 0 {
		if ck, ok := c.Handler.(Checker); ok {
			cd := *d
			cd.Spec = spec
			errs = append(errs, ck.Check(ctx, &cd)...)
		}
	}
	if len(errs) > 0 {
		return nil, nil, &ValidationError{Doc: d.Key(), Errors: errs}
	}
	return c, spec, nil
}

// canon returns a spec in its canonical form — compact JSON with object
// keys sorted, numbers as written — and as decoded, or why it is not a
// JSON object.
func canon(raw json.RawMessage) (json.RawMessage, any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil, fmt.Errorf("is required")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, nil, fmt.Errorf("is not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, nil, fmt.Errorf("is not one JSON value")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, nil, fmt.Errorf("must be an object")
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot be encoded: %v", err)
	}
	return out, v, nil
}
