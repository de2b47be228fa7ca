// Package tokens estimates how many tokens a model request takes, so that
// agentd can fit a conversation into a model's context window before it
// sends it. Counting is an estimate calibrated per model: it starts from
// the text's length and shape and is corrected by the usage each provider
// reports for the requests agentd actually sent.
package tokens

import (
	"math"
	"sync"
	"unicode"
	"unicode/utf8"

	"agentd/internal/model"
)

// Per-item costs the wire formats add around content (roles, separators,
// tool-call framing), in tokens.
const (
	perMessage = 4
	perToolDef = 8
	// ImageTokens is what an image is counted as: a fixed placeholder, as
	// its real cost depends on the provider's resizing.
	ImageTokens = 1000
)

// Text estimates the tokens of s without calibration: about one token per
// four bytes of Latin text, one per word-ish run of letters, one per
// punctuation mark or digit group, and one per character of scripts
// written without spaces (CJK), whichever fits the text's shape.
func Text(s string) int {
	if s == "" {
		return 0
	}
	var n float64
	word := 0  // letters in the current run
	punct := 0 // punctuation in the current run
	flush := func() {
		if word > 0 {
			// Long words split into several tokens.
			n += math.Ceil(float64(word) / 6)
			word = 0
		}
		if punct > 0 {
			// Runs like `":{"` or `://` are often one token.
			n += math.Ceil(float64(punct) / 2)
			punct = 0
		}
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'):
			// A single mark before a word usually joins it ("/blob", ".com").
			if punct > 1 {
				n += math.Ceil(float64(punct-1) / 2)
			}
			punct = 0
			word++
		case r >= 0x2E80 && (unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
			unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)):
			flush()
			n++
		case unicode.IsLetter(r):
			word += 2 // other scripts take more tokens per letter
		case unicode.IsSpace(r):
			flush()
		case unicode.IsDigit(r):
			flush()
			n += 0.34 // numbers go in groups of about three digits
		default:
			if word > 0 {
				n += math.Ceil(float64(word) / 6)
				word = 0
			}
			punct++ // punctuation, symbols
		}
	}
	flush()
	return int(math.Ceil(n))
}

// Messages estimates a request's messages without calibration.
func Messages(msgs []model.Message) int {
	n := 0
	for i := range msgs {
		n += Message(&msgs[i])
	}
	return n
}

// Message estimates one message without calibration. Each image counts
// ImageTokens, whatever its size: its bytes (or their base64) are never
// counted as text.
func Message(m *model.Message) int {
	n := perMessage + Text(m.Content) + ImageTokens*len(m.Images)
	for _, c := range m.ToolCalls {
		n += perMessage + Text(c.Name) + Text(string(c.Args))
	}
	return n
}

// Request estimates a whole request: system prompt, messages and tool
// definitions, without calibration.
func Request(r *model.Request) int {
	n := Text(r.System) + Messages(r.Messages)
	for i := range r.Tools {
		n += Tool(&r.Tools[i], Text)
	}
	return n
}

// Tool counts what offering one tool adds to a request, its name,
// description and schema counted with count (Text to estimate, a BPE
// counter to count exactly) plus the framing around them.
func Tool(t *model.ToolSpec, count func(string) int) int {
	return perToolDef + count(t.Name) + count(t.Description) + count(string(t.Parameters))
}

// Calibrator corrects estimates per model with the input tokens providers
// report: the ratio of reported to estimated tokens, smoothed. It is safe
// for concurrent use; the zero value is ready.
type Calibrator struct {
	mu     sync.Mutex
	ratios map[string]float64
}

// The bounds of a correction, so one odd report cannot derail estimates.
const (
	minRatio = 0.4
	maxRatio = 2.5
	alpha    = 0.3 // weight of a new observation
)

// Scale returns estimate corrected for modelName.
func (c *Calibrator) Scale(modelName string, estimate int) int {
	c.mu.Lock()
	r, ok := c.ratios[modelName]
	c.mu.Unlock()
	if !ok {
		return estimate
	}
	return int(math.Ceil(float64(estimate) * r))
}

// Observe records that a request estimated at estimate tokens was reported
// as actual input tokens. Reports of zero (providers that give no usage)
// are ignored.
func (c *Calibrator) Observe(modelName string, estimate, actual int) {
	if estimate <= 0 || actual <= 0 {
		return
	}
	obs := min(max(float64(actual)/float64(estimate), minRatio), maxRatio)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ratios == nil {
		c.ratios = map[string]float64{}
	}
	if r, ok := c.ratios[modelName]; ok {
		c.ratios[modelName] = r*(1-alpha) + obs*alpha
	} else {
		c.ratios[modelName] = obs
	}
}

// Ratio returns the correction for modelName and whether one was observed.
func (c *Calibrator) Ratio(modelName string) (float64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.ratios[modelName]
	return r, ok
}
