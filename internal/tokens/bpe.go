package tokens

import (
	"strings"
	"sync"
	"unicode/utf8"

	"agentd/internal/model"
)

// BPE counts tokens exactly for the model families whose vocabulary agentd
// embeds (OpenAI's o200k_base and cl100k_base). The vocabularies stay
// compressed in the binary until a count first needs one; it is then
// decoded (o200k_base: ~15 ms and ~4 MB) and kept. It is safe for
// concurrent use; the zero value is ready.
type BPE struct {
	o200k, cl100k lazyVocab
}

// lazyVocab is one vocabulary, decoded on first use.
type lazyVocab struct {
	mu  sync.Mutex
	v   *vocab
	err error // the embedded file is damaged: counts fall back to Text
}

func (l *lazyVocab) get(name string) (*vocab, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.v == nil && l.err == nil {
		l.v, l.err = loadVocab(name)
	}
	return l.v, l.err
}

// The embedded vocabularies.
const (
	O200kBase  = "o200k_base"
	Cl100kBase = "cl100k_base"
)

// Encoding returns the vocabulary of an OpenAI model by name, and whether
// one matches.
func Encoding(name string) (string, bool) {
	n := strings.ToLower(name)
	for _, p := range []string{"gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "gpt-oss"} {
		if strings.HasPrefix(n, p) {
			return O200kBase, true
		}
	}
	for _, p := range []string{"gpt-4", "gpt-3.5", "gpt-35"} {
		if strings.HasPrefix(n, p) {
			return Cl100kBase, true
		}
	}
	return "", false
}

// Counter returns a function counting the tokens of text for the model,
// or nil when no embedded vocabulary matches it. The vocabulary is decoded
// when the function is first called.
func (b *BPE) Counter(provider, name string) func(string) int {
	if provider != "openai" {
		return nil
	}
	enc, ok := Encoding(name)
	if !ok {
		return nil
	}
	lv, split := &b.o200k, splitter(splitO200k)
	if enc == Cl100kBase {
		lv, split = &b.cl100k, splitCl100k
	}
	return func(s string) int {
		v, err := lv.get(enc)
		if err != nil {
			return Text(s)
		}
		return v.count(s, split)
	}
}

// count counts the tokens of s: each piece split cuts is one token if the
// vocabulary has it, else as many as byte-pair merging leaves.
func (v *vocab) count(s string, split splitter) int {
	if !utf8.ValidString(s) {
		// As the reference encoder does: each byte that is not UTF-8
		// becomes U+FFFD.
		s = string([]rune(s))
	}
	n := 0
	var scratch []int32
	for i := 0; i < len(s); {
		e := split(s, i)
		piece := s[i:e]
		if _, ok := v.rank(piece); ok {
			n++
		} else {
			var parts int
			parts, scratch = v.merge(piece, scratch)
			n += parts
		}
		i = e
	}
	return n
}

// CountRequest counts a request with count, adding the same per-item
// framing as Request.
func CountRequest(r *model.Request, count func(string) int) int {
	n := count(r.System)
	for i := range r.Messages {
		m := &r.Messages[i]
		n += perMessage + count(m.Content) + ImageTokens*len(m.Images)
		for _, c := range m.ToolCalls {
			n += perMessage + count(c.Name) + count(string(c.Args))
		}
	}
	for i := range r.Tools {
		n += Tool(&r.Tools[i], count)
	}
	return n
}
