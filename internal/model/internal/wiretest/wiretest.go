// Package wiretest is the test harness that the tests of agentd's HTTP
// model clients (internal/model/openai and internal/model/anthropic) share:
// a test server that records the request and writes its reply in small
// flushed pieces, a transport with a fixed reply, golden request bodies, and
// the table runners and checks both clients' tests run alike. It is imported
// by tests only.
package wiretest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/model"
)

// Request is what a Server saw of one request.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// Server serves one response and records the request.
type Server struct {
	*httptest.Server
	mu  sync.Mutex
	req Request
}

// NewServer starts a server that answers every request with status, header
// and body, written in flushed pieces of piece bytes as a streaming server
// would. It is closed when the test ends.
func NewServer(t *testing.T, piece, status int, header http.Header, body []byte) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.req = Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: b}
		s.mu.Unlock()
		for k, vs := range header {
			w.Header()[k] = vs
		}
		w.WriteHeader(status)
		f, _ := w.(http.Flusher)
		for len(body) > 0 {
			n := min(len(body), piece)
			w.Write(body[:n])
			body = body[n:]
			if f != nil {
				f.Flush()
			}
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// Recorded returns the last request the server saw.
func (s *Server) Recorded() Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.req
}

// SSEHeader is the header of an event-stream reply.
func SSEHeader() http.Header {
	return http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}}
}

// ReadTestdata returns the contents of testdata/name.
func ReadTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BodyTransport answers every request with a fixed 200 response body.
type BodyTransport []byte

// RoundTrip returns the fixed response.
func (b BodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     SSEHeader(),
		Body:       io.NopCloser(bytes.NewReader(b)),
		Request:    r,
	}, nil
}

// Dial returns the client under test for a server at url, reached through
// hc.
type Dial func(url string, hc *http.Client) model.Provider

// StreamCase is a recorded 200 reply and what the client must make of it.
type StreamCase struct {
	File       string      // the reply, in testdata
	Header     http.Header // nil means SSEHeader()
	Want       *model.Response
	WantDeltas []model.Delta
}

// RunStreams serves each case's reply and checks the response and the
// deltas the client gives for req.
func RunStreams(t *testing.T, piece int, dial Dial, req *model.Request, cases []StreamCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.File, func(t *testing.T) {
			header := tt.Header
			if header == nil {
				header = SSEHeader()
			}
			srv := NewServer(t, piece, http.StatusOK, header, ReadTestdata(t, tt.File))
			var deltas []model.Delta
			got, err := dial(srv.URL, srv.Client()).Stream(context.Background(), req, func(d model.Delta) { deltas = append(deltas, d) })
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if diff := cmp.Diff(tt.Want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.WantDeltas, deltas); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
		})
	}
}

// ErrorCase is a failing reply and the *model.Error it must give.
type ErrorCase struct {
	Name       string
	Status     int
	Header     http.Header
	Body       string
	File       string // the body from testdata, instead of Body
	WantKind   error
	WantStatus int
	WantRetry  time.Duration
	WantMsg    string // a part of the message
}

// RunErrors serves each case's reply and checks the error the client gives
// for req: a *model.Error of the wanted kind, status, Retry-After and
// message, naming provider, that never shows key.
func RunErrors(t *testing.T, piece int, dial Dial, req *model.Request, provider, key string, cases []ErrorCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			body := []byte(tt.Body)
			if tt.File != "" {
				body = ReadTestdata(t, tt.File)
			}
			srv := NewServer(t, piece, tt.Status, tt.Header, body)
			got, err := dial(srv.URL, srv.Client()).Stream(context.Background(), req, nil)
			if err == nil {
				t.Fatalf("Stream() = %+v, want an error", got)
			}
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %v (%T) is not a *model.Error", err, err)
			}
			if !errors.Is(err, tt.WantKind) {
				t.Errorf("error %v: kind %v, want %v", err, me.Kind, tt.WantKind)
			}
			if me.Provider != provider {
				t.Errorf("Provider = %q, want %s", me.Provider, provider)
			}
			if me.Status != tt.WantStatus {
				t.Errorf("Status = %d, want %d", me.Status, tt.WantStatus)
			}
			if me.RetryAfter != tt.WantRetry {
				t.Errorf("RetryAfter = %v, want %v", me.RetryAfter, tt.WantRetry)
			}
			if !strings.Contains(me.Message, tt.WantMsg) {
				t.Errorf("Message = %q, want it to contain %q", me.Message, tt.WantMsg)
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("error %q contains the API key", err)
			}
		})
	}
}

// Stream sends req through the client for a server that answers 200 with
// the event stream body. It fails the test if the client fails, and returns
// the response and what the server saw.
func Stream(t *testing.T, piece int, dial Dial, req *model.Request, body []byte) (*model.Response, Request) {
	t.Helper()
	srv := NewServer(t, piece, http.StatusOK, SSEHeader(), body)
	resp, err := dial(srv.URL, srv.Client()).Stream(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp, srv.Recorded()
}

// OneToolCall returns the one tool call resp must hold.
func OneToolCall(t *testing.T, resp *model.Response) model.ToolCall {
	t.Helper()
	if len(resp.ToolCalls) != 1 {
		t.Fatalf("got %d tool calls, want 1", len(resp.ToolCalls))
	}
	return resp.ToolCalls[0]
}

// ClosedURL returns the URL of a server that no longer listens.
func ClosedURL() string {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

// CheckCancelMidStream serves head, an event stream that the server then
// holds open, and cancels the request at the client's first delta. The
// client must return the context's error, and not as a *model.Error.
func CheckCancelMidStream(t *testing.T, dial Dial, req *model.Request, head string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // lets the server notice the client going away
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, head)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // a stream that never ends on its own
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := dial(srv.URL, srv.Client()).Stream(ctx, req, func(model.Delta) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	var me *model.Error
	if errors.As(err, &me) {
		t.Errorf("cancellation returned a *model.Error: %v", err)
	}
}

// GoldenCase is a request and the golden file in testdata holding the JSON
// body, indented, that the client must send for it.
type GoldenCase struct {
	Golden string
	Req    *model.Request
}

// RunGolden sends each case's request to a server that answers with
// testdata/text.sse and compares the body it saw with the golden file,
// which update first rewrites.
func RunGolden(t *testing.T, piece int, dial Dial, update bool, cases []GoldenCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.Golden, func(t *testing.T) {
			_, rec := Stream(t, piece, dial, tt.Req, ReadTestdata(t, "text.sse"))
			var got bytes.Buffer
			if err := json.Indent(&got, rec.Body, "", "  "); err != nil {
				t.Fatalf("request body is not JSON: %v", err)
			}
			got.WriteByte('\n')
			path := filepath.Join("testdata", tt.Golden)
			if update {
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got.String()); diff != "" {
				t.Errorf("request body differs from %s (-want +got):\n%s", path, diff)
			}
		})
	}
}

// CheckValidation checks that the client refuses, as bad requests, a nil
// request and req with a tool whose parameters are not valid JSON, naming
// the tool.
func CheckValidation(t *testing.T, p model.Provider, req *model.Request) {
	t.Helper()
	if _, err := p.Stream(context.Background(), nil, nil); !errors.Is(err, model.ErrBadRequest) {
		t.Errorf("nil request: error = %v, want ErrBadRequest", err)
	}
	req.Tools = []model.ToolSpec{{Name: "broken", Parameters: json.RawMessage(`{"type":`)}}
	if _, err := p.Stream(context.Background(), req, nil); !errors.Is(err, model.ErrBadRequest) || !strings.Contains(err.Error(), "broken") {
		t.Errorf("invalid schema: error = %v, want ErrBadRequest naming the tool", err)
	}
}

// FuzzStream feeds the client arbitrary 200 replies, seeded with the
// replies in testdata (*.sse and nonstream.json) and extra. Every reply
// must give either a *model.Error or a response whose tool calls have valid
// JSON arguments, and ids too when needIDs is set.
func FuzzStream(f *testing.F, dial func(hc *http.Client) model.Provider, req *model.Request, needIDs bool, extra ...[]byte) {
	files, _ := filepath.Glob("testdata/*.sse")
	files = append(files, "testdata/nonstream.json")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, b := range extra {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		resp, err := dial(&http.Client{Transport: BodyTransport(body)}).Stream(context.Background(), req, func(model.Delta) {})
		if err != nil {
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %v (%T) is not a *model.Error", err, err)
			}
			return
		}
		if resp == nil {
			t.Fatal("nil response without error")
		}
		for _, tc := range resp.ToolCalls {
			if !json.Valid(tc.Args) {
				t.Fatalf("tool call %q has invalid JSON args %q", tc.Name, tc.Args)
			}
			if needIDs && tc.ID == "" {
				t.Fatalf("tool call %q has no id", tc.Name)
			}
		}
	})
}

// BenchStream measures the client reading body, a 200 reply that must give
// one tool call.
func BenchStream(b *testing.B, dial func(hc *http.Client) model.Provider, req *model.Request, body []byte) {
	p := dial(&http.Client{Transport: BodyTransport(body)})
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		resp, err := p.Stream(context.Background(), req, func(model.Delta) {})
		if err != nil {
			b.Fatal(err)
		}
		if len(resp.ToolCalls) != 1 {
			b.Fatalf("got %d tool calls", len(resp.ToolCalls))
		}
	}
}

// SameJSON reports whether a and b are valid JSON documents holding the
// same value.
func SameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, a)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return reflect.DeepEqual(va, vb)
}

// FuzzRequest makes a request of every message kind from the fuzzer's
// strings; cached gives each message and tool a model.Encoded.
func FuzzRequest(system, text, args, schema, key string, temp float64, images, cached bool) *model.Request {
	var img []model.Image
	if images {
		img = []model.Image{{MIMEType: "image/png", Data: []byte(text)}}
	}
	req := &model.Request{
		Model:  text,
		System: system,
		Messages: []model.Message{
			{Role: model.RoleUser, Content: text, Images: img},
			{Role: model.RoleAssistant, Content: system, ToolCalls: []model.ToolCall{{ID: key, Name: text, Args: json.RawMessage(args)}}},
			{Role: model.RoleTool, ToolCallID: key, ToolName: text, Content: args, Images: img},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: text, Name: key}}},
			{Role: model.RoleTool, ToolCallID: "", Content: "", IsError: true},
			{Role: model.RoleAssistant, Content: text},
			{Role: model.RoleUser, Content: "", Images: img},
		},
		Tools:       []model.ToolSpec{{Name: key, Description: text, Parameters: json.RawMessage(schema)}, {Name: text}},
		MaxTokens:   len(text),
		Temperature: &temp,
		Stop:        []string{system, text},
		Extra:       map[string]any{key: text, "max_completion_tokens": len(system)},
	}
	if cached {
		for i := range req.Messages {
			req.Messages[i].Wire = new(model.Encoded)
		}
		for i := range req.Tools {
			req.Tools[i].Wire = new(model.Encoded)
		}
	}
	return req
}

// RefSchema is a tool's parameters as the clients sent them when they
// encoded requests with encoding/json: an empty object schema when the
// tool declares none, an error when they are not valid JSON.
func RefSchema(t model.ToolSpec) (json.RawMessage, error) {
	if len(bytes.TrimSpace(t.Parameters)) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	if !json.Valid(t.Parameters) {
		return nil, errors.New("tool " + t.Name + ": parameters are not valid JSON")
	}
	return t.Parameters, nil
}

// RefEncode is body as encoding/json writes it without HTML escaping.
func RefEncode(body map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
