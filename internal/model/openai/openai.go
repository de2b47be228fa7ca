// Package openai is agentd's client for OpenAI-compatible Chat Completions
// APIs: OpenAI itself and the many servers that speak the same wire format
// (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter and others).
//
// A Client implements model.Provider. It streams a response over
// Server-Sent Events, hands text and reasoning deltas to the caller as they
// arrive, assembles tool calls from their streamed fragments, and turns HTTP
// and in-stream failures into *model.Error values of the kinds the engine
// acts on (rate limited, overloaded, auth, context overflow, bad request,
// protocol, transport). A server that ignores "stream" and answers with one
// plain JSON chat.completion is understood too; one that refuses to stream
// (Request.NoStream, or an error saying it cannot) is asked for the whole
// response.
//
// Tool-call arguments: Response.ToolCalls[i].Args is always valid JSON. Empty
// arguments become "{}". Arguments that are valid JSON are kept as sent.
// Arguments that are not valid JSON at the end of the stream are kept as a
// JSON string holding the raw text, so they survive storage intact and fail
// the engine's "arguments must be a JSON object" check, which reports the
// problem back to the model. When such a call is sent back to the API in a
// later request, the raw text is sent as its arguments again.
//
// Images: a user message with images is sent as content parts, its text
// first, then an image_url part per image holding a data: URL
// (data:<type>;base64,<data>). Tool messages can only hold text, so the
// images of tool results (Message.Images on RoleTool messages) are sent in
// one user message right after the run of tool messages they belong to,
// made only of image_url parts, in the order of the results; the results'
// own text should say that they returned images.
package openai

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strings"
	"time"

	"agentd/internal/model"
	"agentd/internal/model/internal/wire"
	"agentd/internal/model/sse"
)

// DefaultBaseURL is the API root used when Options.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// Options configures a Client. A nil *Options means all defaults.
type Options struct {
	// BaseURL is the API root, e.g. "https://api.openai.com/v1" or, for
	// Ollama, "http://localhost:11434/v1". A trailing slash is allowed.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>". Empty sends no
	// Authorization header, as local servers expect.
	APIKey string
	// HTTPClient sends the requests; nil means http.DefaultClient. Its
	// Timeout, if any, bounds the whole streamed response.
	HTTPClient *http.Client
	// Name labels this provider in errors; default "openai".
	Name string
	// Headers are added to every request (e.g. OpenRouter's HTTP-Referer);
	// they may replace the defaults.
	Headers map[string]string
}

// Client talks to one OpenAI-compatible endpoint. It is safe for concurrent
// use.
type Client struct {
	ep wire.Endpoint
}

var _ model.Provider = (*Client)(nil)

// New returns a Client for the endpoint opts describe.
func New(opts *Options) *Client {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	if o.Name == "" {
		o.Name = "openai"
	}
	api := map[string]string{}
	if o.APIKey != "" {
		api["Authorization"] = "Bearer " + o.APIKey
	}
	return &Client{ep: wire.Endpoint{
		Name:       o.Name,
		URL:        strings.TrimRight(o.BaseURL, "/") + "/chat/completions",
		APIKey:     o.APIKey,
		APIHeaders: api,
		Headers:    maps.Clone(o.Headers),
		HTTP:       o.HTTPClient,
		Now:        time.Now,
		ErrorBody:  errorBody,
	}}
}

// Name returns the label the client uses in errors.
func (c *Client) Name() string { return c.ep.Name }

// Stream sends req to {BaseURL}/chat/completions and streams the response.
// onDelta, if not nil, is called with each piece of text and reasoning, in
// order, from the calling goroutine. Failures are *model.Error values, except
// cancellation of ctx, which returns an error wrapping ctx.Err().
func (c *Client) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	if req == nil {
		return nil, c.ep.Fail(model.ErrBadRequest, 0, "nil request")
	}
	return c.ep.Send(ctx, req, c.encodeRequest, func() (wire.Reader, wire.Reader) {
		p := &parser{ep: &c.ep, out: wire.Output{OnDelta: onDelta}}
		return p.parseJSON, p.parseStream
	})
}

// parseJSON reads a non-streamed chat.completion (or an error object).
func (p *parser) parseJSON(ctx context.Context, r io.Reader) (*model.Response, error) {
	var ch chunk
	if err := p.ep.DecodeJSON(ctx, r, &ch); err != nil {
		return nil, err
	}
	if err := p.chunkError(&ch); err != nil {
		return nil, err
	}
	if len(ch.Choices) == 0 {
		return nil, p.ep.Fail(model.ErrProtocol, 0, "response has no choices")
	}
	p.apply(&ch)
	return p.finish(), nil
}

// parseStream reads a Server-Sent Events stream of chat.completion.chunk
// objects ending in "data: [DONE]". Some servers close the stream without
// [DONE]: a response with a finish reason is complete all the same.
func (p *parser) parseStream(ctx context.Context, r io.Reader) (*model.Response, error) {
	if err := p.ep.Events(ctx, r, p.event, func() bool { return p.finishReason != "" }); err != nil {
		return nil, err
	}
	return p.finish(), nil
}

// event handles one event of the stream. It reports whether the stream is
// done.
func (p *parser) event(ev sse.Event) (bool, error) {
	data := strings.TrimSpace(ev.Data)
	if data == "[DONE]" {
		return true, nil
	}
	var ch chunk
	if !decodeChunk(data, &ch) {
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return false, p.ep.Fail(model.ErrProtocol, 0, "invalid JSON in stream chunk: "+err.Error())
		}
	}
	if err := p.chunkError(&ch); err != nil {
		return false, err
	}
	p.apply(&ch)
	return false, nil
}
