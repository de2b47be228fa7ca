package embed

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"

	"agentd/internal/vector"
)

// response is the body of an embeddings response.
type response struct {
	Data []struct {
		Index     *int            `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Error json.RawMessage `json:"error"`
}

// decodeResponse reads an OpenAI embeddings response for n inputs and
// returns the vectors ordered by their "index", scaled to unit length. Each
// "embedding" is either an array of numbers or a base64 string of
// little-endian float32 values. All vectors must have the same length, and
// dim elements when dim > 0. Errors wrap ErrBadResponse.
func decodeResponse(body []byte, n, dim int) ([][]float32, error) {
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadResponse, err)
	}
	if len(r.Error) > 0 && string(r.Error) != "null" && len(r.Data) == 0 {
		return nil, fmt.Errorf("%w: error in response: %s", ErrBadResponse, errorMessage(body, 200))
	}
	if len(r.Data) != n {
		return nil, fmt.Errorf("%w: %d embeddings for %d inputs", ErrBadResponse, len(r.Data), n)
	}
	out := make([][]float32, n)
	indexed := n > 0 && r.Data[0].Index != nil
	for i, d := range r.Data {
		pos := i
		if indexed != (d.Index != nil) {
			return nil, fmt.Errorf("%w: only some embeddings have an index", ErrBadResponse)
		}
		if indexed {
			pos = *d.Index
			if pos < 0 || pos >= n {
				return nil, fmt.Errorf("%w: index %d out of range for %d inputs", ErrBadResponse, pos, n)
			}
			if out[pos] != nil {
				return nil, fmt.Errorf("%w: index %d appears twice", ErrBadResponse, pos)
			}
		}
		v, err := decodeEmbedding(d.Embedding)
		if err != nil {
			return nil, fmt.Errorf("%w: embedding %d: %v", ErrBadResponse, pos, err)
		}
		if len(v) == 0 {
			return nil, fmt.Errorf("%w: embedding %d is empty", ErrBadResponse, pos)
		}
		if dim == 0 {
			dim = len(v)
		}
		if len(v) != dim {
			return nil, fmt.Errorf("%w: embedding %d has %d elements, want %d", ErrBadResponse, pos, len(v), dim)
		}
		vector.Normalize(v)
		out[pos] = v
	}
	return out, nil
}

// decodeEmbedding reads one "embedding" value.
func decodeEmbedding(raw json.RawMessage) ([]float32, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, fmt.Errorf("missing")
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			if b, err = base64.RawStdEncoding.DecodeString(s); err != nil {
				return nil, fmt.Errorf("invalid base64: %v", err)
			}
		}
		return vector.Decode(b)
	case '[':
		var fs []float64
		if err := json.Unmarshal(raw, &fs); err != nil {
			return nil, err
		}
		v := make([]float32, len(fs))
		for i, f := range fs {
			if math.Abs(f) > math.MaxFloat32 {
				return nil, fmt.Errorf("element %d out of float32 range", i)
			}
			v[i] = float32(f)
		}
		return v, nil
	default:
		return nil, fmt.Errorf("neither an array nor a base64 string")
	}
}
