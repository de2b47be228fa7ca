// Package anthropic is agentd's client for the Anthropic Messages API.
//
// A Client implements model.Provider. It converts agentd's provider-neutral
// conversation into the Messages format (a top-level system prompt, strictly
// alternating user and assistant turns, tool_use and tool_result content
// blocks), streams the response over Server-Sent Events, hands text and
// thinking deltas to the caller as they arrive, assembles tool calls from
// their streamed JSON fragments, and turns HTTP and in-stream failures into
// *model.Error values of the kinds the engine acts on. A reply that arrives
// as one JSON message (a proxy that ignores "stream") is understood too; one
// that refuses to stream (Request.NoStream, or an error saying it cannot) is
// asked for the whole response.
//
// Tool-call arguments: Response.ToolCalls[i].Args is always valid JSON:
// "{}" when empty, the input as sent when it is valid JSON, and otherwise a
// JSON string holding the raw text, which fails the engine's "arguments must
// be a JSON object" check so the model hears about it. Since the API only
// accepts an object as a tool_use input, such a call is sent back in later
// requests with the input {}.
//
// Usage.InputTokens counts every input token, cached or not:
// input_tokens + cache_creation_input_tokens + cache_read_input_tokens.
//
// Images are sent as base64 image blocks: before the text of a user
// message, and after the text inside a tool_result's content when a tool
// returned images.
package anthropic

import (
	"context"
	"maps"
	"net/http"
	"strings"
	"time"

	"agentd/internal/model"
	"agentd/internal/model/internal/wire"
)

// Defaults used when Options leaves them empty.
const (
	DefaultBaseURL   = "https://api.anthropic.com"
	DefaultVersion   = "2023-06-01"
	DefaultMaxTokens = 4096
)

// Options configures a Client. A nil *Options means all defaults.
type Options struct {
	// BaseURL is the API root; requests go to {BaseURL}/v1/messages. A
	// trailing slash, or a trailing "/v1", is allowed.
	BaseURL string
	// APIKey is sent in the x-api-key header; empty sends none (for
	// proxies that add their own).
	APIKey string
	// Version is the anthropic-version header; default DefaultVersion.
	Version string
	// HTTPClient sends the requests; nil means http.DefaultClient. Its
	// Timeout, if any, bounds the whole streamed response.
	HTTPClient *http.Client
	// Name labels this provider in errors; default "anthropic".
	Name string
	// Headers are added to every request (e.g. anthropic-beta); they may
	// replace the defaults.
	Headers map[string]string
}

// Client talks to one Anthropic Messages endpoint. It is safe for
// concurrent use.
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
	if o.Version == "" {
		o.Version = DefaultVersion
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	if o.Name == "" {
		o.Name = "anthropic"
	}
	api := map[string]string{"anthropic-version": o.Version}
	if o.APIKey != "" {
		api["x-api-key"] = o.APIKey
	}
	base := strings.TrimSuffix(strings.TrimRight(o.BaseURL, "/"), "/v1")
	return &Client{ep: wire.Endpoint{
		Name:       o.Name,
		URL:        base + "/v1/messages",
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

// Stream sends req to {BaseURL}/v1/messages and streams the response.
// onDelta, if not nil, is called with each piece of text and thinking, in
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
