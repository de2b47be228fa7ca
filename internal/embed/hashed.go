package embed

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"agentd/internal/vector"
)

// DefaultDim is the dimension of a Hashed embedder created with dim <= 0.
const DefaultDim = 384

// Feature weights. A word of L letters yields 3L-3 character n-grams but one
// word feature, so the word feature weighs more than any single n-gram: an
// exact shared word counts for more than a shared fragment.
const (
	wordWeight = 1.0
	gramWeight = 0.35
	minGram    = 3
	maxGram    = 5
)

// Hashed is the offline embedder. It is lexical, not semantic: two texts are
// close when they share words or parts of words, whatever those words mean.
//
// A text is lowercased and split into words: runs of Unicode letters, digits
// and combining marks. Each word contributes the word itself and its
// character 3-, 4- and 5-grams with word-boundary padding ("<me", "mem", …,
// "ry>"), so inflections and typos still overlap. Scripts written without
// spaces between words are matched through their character n-grams. Each
// distinct feature is hashed (64-bit FNV-1a) to a bucket and a sign, weighted
// by the square root of its count in the text, and the vector is scaled to
// unit length.
//
// The result depends only on the text and the dimension: it is the same on
// every run and platform. A text without letters or digits gets a zero
// vector. A Hashed is safe for concurrent use.
type Hashed struct {
	dim int
}

var _ Embedder = (*Hashed)(nil)

// NewHashed returns a Hashed embedder producing vectors of dim elements;
// dim <= 0 means DefaultDim.
func NewHashed(dim int) *Hashed {
	if dim <= 0 {
		dim = DefaultDim
	}
	return &Hashed{dim: dim}
}

// Dim returns the vector length.
func (h *Hashed) Dim() int { return h.dim }

// Name returns "hashed-ngram-<dim>".
func (h *Hashed) Name() string { return "hashed-ngram-" + strconv.Itoa(h.dim) }

// Embed returns one vector per text. It fails only when ctx is done.
func (h *Hashed) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var keys []uint64
	var offs []int
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out[i], keys, offs = h.vector(t, keys, offs)
	}
	return out, nil
}

// Feature kinds, kept in the low bit of a feature key.
const (
	kindWord = 0
	kindGram = 1
)

// vector embeds one text. keys and offs are scratch buffers, returned for
// reuse.
func (h *Hashed) vector(text string, keys []uint64, offs []int) ([]float32, []uint64, []int) {
	keys = keys[:0]
	text = strings.ToLower(text)
	for len(text) > 0 {
		// Skip to the start of the next word.
		start := strings.IndexFunc(text, isWordRune)
		if start < 0 {
			break
		}
		text = text[start:]
		end := strings.IndexFunc(text, notWordRune)
		if end < 0 {
			end = len(text)
		}
		word := text[:end]
		text = text[end:]

		keys = append(keys, featureKey(kindWord, false, word, false))
		// offs[j] is the byte offset of the word's j-th rune; offs[L] = len(word).
		offs = offs[:0]
		for j := range word {
			offs = append(offs, j)
		}
		offs = append(offs, len(word))
		runes := len(offs) - 1
		// Padded positions: 0 is '<', 1..runes are the word's runes, runes+1 is '>'.
		padded := runes + 2
		for n := minGram; n <= maxGram && n <= padded; n++ {
			for p := 0; p+n <= padded; p++ {
				lo := max(p, 1) - 1         // first word rune covered
				hi := min(p+n-1, runes) - 1 // last word rune covered
				pre, suf := p == 0, p+n == padded
				keys = append(keys, featureKey(kindGram, pre, word[offs[lo]:offs[hi+1]], suf))
			}
		}
	}

	v := make([]float32, h.dim)
	if len(keys) == 0 {
		return v, keys, offs
	}
	// Sort so that equal features are adjacent and are added in the same
	// order everywhere.
	slices.Sort(keys)
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && keys[j] == keys[i] {
			j++
		}
		k := keys[i]
		w := gramWeight
		if k&1 == kindWord {
			w = wordWeight
		}
		w *= math.Sqrt(float64(j - i))
		m := mix(k)
		b := m % uint64(h.dim)
		if m>>63 == 1 {
			v[b] -= float32(w)
		} else {
			v[b] += float32(w)
		}
		i = j
	}
	vector.Normalize(v)
	return v, keys, offs
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r)
}

func notWordRune(r rune) bool { return !isWordRune(r) }

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// featureKey hashes one feature: its kind, an optional leading '<', the text
// s, and an optional trailing '>'. The kind is also kept in the low bit.
func featureKey(kind byte, pre bool, s string, suf bool) uint64 {
	h := uint64(fnvOffset)
	h = (h ^ uint64(kind)) * fnvPrime
	if pre {
		h = (h ^ '<') * fnvPrime
	}
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	if suf {
		h = (h ^ '>') * fnvPrime
	}
	return h&^1 | uint64(kind)
}

// mix spreads a key's bits (the SplitMix64 finalizer) so both the bucket,
// taken from the low bits, and the sign, the top bit, are well distributed.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
