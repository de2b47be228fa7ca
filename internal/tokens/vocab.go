package tokens

import (
	"bytes"
	"compress/flate"
	"embed"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math/bits"
)

// The vocabularies are kept in the binary compressed (raw DEFLATE, ~1.6 MB
// for both instead of ~10 MB as Go map literals) and decoded when a count
// first needs one. A file lists the tokens in rank order, each as its
// length in one byte and its bytes; a length of zero is a rank with no
// token. TestVocabularies checks them against the reference encoder and
// rewrites them with -update.
//
//go:embed vocab/*.bpe
var vocabFiles embed.FS

// vocab maps the tokens of one vocabulary to their ranks: an open-addressing
// table of ranks over the decoded file (~4.5 MB for o200k_base; a Go map
// of strings would take ~7 MB).
type vocab struct {
	data  string   // the decoded file: each token after its length
	off   []uint32 // token r is the data[off[r]-1] bytes at off[r]
	slots []uint32 // rank+1 of the token hashed there; 0 is empty
	seed  maphash.Seed
}

// errVocab means an embedded vocabulary file is damaged.
var errVocab = errors.New("tokens: damaged vocabulary")

// loadVocab decodes the embedded vocabulary name.
func loadVocab(name string) (*vocab, error) {
	z, err := vocabFiles.ReadFile("vocab/" + name + ".bpe")
	if err != nil {
		return nil, fmt.Errorf("tokens: vocabulary %s: %w", name, err)
	}
	var raw bytes.Buffer
	raw.Grow(2 * len(z)) // the files compress by ~1.5 to 1.9
	if _, err := io.Copy(&raw, flate.NewReader(bytes.NewReader(z))); err != nil {
		return nil, fmt.Errorf("tokens: vocabulary %s: %w", name, err)
	}
	return parseVocab(raw.String())
}

// parseVocab reads the length-prefixed tokens of data (see vocabFiles).
func parseVocab(data string) (*vocab, error) {
	var n int
	for p := 0; p < len(data); p += 1 + int(data[p]) {
		n++
	}
	v := &vocab{data: data, off: make([]uint32, 0, n), seed: maphash.MakeSeed()}
	for p := 0; p < len(data); p += 1 + int(data[p]) {
		if p+1+int(data[p]) > len(data) {
			return nil, errVocab
		}
		v.off = append(v.off, uint32(p+1))
	}
	// At most half full, so that a miss (most lookups of byte-pair
	// merging are misses) probes one or two slots.
	v.slots = make([]uint32, 1<<bits.Len(uint(2*n)))
	mask := uint64(len(v.slots) - 1)
	for r := range uint32(n) {
		tok := v.token(r)
		if tok == "" {
			continue
		}
		i := maphash.String(v.seed, tok) & mask
		for v.slots[i] != 0 {
			i = (i + 1) & mask
		}
		v.slots[i] = r + 1
	}
	return v, nil
}

// len is the number of ranks.
func (v *vocab) len() int { return len(v.off) }

func (v *vocab) token(r uint32) string {
	a := v.off[r]
	return v.data[a : a+uint32(v.data[a-1])]
}

// rank returns the rank of the token s and whether s is one.
func (v *vocab) rank(s string) (uint32, bool) {
	mask := uint64(len(v.slots) - 1)
	for i := maphash.String(v.seed, s) & mask; ; i = (i + 1) & mask {
		r := v.slots[i]
		if r == 0 {
			return 0, false
		}
		if a := v.off[r-1]; int(v.data[a-1]) == len(s) && v.data[a:a+uint32(len(s))] == s {
			return r - 1, true
		}
	}
}

// size is roughly the memory v holds, in bytes.
func (v *vocab) size() int { return len(v.data) + 4*len(v.off) + 4*len(v.slots) }
