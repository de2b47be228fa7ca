// Package vector is the small amount of vector math agentd's long-term memory
// needs for recall: normalising embeddings to unit length, dot products
// (which equal cosine similarity for unit vectors), a compact little-endian
// float32 blob format for storing vectors in a database, top-k selection, and
// an in-memory flat index that scans every stored vector.
//
// A flat scan is exact and, at the sizes one agent's memory reaches (up to a
// few hundred thousand facts), fast enough that no approximate index is
// needed. Nothing here allocates on the per-vector path.
package vector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrBadBlob is returned by Decode for a blob that is not a sequence of
// finite little-endian float32 values.
var ErrBadBlob = errors.New("vector: bad blob")

// Normalize scales v in place to unit length and reports whether it could.
// A zero vector, or one holding NaN or an infinity, is left as it is and
// Normalize returns false.
func Normalize(v []float32) bool {
	var sum float64
	for _, x := range v {
		f := float64(x)
		sum += float64(f * f) // the conversion keeps the product from being fused
	}
	if sum == 0 || math.IsInf(sum, 0) || math.IsNaN(sum) {
		return false
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
	return true
}

// Dot returns the dot product of a and b. When their lengths differ, only
// the first min(len(a), len(b)) elements take part.
func Dot(a, b []float32) float32 {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+8 <= n; i += 8 {
		aa, bb := a[i:i+8:i+8], b[i:i+8:i+8]
		s0 += aa[0]*bb[0] + aa[4]*bb[4]
		s1 += aa[1]*bb[1] + aa[5]*bb[5]
		s2 += aa[2]*bb[2] + aa[6]*bb[6]
		s3 += aa[3]*bb[3] + aa[7]*bb[7]
	}
	for ; i < n; i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// Encode returns v as a blob: each element as a little-endian IEEE 754
// float32, 4 bytes per element.
func Encode(v []float32) []byte {
	return AppendEncode(make([]byte, 0, 4*len(v)), v)
}

// AppendEncode appends the blob form of v to dst and returns the extended
// slice.
func AppendEncode(dst []byte, v []float32) []byte {
	dst = slices.Grow(dst, 4*len(v))
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(x))
	}
	return dst
}

// Decode reads a blob written by Encode. It returns ErrBadBlob when the
// length is not a multiple of 4 or a value is NaN or infinite. An empty blob
// is an empty vector.
func Decode(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%w: length %d is not a multiple of 4", ErrBadBlob, len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		x := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("%w: element %d is not finite", ErrBadBlob, i)
		}
		v[i] = x
	}
	return v, nil
}
