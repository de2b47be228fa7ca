package approval

import (
	"encoding/json"
	"fmt"
)

// FromMeta takes the approval out of an MCP request's _meta object (the
// value under [MetaKey]). The value may be a decoded JSON object
// (map[string]any, as an MCP SDK hands it over), JSON text (a string,
// []byte or json.RawMessage), or an [Approval]. The error wraps
// [ErrMissing] when there is no approval and [ErrMalformed] when the value
// is not an approval object. FromMeta does not check the signature: call
// [Verifier.Verify] or [Approval.Check] next.
func FromMeta(meta map[string]any) (*Approval, error) {
	v, ok := meta[MetaKey]
	if !ok || v == nil {
		return nil, fmt.Errorf("%w: no %q in _meta", ErrMissing, MetaKey)
	}
	var raw []byte
	switch x := v.(type) {
	case *Approval:
		if x == nil {
			return nil, fmt.Errorf("%w: no %q in _meta", ErrMissing, MetaKey)
		}
		c := *x
		return &c, nil
	case Approval:
		return &x, nil
	case json.RawMessage:
		raw = x
	case []byte:
		raw = x
	case string:
		raw = []byte(x)
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return nil, fmt.Errorf("%w: %q holds a %T", ErrMalformed, MetaKey, v)
		}
		raw = b
	}
	return Decode(raw)
}

// Decode decodes an approval's JSON wire object. Fields it does not know
// are ignored. The error wraps [ErrMalformed].
func Decode(data []byte) (*Approval, error) {
	var a *Approval
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if a == nil {
		return nil, fmt.Errorf("%w: null instead of an approval object", ErrMalformed)
	}
	return a, nil
}
