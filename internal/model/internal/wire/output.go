package wire

import (
	"strings"

	"agentd/internal/model"
)

// Output gathers the text and reasoning of a response as they arrive and
// passes each piece on to OnDelta.
type Output struct {
	// OnDelta, if not nil, is called with each piece, in order.
	OnDelta   func(model.Delta)
	text      strings.Builder
	reasoning strings.Builder
}

// Add appends s to the text, or to the reasoning when reasoning is set, and
// passes it on. An empty s is dropped.
func (o *Output) Add(s string, reasoning bool) {
	if s == "" {
		return
	}
	if reasoning {
		o.reasoning.WriteString(s)
	} else {
		o.text.WriteString(s)
	}
	if o.OnDelta != nil {
		o.OnDelta(model.Delta{Text: s, Reasoning: reasoning})
	}
}

// Text returns the text so far.
func (o *Output) Text() string { return o.text.String() }

// Reasoning returns the reasoning so far.
func (o *Output) Reasoning() string { return o.reasoning.String() }
