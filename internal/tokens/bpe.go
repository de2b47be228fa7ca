package tokens

import (
	"strings"
	"sync"

	"github.com/tiktoken-go/tokenizer/codec"

	"agentd/internal/model"
)

// BPE counts tokens exactly for the model families whose vocabulary agentd
// embeds (OpenAI's o200k_base and cl100k_base). A vocabulary is loaded on
// first use (o200k_base: ~40 ms and ~7 MB) and kept. It is safe for
// concurrent use; the zero value is ready.
type BPE struct {
	mu     sync.Mutex
	codecs map[string]*codec.Codec
}

// The embedded vocabularies (only these two are linked in).
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
// or nil when no embedded vocabulary matches it.
func (b *BPE) Counter(provider, name string) func(string) int {
	if provider != "openai" {
		return nil
	}
	enc, ok := Encoding(name)
	if !ok {
		return nil
	}
	b.mu.Lock()
	c, ok := b.codecs[enc]
	if !ok {
		if enc == O200kBase {
			c = codec.NewO200kBase()
		} else {
			c = codec.NewCl100kBase()
		}
		if b.codecs == nil {
			b.codecs = map[string]*codec.Codec{}
		}
		b.codecs[enc] = c
	}
	b.mu.Unlock()
	return func(s string) int {
		n, err := c.Count(s)
		if err != nil {
			return Text(s)
		}
		return n
	}
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
