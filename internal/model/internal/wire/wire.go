// Package wire holds what agentd's HTTP model clients (internal/model/openai
// and internal/model/anthropic) do alike: posting a JSON request, telling an
// event stream from a reply sent whole, reading either within its bounds and
// its idle timeout, asking again without streaming when a server says it
// cannot stream, turning a non-2xx response into a *model.Error with its
// Retry-After, the error kinds an HTTP status implies, and keeping the API
// key, secret-looking header values and credentials out of error messages. What is particular to
// one API's format (its request body, events and error shapes) stays in the
// client's own package.
package wire

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
	"sync"
	"time"

	"agentd/internal/model"
	"agentd/internal/model/sse"
)

// maxJSONResponseBytes caps a non-streamed JSON reply.
const maxJSONResponseBytes = 32 << 20

// emptySchema is sent for a tool that declares no parameters.
const emptySchema = `{"type":"object","properties":{}}`

// Endpoint is one model API endpoint and how to talk to it. Its fields are
// set before first use and not changed after; it is then safe for concurrent
// use. It remembers the models whose server said it cannot stream.
type Endpoint struct {
	// Name labels the provider in errors.
	Name string
	// URL receives every request.
	URL string
	// APIKey is kept out of error messages. It is sent only as APIHeaders
	// say.
	APIKey string
	// APIHeaders are the headers the API wants on every request (its key, a
	// version), set after Content-Type and Accept.
	APIHeaders map[string]string
	// Headers are the caller's own, set last, so they may replace the
	// others. The values of those whose names look secret are kept out of
	// error messages.
	Headers map[string]string
	// HTTP sends the requests.
	HTTP *http.Client
	// Now tells the time, for a Retry-After given as a date.
	Now func() time.Time
	// ErrorBody reads the body of a non-2xx response: its message and the
	// kind of failure it reports. fallback is the message to use when the
	// body carries none: the start of the body, or the status text when the
	// body is empty.
	ErrorBody func(status int, body []byte, fallback string) (msg string, kind error)

	noStream sync.Map // model name → true: its server cannot stream
}

// Reader reads a response body into a response.
type Reader func(ctx context.Context, r io.Reader) (*model.Response, error)

// Send sends req, encoded by encode, and reads the reply with the readers
// that newReaders returns (fresh ones for each attempt): streamed unless
// req.NoStream is set or the server said before that it cannot stream this
// model. When a server answers a streamed request with an error saying it
// cannot stream (CannotStream), the request is sent again at once without
// streaming, and this model is not asked to stream again by this Endpoint.
func (e *Endpoint) Send(ctx context.Context, req *model.Request, encode func(req *model.Request, stream bool) ([]byte, error),
	newReaders func() (whole, stream Reader)) (*model.Response, error) {
	stream := !req.NoStream
	if stream {
		_, refused := e.noStream.Load(req.Model)
		stream = !refused
	}
	body, err := encode(req, stream)
	if err != nil {
		return nil, err
	}
	whole, streamed := newReaders()
	resp, err := e.Post(ctx, req.IdleTimeout, body, whole, streamed)
	if err == nil || !stream || !CannotStream(err) {
		return resp, err
	}
	e.noStream.Store(req.Model, true)
	if body, err = encode(req, false); err != nil {
		return nil, err
	}
	whole, streamed = newReaders()
	return e.Post(ctx, req.IdleTimeout, body, whole, streamed)
}

// Post sends body as a JSON request. It hands the reply of a 2xx response to
// whole when its first byte that is not white space opens a JSON object (a
// server that ignored "stream" and sent the response in one piece) and to
// stream otherwise. With idle > 0, a reply of which nothing arrives for idle
// (from its headers on) fails as a transport failure. Failures are
// *model.Error values, except cancellation of ctx, which returns an error
// wrapping ctx.Err().
func (e *Endpoint) Post(ctx context.Context, idle time.Duration, body []byte, whole, stream Reader) (*model.Response, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(body))
	if err != nil {
		return nil, e.Fail(model.ErrBadRequest, 0, "invalid base URL: "+err.Error())
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream, application/json")
	for k, v := range e.APIHeaders {
		hreq.Header.Set(k, v)
	}
	for k, v := range e.Headers {
		hreq.Header.Set(k, v)
	}
	resp, err := e.HTTP.Do(hreq)
	if err != nil {
		return nil, e.ReadFailure(ctx, err)
	}
	defer resp.Body.Close()
	var rd io.Reader = resp.Body
	if idle > 0 {
		w := watch(resp.Body, idle, cancel)
		defer w.stop()
		rd = w
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, e.statusError(ctx, resp.StatusCode, resp.Header, rd)
	}
	// A small buffer: it only looks at the first byte, and the readers
	// that follow read past it, through their own buffers, once it is used.
	br := bufio.NewReaderSize(rd, 64)
	first, err := firstByte(br)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, e.Fail(model.ErrProtocol, 0, "empty response body")
		}
		return nil, e.ReadFailure(ctx, err)
	}
	if first == '{' {
		return whole(ctx, br)
	}
	return stream(ctx, br)
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

// DecodeJSON reads a reply sent whole, of at most 32 MiB, into v.
func (e *Endpoint) DecodeJSON(ctx context.Context, r io.Reader, v any) error {
	data, err := io.ReadAll(io.LimitReader(r, maxJSONResponseBytes+1))
	if err != nil {
		return e.ReadFailure(ctx, err)
	}
	if len(data) > maxJSONResponseBytes {
		return e.Fail(model.ErrProtocol, 0, fmt.Sprintf("response larger than %d bytes", maxJSONResponseBytes))
	}
	if err := json.Unmarshal(data, v); err != nil {
		return e.Fail(model.ErrProtocol, 0, "invalid JSON response: "+err.Error())
	}
	return nil
}

// Events reads a Server-Sent Events stream and hands each event whose data
// is not blank to handle, until handle reports the response done or fails.
// When the stream ends first, complete (if not nil) says whether what
// arrived is nonetheless a whole response, as some servers leave out the end
// marker. Failures are *model.Error values, except cancellation of ctx,
// which returns an error wrapping ctx.Err().
func (e *Endpoint) Events(ctx context.Context, r io.Reader, handle func(sse.Event) (done bool, err error), complete func() bool) error {
	sr := sse.NewReader(r, nil)
	for {
		if ctx.Err() != nil {
			return e.canceled(ctx)
		}
		ev, err := sr.Next()
		if err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				if ctx.Err() != nil {
					return e.canceled(ctx)
				}
				if complete != nil && complete() {
					return nil
				}
				return e.Fail(model.ErrProtocol, 0, "stream ended before the response was complete")
			}
			if errors.Is(err, sse.ErrEventTooLarge) {
				return e.Fail(model.ErrProtocol, 0, err.Error())
			}
			return e.ReadFailure(ctx, err)
		}
		if strings.TrimSpace(ev.Data) == "" {
			continue
		}
		done, err := handle(ev)
		if err != nil || done {
			return err
		}
	}
}
