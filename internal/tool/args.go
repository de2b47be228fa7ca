package tool

import (
	"bytes"
	"encoding/json"
	"errors"
)

// DecodeArgs decodes a call's arguments (already valid against the tool's
// schema) into v strictly: an unknown field or data after the object is
// refused, so that a misspelt option is an error the model sees rather
// than a default it did not ask for. Empty arguments decode as {}. The
// caller wraps the error with its own sentinel.
func DecodeArgs(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{}`)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data after the arguments")
	}
	return nil
}
