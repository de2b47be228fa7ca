package wire

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"agentd/internal/model"
)

func TestCannotStream(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&model.Error{Kind: model.ErrServer, Status: 500, Message: "Cannot use tools with stream"}, true},
		{&model.Error{Kind: model.ErrBadRequest, Status: 400, Message: "Streaming is not supported for this model"}, true},
		{&model.Error{Kind: model.ErrBadRequest, Status: 422, Message: "stream: unsupported value"}, true},
		{&model.Error{Kind: model.ErrServer, Status: 501, Message: "streaming responses are not implemented"}, true},
		{&model.Error{Kind: model.ErrBadRequest, Status: 400, Message: "This model doesn't support streaming tool calls"}, true},
		{&model.Error{Kind: model.ErrServer, Status: 500, Message: "The server had an error"}, false},
		{&model.Error{Kind: model.ErrBadRequest, Status: 400, Message: "messages: not supported"}, false},
		{&model.Error{Kind: model.ErrAuth, Status: 401, Message: "cannot stream without a key"}, false},
		{&model.Error{Kind: model.ErrRateLimited, Status: 429, Message: "cannot stream: too many streams"}, false},
		{&model.Error{Kind: model.ErrProtocol, Message: "stream ended; cannot parse"}, false},
		{errors.New("cannot stream"), false},
	} {
		if got := CannotStream(tc.err); got != tc.want {
			t.Errorf("CannotStream(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// noStreamServer refuses streamed requests as llama.cpp does with tools,
// and answers the others whole; it records the "stream" of each request.
type noStreamServer struct {
	*httptest.Server
	mu      sync.Mutex
	streams []bool
}

func newNoStreamServer(t *testing.T) *noStreamServer {
	s := &noStreamServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &req)
		s.mu.Lock()
		s.streams = append(s.streams, req.Stream)
		s.mu.Unlock()
		if req.Stream {
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"code":500,"message":"Cannot use tools with stream","type":"server_error"}}`)
			return
		}
		io.WriteString(w, `{"text":"whole"}`)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *noStreamServer) seen() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bool(nil), s.streams...)
}

// endpoint returns an Endpoint for url whose error bodies are OpenAI's
// shape, read minimally.
func endpoint(url string) *Endpoint {
	return &Endpoint{Name: "prov", URL: url, HTTP: http.DefaultClient, Now: time.Now,
		ErrorBody: func(status int, body []byte, fallback string) (string, error) {
			var v struct {
				Error struct{ Message string } `json:"error"`
			}
			json.Unmarshal(body, &v)
			return v.Error.Message, Kind(status, nil, false)
		}}
}

// send sends req through e with a JSON body holding "stream", reading a
// whole reply's "text" or a stream as its raw text.
func send(ctx context.Context, e *Endpoint, req *model.Request) (*model.Response, error) {
	encode := func(req *model.Request, stream bool) ([]byte, error) {
		return json.Marshal(map[string]any{"model": req.Model, "stream": stream})
	}
	return e.Send(ctx, req, encode, func() (Reader, Reader) {
		whole := func(ctx context.Context, r io.Reader) (*model.Response, error) {
			var v struct{ Text string }
			if err := e.DecodeJSON(ctx, r, &v); err != nil {
				return nil, err
			}
			return &model.Response{Text: v.Text}, nil
		}
		stream := func(ctx context.Context, r io.Reader) (*model.Response, error) {
			b, err := io.ReadAll(r)
			if err != nil {
				return nil, e.ReadFailure(ctx, err)
			}
			return &model.Response{Text: string(b)}, nil
		}
		return whole, stream
	})
}

// A server that says it cannot stream gets the request again whole, and
// is not asked to stream that model again; another model still is.
func TestSendFallsBackToWhole(t *testing.T) {
	srv := newNoStreamServer(t)
	e := endpoint(srv.URL)
	for i := range 2 {
		resp, err := send(t.Context(), e, &model.Request{Model: "m"})
		if err != nil || resp.Text != "whole" {
			t.Fatalf("call %d: %+v, %v", i, resp, err)
		}
	}
	if _, err := send(t.Context(), e, &model.Request{Model: "other", NoStream: true}); err != nil {
		t.Fatal(err)
	}
	_, err := send(t.Context(), e, &model.Request{Model: "third"})
	if err != nil {
		t.Fatal(err)
	}
	// m: streamed, refused, whole; then whole at once. other: whole as
	// asked. third: streamed, refused, whole.
	want := []bool{true, false, false, false, true, false}
	if got := srv.seen(); !slices.Equal(got, want) {
		t.Errorf("stream per request %v, want %v", got, want)
	}
}

// The refusal of a request that was not streamed is the failure itself,
// kept with its status and message.
func TestSendKeepsTheMessage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		io.WriteString(w, `{"error":{"message":"model crashed: out of memory, key sk-proj-AbCdEfGh0123456789xyz"}}`)
	}))
	defer srv.Close()
	_, err := send(t.Context(), endpoint(srv.URL), &model.Request{Model: "m"})
	if !errors.Is(err, model.ErrServer) || err.Error() != "prov: server error (HTTP 500): model crashed: out of memory, key [redacted]" {
		t.Errorf("error %v", err)
	}
}

// A reply that stalls past the idle timeout, before or inside its body,
// fails as a retryable transport failure that says so.
func TestSendIdleTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		if r.URL.Path == "/part" {
			io.WriteString(w, "data: part\n\n")
		}
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	for _, path := range []string{"/none", "/part"} {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		_, err := send(ctx, endpoint(srv.URL+path), &model.Request{Model: "m", IdleTimeout: 50 * time.Millisecond})
		cancel()
		if !errors.Is(err, model.ErrTransport) || !model.Retryable(err) || !strings.Contains(err.Error(), "stalled: nothing arrived for 50ms") {
			t.Errorf("%s: error %v", path, err)
		}
	}
	// Cancelled by the caller, it is a cancellation, not a stall.
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err := send(ctx, endpoint(srv.URL+"/part"), &model.Request{Model: "m", IdleTimeout: time.Hour})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
