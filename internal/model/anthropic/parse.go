package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"agentd/internal/model"
	"agentd/internal/model/internal/wire"
	"agentd/internal/model/sse"
)

// event is one streamed event, or (for a non-streamed reply) a whole
// message, or an error object.
type event struct {
	Type         string        `json:"type"`
	Message      *message      `json:"message"`       // message_start
	Index        int           `json:"index"`         // content_block_*
	ContentBlock *contentBlock `json:"content_block"` // content_block_start
	Delta        *eventDelta   `json:"delta"`         // content_block_delta, message_delta
	Usage        *usage        `json:"usage"`         // message_delta
	Error        *apiErrorBody `json:"error"`         // error

	// Fields of a whole message (non-streamed reply).
	Model      string         `json:"model"`
	Content    []contentBlock `json:"content"`
	StopReason string         `json:"stop_reason"`
}

type message struct {
	Model string `json:"model"`
	Usage *usage `json:"usage"`
}

type contentBlock struct {
	Type     string          `json:"type"`
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
}

type eventDelta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`         // text_delta
	PartialJSON string `json:"partial_json"` // input_json_delta
	Thinking    string `json:"thinking"`     // thinking_delta
	StopReason  string `json:"stop_reason"`  // message_delta
}

type usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

type apiErrorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// block is a content block being assembled.
type block struct {
	index      int
	typ        string // text, tool_use, thinking, or a type agentd does not use
	id, name   string
	startInput json.RawMessage
	args       []byte
}

// parser accumulates a response from events.
type parser struct {
	ep     *wire.Endpoint
	out    wire.Output
	blocks []block
	usage  usage
	stop   string
	model  string
}

// parseStream reads the event stream until message_stop.
func (p *parser) parseStream(ctx context.Context, r io.Reader) (*model.Response, error) {
	if err := p.ep.Events(ctx, r, p.event, nil); err != nil {
		return nil, err
	}
	return p.finish(), nil
}

// event handles one event of the stream. It reports whether the message is
// complete.
func (p *parser) event(ev sse.Event) (bool, error) {
	var e event
	if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
		return false, p.ep.Fail(model.ErrProtocol, 0, "invalid JSON in "+eventName(ev.Type)+" event: "+err.Error())
	}
	if e.Type == "" {
		e.Type = ev.Type
	}
	return p.apply(&e)
}

func eventName(t string) string {
	if t == "" {
		return "stream"
	}
	return strconv.Quote(t)
}

// apply handles one event. It reports whether the message is complete.
func (p *parser) apply(e *event) (bool, error) {
	switch e.Type {
	case "message_start":
		if e.Message != nil {
			p.model = e.Message.Model
			if e.Message.Usage != nil {
				p.addUsage(e.Message.Usage)
			}
		}
	case "content_block_start":
		if e.ContentBlock == nil {
			return false, p.ep.Fail(model.ErrProtocol, 0, "content_block_start without a content_block")
		}
		if p.find(e.Index) != nil {
			return false, p.ep.Fail(model.ErrProtocol, 0, fmt.Sprintf("content block %d started twice", e.Index))
		}
		p.start(e.Index, e.ContentBlock)
	case "content_block_delta":
		if e.Delta == nil {
			return false, p.ep.Fail(model.ErrProtocol, 0, "content_block_delta without a delta")
		}
		b := p.find(e.Index)
		if b == nil {
			return false, p.ep.Fail(model.ErrProtocol, 0, fmt.Sprintf("delta for content block %d, which was never started", e.Index))
		}
		switch e.Delta.Type {
		case "text_delta":
			p.out.Add(e.Delta.Text, false)
		case "thinking_delta":
			p.out.Add(e.Delta.Thinking, true)
		case "input_json_delta":
			b.args = append(b.args, e.Delta.PartialJSON...)
		}
		// signature_delta, citations_delta and others carry nothing agentd
		// keeps.
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != "" {
			p.stop = e.Delta.StopReason
		}
		if e.Usage != nil {
			p.addUsage(e.Usage)
		}
	case "message_stop":
		return true, nil
	case "error":
		return false, p.eventError(e)
	}
	// ping, content_block_stop and event types added later need nothing.
	return false, nil
}

// parseJSON reads a non-streamed reply: a whole message or an error.
func (p *parser) parseJSON(ctx context.Context, r io.Reader) (*model.Response, error) {
	var e event
	if err := p.ep.DecodeJSON(ctx, r, &e); err != nil {
		return nil, err
	}
	if e.Type == "error" || e.Error != nil {
		return nil, p.eventError(&e)
	}
	if e.Type != "message" {
		return nil, p.ep.Fail(model.ErrProtocol, 0, fmt.Sprintf("unexpected response type %q", e.Type))
	}
	p.model = e.Model
	p.stop = e.StopReason
	if e.Usage != nil {
		p.addUsage(e.Usage)
	}
	for i := range e.Content {
		p.start(i, &e.Content[i])
	}
	return p.finish(), nil
}

// start begins content block index with what cb carries already.
func (p *parser) start(index int, cb *contentBlock) {
	p.blocks = append(p.blocks, block{index: index, typ: cb.Type, id: cb.ID, name: cb.Name, startInput: cb.Input})
	switch cb.Type {
	case "text":
		p.out.Add(cb.Text, false)
	case "thinking":
		p.out.Add(cb.Thinking, true)
	}
}

func (p *parser) find(index int) *block {
	for i := len(p.blocks) - 1; i >= 0; i-- {
		if p.blocks[i].index == index {
			return &p.blocks[i]
		}
	}
	return nil
}

// addUsage takes the counts a usage object reports; later reports (the
// cumulative counts of message_delta) replace earlier ones.
func (p *parser) addUsage(u *usage) {
	if u.InputTokens > 0 {
		p.usage.InputTokens = u.InputTokens
	}
	if u.CacheCreationInputTokens > 0 {
		p.usage.CacheCreationInputTokens = u.CacheCreationInputTokens
	}
	if u.CacheReadInputTokens > 0 {
		p.usage.CacheReadInputTokens = u.CacheReadInputTokens
	}
	if u.OutputTokens > 0 {
		p.usage.OutputTokens = u.OutputTokens
	}
}

// finish returns the assembled response.
func (p *parser) finish() *model.Response {
	resp := &model.Response{
		Text:      p.out.Text(),
		Reasoning: p.out.Reasoning(),
		Usage: model.Usage{
			InputTokens:  p.usage.InputTokens + p.usage.CacheCreationInputTokens + p.usage.CacheReadInputTokens,
			OutputTokens: p.usage.OutputTokens,
		},
		StopReason: p.stop,
		Model:      p.model,
	}
	for _, b := range p.blocks {
		if b.typ != "tool_use" {
			continue
		}
		args := b.args
		if len(bytes.TrimSpace(args)) == 0 {
			args = b.startInput
		}
		resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{ID: b.id, Name: b.name, Args: finalArgs(args)})
	}
	return resp
}

// finalArgs returns valid JSON for the accumulated input: "{}" when empty,
// the input when it is valid JSON, and otherwise a JSON string holding the
// raw text.
func finalArgs(raw []byte) json.RawMessage {
	a := bytes.TrimSpace(raw)
	if len(a) == 0 || string(a) == "null" {
		return json.RawMessage("{}")
	}
	if json.Valid(a) {
		return json.RawMessage(a)
	}
	b, _ := json.Marshal(string(raw)) // a string always encodes
	return b
}
