package openai

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"

	"agentd/internal/model"
	"agentd/internal/model/internal/wire"
)

// chunk is one chat.completion.chunk of a stream, or a whole
// chat.completion, or an error object (OpenAI's {"error":{...}} or vLLM's
// {"object":"error",...}).
type chunk struct {
	Object  string          `json:"object"`
	Model   string          `json:"model"`
	Choices []choice        `json:"choices"`
	Usage   *usage          `json:"usage"`
	Error   json.RawMessage `json:"error"`
	// Top-level error fields, as vLLM sends them.
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

type choice struct {
	Index        int     `json:"index"`
	Delta        *delta  `json:"delta"`   // streamed chunk
	Message      *delta  `json:"message"` // non-streamed completion
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	Content          text            `json:"content"`
	ReasoningContent text            `json:"reasoning_content"` // DeepSeek, vLLM, llama.cpp
	Reasoning        text            `json:"reasoning"`         // Ollama, OpenRouter
	ToolCalls        []toolCallDelta `json:"tool_calls"`
}

type toolCallDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments text   `json:"arguments"`
	} `json:"function"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// text is a string field that some servers send in other shapes: null, an
// array of content parts ([{"type":"text","text":"..."}]) or, for tool-call
// arguments, a JSON object instead of a string holding one. Anything else
// reads as empty.
type text string

func (t *text) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) == 0:
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = text(s)
	case b[0] == '{':
		*t = text(b)
	case b[0] == '[':
		var parts []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(b, &parts) == nil {
			var sb strings.Builder
			for _, p := range parts {
				sb.WriteString(p.Text)
			}
			*t = text(sb.String())
		}
	}
	return nil
}

// callAcc accumulates one tool call from its fragments.
type callAcc struct {
	index int
	id    string
	name  string
	args  []byte
}

// parser accumulates a response from chunks.
type parser struct {
	ep           *wire.Endpoint
	out          wire.Output
	calls        []callAcc
	usage        model.Usage
	finishReason string
	model        string
}

// apply adds one chunk (or a whole completion) to the response.
func (p *parser) apply(ch *chunk) {
	if ch.Model != "" {
		p.model = ch.Model
	}
	if ch.Usage != nil {
		p.usage = model.Usage{InputTokens: ch.Usage.PromptTokens, OutputTokens: ch.Usage.CompletionTokens}
	}
	for i := range ch.Choices {
		c := &ch.Choices[i]
		if c.Index != 0 {
			continue // only the first choice is used
		}
		d := c.Delta
		if d == nil {
			d = c.Message
		}
		if d != nil {
			r := d.ReasoningContent
			if r == "" {
				r = d.Reasoning
			}
			p.out.Add(string(r), true)
			p.out.Add(string(d.Content), false)
			for j := range d.ToolCalls {
				p.addCall(j, &d.ToolCalls[j])
			}
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			p.finishReason = *c.FinishReason
		}
	}
}

// addCall merges one tool-call fragment. pos is its position in the chunk,
// used as the index when a server leaves the index out.
func (p *parser) addCall(pos int, tc *toolCallDelta) {
	idx := pos
	if tc.Index != nil {
		idx = *tc.Index
	}
	var acc *callAcc
	for i := len(p.calls) - 1; i >= 0; i-- {
		if p.calls[i].index == idx {
			acc = &p.calls[i]
			break
		}
	}
	// A fresh id at an index whose call is already complete starts another
	// call: some servers send every call of a parallel batch at index 0.
	if acc != nil && tc.ID != "" && acc.id != "" && tc.ID != acc.id && json.Valid(acc.args) {
		acc = nil
	}
	if acc == nil {
		p.calls = append(p.calls, callAcc{index: idx})
		acc = &p.calls[len(p.calls)-1]
	}
	if acc.id == "" {
		acc.id = tc.ID
	}
	if acc.name == "" {
		acc.name = tc.Function.Name
	}
	acc.args = append(acc.args, tc.Function.Arguments...)
}

// finish returns the assembled response.
func (p *parser) finish() *model.Response {
	resp := &model.Response{
		Text:       p.out.Text(),
		Reasoning:  p.out.Reasoning(),
		Usage:      p.usage,
		StopReason: p.finishReason,
		Model:      p.model,
	}
	for _, acc := range p.calls {
		id := acc.id
		if id == "" {
			id = newCallID()
		}
		resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{ID: id, Name: acc.name, Args: finalArgs(acc.args)})
	}
	return resp
}

// finalArgs returns valid JSON for the accumulated arguments: "{}" when
// empty, the arguments when they are valid JSON, and otherwise a JSON string
// holding the raw text.
func finalArgs(raw []byte) json.RawMessage {
	a := bytes.TrimSpace(raw)
	if len(a) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(a) {
		return json.RawMessage(bytes.Clone(a))
	}
	b, _ := json.Marshal(string(raw)) // a string always encodes
	return b
}

// newCallID makes an id for a tool call the server sent without one. It is
// random so that it stays unique within a session.
func newCallID() string {
	var b [12]byte
	rand.Read(b[:]) // never fails
	return "call_" + hex.EncodeToString(b[:])
}
