// Package anthropic is agentd's client for the Anthropic Messages API.
//
// A Client implements model.Provider. It converts agentd's provider-neutral
// conversation into the Messages format (a top-level system prompt, strictly
// alternating user and assistant turns, tool_use and tool_result content
// blocks), streams the response over Server-Sent Events, hands text and
// thinking deltas to the caller as they arrive, assembles tool calls from
// their streamed JSON fragments, and turns HTTP and in-stream failures into
// *model.Error values of the kinds the engine acts on. A reply that arrives
// as one JSON message (a proxy that ignores "stream") is understood too.
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
package anthropic

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"agentd/internal/model"
)

// Defaults used when Options leaves them empty.
const (
	DefaultBaseURL   = "https://api.anthropic.com"
	DefaultVersion   = "2023-06-01"
	DefaultMaxTokens = 4096
)

// maxJSONResponseBytes caps a non-streamed JSON reply.
const maxJSONResponseBytes = 32 << 20

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
	url     string
	apiKey  string
	version string
	hc      *http.Client
	name    string
	headers map[string]string
	now     func() time.Time
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
	headers := make(map[string]string, len(o.Headers))
	for k, v := range o.Headers {
		headers[k] = v
	}
	base := strings.TrimSuffix(strings.TrimRight(o.BaseURL, "/"), "/v1")
	return &Client{
		url:     base + "/v1/messages",
		apiKey:  o.APIKey,
		version: o.Version,
		hc:      o.HTTPClient,
		name:    o.Name,
		headers: headers,
		now:     time.Now,
	}
}

// Name returns the label the client uses in errors.
func (c *Client) Name() string { return c.name }

// Stream sends req to {BaseURL}/v1/messages and streams the response.
// onDelta, if not nil, is called with each piece of text and thinking, in
// order, from the calling goroutine. Failures are *model.Error values, except
// cancellation of ctx, which returns an error wrapping ctx.Err().
func (c *Client) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	body, err := c.encodeRequest(req)
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, c.fail(model.ErrBadRequest, 0, "invalid base URL: "+err.Error())
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream, application/json")
	hreq.Header.Set("anthropic-version", c.version)
	if c.apiKey != "" {
		hreq.Header.Set("x-api-key", c.apiKey)
	}
	for k, v := range c.headers {
		hreq.Header.Set(k, v)
	}
	resp, err := c.hc.Do(hreq)
	if err != nil {
		return nil, c.readFailure(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, c.statusError(ctx, resp)
	}

	p := parser{client: c, onDelta: onDelta}
	br := bufio.NewReader(resp.Body)
	first, err := firstByte(br)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, c.fail(model.ErrProtocol, 0, "empty response body")
		}
		return nil, c.readFailure(ctx, err)
	}
	if first == '{' {
		return p.parseJSON(ctx, br)
	}
	return p.parseStream(ctx, br)
}

// firstByte skips leading white space and returns the first other byte
// without consuming it.
func firstByte(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b, br.UnreadByte()
	}
}

// fail returns a *model.Error of the given kind, with secrets removed from
// the message.
func (c *Client) fail(kind error, status int, msg string) *model.Error {
	return &model.Error{Kind: kind, Provider: c.name, Status: status, Message: c.redact(msg)}
}

// readFailure maps an error from sending the request or reading the
// response: cancellation of ctx is returned as such, anything else is a
// transport failure.
func (c *Client) readFailure(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w", c.name, ctxErr)
	}
	return c.fail(model.ErrTransport, 0, err.Error())
}

// redact removes the API key and the values of secret-looking headers from
// s.
func (c *Client) redact(s string) string {
	if len(c.apiKey) >= 4 {
		s = strings.ReplaceAll(s, c.apiKey, "[redacted]")
	}
	for k, v := range c.headers {
		if len(v) >= 4 && secretHeader(k) {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}

func secretHeader(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "key") || strings.Contains(n, "auth") ||
		strings.Contains(n, "token") || strings.Contains(n, "secret")
}
