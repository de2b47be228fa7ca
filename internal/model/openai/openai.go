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
// plain JSON chat.completion is understood too.
//
// Tool-call arguments: Response.ToolCalls[i].Args is always valid JSON. Empty
// arguments become "{}". Arguments that are valid JSON are kept as sent.
// Arguments that are not valid JSON at the end of the stream are kept as a
// JSON string holding the raw text, so they survive storage intact and fail
// the engine's "arguments must be a JSON object" check, which reports the
// problem back to the model. When such a call is sent back to the API in a
// later request, the raw text is sent as its arguments again.
package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"agentd/internal/model"
	"agentd/internal/model/sse"
)

// DefaultBaseURL is the API root used when Options.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// maxJSONResponseBytes caps a non-streamed JSON reply.
const maxJSONResponseBytes = 32 << 20

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
	url     string
	apiKey  string
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
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	if o.Name == "" {
		o.Name = "openai"
	}
	headers := make(map[string]string, len(o.Headers))
	for k, v := range o.Headers {
		headers[k] = v
	}
	return &Client{
		url:     strings.TrimRight(o.BaseURL, "/") + "/chat/completions",
		apiKey:  o.APIKey,
		hc:      o.HTTPClient,
		name:    o.Name,
		headers: headers,
		now:     time.Now,
	}
}

// Name returns the label the client uses in errors.
func (c *Client) Name() string { return c.name }

// Stream sends req to {BaseURL}/chat/completions and streams the response.
// onDelta, if not nil, is called with each piece of text and reasoning, in
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
	if c.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.apiKey)
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

// parseJSON reads a non-streamed chat.completion (or an error object).
func (p *parser) parseJSON(ctx context.Context, r io.Reader) (*model.Response, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxJSONResponseBytes+1))
	if err != nil {
		return nil, p.client.readFailure(ctx, err)
	}
	if len(data) > maxJSONResponseBytes {
		return nil, p.client.fail(model.ErrProtocol, 0, fmt.Sprintf("response larger than %d bytes", maxJSONResponseBytes))
	}
	var ch chunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return nil, p.client.fail(model.ErrProtocol, 0, "invalid JSON response: "+err.Error())
	}
	if err := p.chunkError(&ch); err != nil {
		return nil, err
	}
	if len(ch.Choices) == 0 {
		return nil, p.client.fail(model.ErrProtocol, 0, "response has no choices")
	}
	p.apply(&ch)
	return p.finish(), nil
}

// parseStream reads a Server-Sent Events stream of chat.completion.chunk
// objects ending in "data: [DONE]".
func (p *parser) parseStream(ctx context.Context, r io.Reader) (*model.Response, error) {
	sr := sse.NewReader(r, nil)
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", p.client.name, err)
		}
		ev, err := sr.Next()
		if err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				if p.finishReason != "" && ctx.Err() == nil {
					// Some servers close the stream without [DONE].
					return p.finish(), nil
				}
				if ctxErr := ctx.Err(); ctxErr != nil {
					return nil, fmt.Errorf("%s: %w", p.client.name, ctxErr)
				}
				return nil, p.client.fail(model.ErrProtocol, 0, "stream ended before the response was complete")
			}
			if errors.Is(err, sse.ErrEventTooLarge) {
				return nil, p.client.fail(model.ErrProtocol, 0, err.Error())
			}
			return nil, p.client.readFailure(ctx, err)
		}
		data := strings.TrimSpace(ev.Data)
		if data == "[DONE]" {
			return p.finish(), nil
		}
		if data == "" {
			continue
		}
		var ch chunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return nil, p.client.fail(model.ErrProtocol, 0, "invalid JSON in stream chunk: "+err.Error())
		}
		if err := p.chunkError(&ch); err != nil {
			return nil, err
		}
		p.apply(&ch)
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
