package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/model"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// recorded is what the test server saw of one request.
type recorded struct {
	method, path string
	header       http.Header
	body         []byte
}

// server serves one response and records the request.
type server struct {
	*httptest.Server
	mu  sync.Mutex
	req recorded
}

// newServer starts a server that answers every request with status,
// headers and body, written in small flushed pieces as a streaming server
// would.
func newServer(t *testing.T, status int, header http.Header, body []byte) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.req = recorded{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: b}
		s.mu.Unlock()
		for k, vs := range header {
			w.Header()[k] = vs
		}
		w.WriteHeader(status)
		f, _ := w.(http.Flusher)
		for len(body) > 0 {
			n := min(len(body), 41)
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

func (s *server) recorded() recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.req
}

func sseHeader() http.Header {
	return http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}}
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func simpleRequest() *model.Request {
	return &model.Request{Model: "claude-sonnet-4-20250514", Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}
}

func TestStreamRecorded(t *testing.T) {
	tests := []struct {
		file       string
		header     http.Header
		want       *model.Response
		wantDeltas []model.Delta
	}{
		{
			file: "text.sse",
			want: &model.Response{
				Text: "Hello! How can I help you today?", StopReason: "end_turn", Model: "claude-sonnet-4-20250514",
				Usage: model.Usage{InputTokens: 25, OutputTokens: 12},
			},
			wantDeltas: []model.Delta{{Text: "Hello"}, {Text: "! How can I help"}, {Text: " you today?"}},
		},
		{
			file: "tool_use.sse",
			want: &model.Response{
				Text: "I'll check the weather and the time.",
				ToolCalls: []model.ToolCall{
					{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "get_weather", Args: json.RawMessage(`{"location": "San Francisco, CA", "unit": "fahrenheit"}`)},
					{ID: "toolu_01VQ2T4k9ZrQn8E5jwJYw3Bx", Name: "get_time", Args: json.RawMessage(`{"tz": "America/Los_Angeles"}`)},
					{ID: "toolu_01Hc4bP7mYkWn2Rj8sXe5LqA", Name: "list_alerts", Args: json.RawMessage(`{}`)},
				},
				StopReason: "tool_use", Model: "claude-sonnet-4-20250514",
				Usage: model.Usage{InputTokens: 472 + 1024 + 2048, OutputTokens: 89},
			},
			wantDeltas: []model.Delta{{Text: "I'll check the weather"}, {Text: " and the time."}},
		},
		{
			file: "thinking.sse",
			want: &model.Response{
				Text: "The GCD is 21.", Reasoning: "I need to find the GCD of 1071 and 462 using the Euclidean algorithm.",
				StopReason: "end_turn", Model: "claude-sonnet-4-20250514",
				Usage: model.Usage{InputTokens: 36, OutputTokens: 140},
			},
			wantDeltas: []model.Delta{
				{Text: "I need to find the GCD of 1071 and 462", Reasoning: true},
				{Text: " using the Euclidean algorithm.", Reasoning: true},
				{Text: "The GCD is 21."},
			},
		},
		{
			file:   "nonstream.json",
			header: http.Header{"Content-Type": {"application/json"}},
			want: &model.Response{
				Text: "Let me look that up.",
				ToolCalls: []model.ToolCall{
					{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Args: json.RawMessage(`{"location": "Oslo"}`)},
				},
				StopReason: "tool_use", Model: "claude-sonnet-4-20250514",
				Usage: model.Usage{InputTokens: 410, OutputTokens: 41},
			},
			wantDeltas: []model.Delta{{Text: "Let me look that up."}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			header := tt.header
			if header == nil {
				header = sseHeader()
			}
			srv := newServer(t, http.StatusOK, header, readTestdata(t, tt.file))
			c := New(&Options{BaseURL: srv.URL, HTTPClient: srv.Client()})
			var deltas []model.Delta
			got, err := c.Stream(context.Background(), simpleRequest(), func(d model.Delta) { deltas = append(deltas, d) })
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantDeltas, deltas); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
		})
	}
}

// toolStream is a stream with one tool_use block whose input arrives in
// the given fragments.
func toolStream(startInput string, fragments ...string) []byte {
	var b strings.Builder
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n")
	fmt.Fprintf(&b, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"f\",\"input\":%s}}\n\n", startInput)
	for _, f := range fragments {
		frag, _ := json.Marshal(f)
		fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":%s}}\n\n", frag)
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":9}}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return []byte(b.String())
}

func TestToolArguments(t *testing.T) {
	tests := []struct {
		name       string
		startInput string
		fragments  []string
		want       string
	}{
		{name: "no deltas", startInput: `{}`, want: `{}`},
		{name: "empty delta", startInput: `{}`, fragments: []string{""}, want: `{}`},
		{name: "input given at start", startInput: `{"q":"x"}`, want: `{"q":"x"}`},
		{name: "split", startInput: `{}`, fragments: []string{`{"a": [1,`, ` 2], "b": "\u00`, `e9"}`}, want: `{"a": [1, 2], "b": "\u00e9"}`},
		{name: "invalid kept as string", startInput: `{}`, fragments: []string{`{"a": `}, want: `"{\"a\": "`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, http.StatusOK, sseHeader(), toolStream(tt.startInput, tt.fragments...))
			got, err := New(&Options{BaseURL: srv.URL, HTTPClient: srv.Client()}).Stream(context.Background(), simpleRequest(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.ToolCalls) != 1 {
				t.Fatalf("got %d tool calls, want 1", len(got.ToolCalls))
			}
			if a := string(got.ToolCalls[0].Args); a != tt.want {
				t.Errorf("Args = %s, want %s", a, tt.want)
			}
		})
	}
}

func TestStreamErrors(t *testing.T) {
	const key = "sk-ant-api03-test-0123456789"
	tests := []struct {
		name       string
		status     int
		header     http.Header
		body       string
		file       string
		wantKind   error
		wantStatus int
		wantRetry  time.Duration
		wantMsg    string
	}{
		{
			name: "429 rate_limit_error", status: 429,
			header:   http.Header{"Retry-After": {"12"}, "Request-Id": {"req_011"}},
			body:     `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 50,000 input tokens per minute."},"request_id":"req_011"}`,
			wantKind: model.ErrRateLimited, wantStatus: 429, wantRetry: 12 * time.Second, wantMsg: "exceed the rate limit",
		},
		{
			name: "429 HTTP date", status: 429,
			header:   http.Header{"Retry-After": {"Sun, 06 Nov 1994 08:49:37 GMT"}},
			body:     `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`,
			wantKind: model.ErrRateLimited, wantStatus: 429, wantRetry: 30 * time.Second, wantMsg: "slow down",
		},
		{
			name: "529 overloaded", status: 529,
			body:     `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			wantKind: model.ErrOverloaded, wantStatus: 529, wantMsg: "Overloaded",
		},
		{
			name: "500 api_error", status: 500,
			body:     `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`,
			wantKind: model.ErrOverloaded, wantStatus: 500, wantMsg: "Internal server error",
		},
		{
			name: "502 from a proxy", status: 502, body: "<html><body>Bad Gateway</body></html>",
			wantKind: model.ErrOverloaded, wantStatus: 502, wantMsg: "Bad Gateway",
		},
		{
			name: "401 never shows the key", status: 401,
			body:     `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + key + `"}}`,
			wantKind: model.ErrAuth, wantStatus: 401, wantMsg: "invalid x-api-key [redacted]",
		},
		{
			name: "403 permission", status: 403,
			body:     `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`,
			wantKind: model.ErrAuth, wantStatus: 403, wantMsg: "does not have permission",
		},
		{
			name: "400 prompt is too long", status: 400,
			body:     `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215304 tokens > 200000 maximum"}}`,
			wantKind: model.ErrContextOverflow, wantStatus: 400, wantMsg: "prompt is too long",
		},
		{
			name: "400 input and max_tokens exceed context", status: 400,
			body:     `{"type":"error","error":{"type":"invalid_request_error","message":"input length and ` + "`max_tokens`" + ` exceed context limit: 197000 + 8192 > 200000, decrease input length or ` + "`max_tokens`" + ` and try again"}}`,
			wantKind: model.ErrContextOverflow, wantStatus: 400, wantMsg: "exceed context limit",
		},
		{
			name: "413 request_too_large", status: 413,
			body:     `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`,
			wantKind: model.ErrContextOverflow, wantStatus: 413, wantMsg: "maximum allowed number of bytes",
		},
		{
			name: "400 other", status: 400,
			body:     `{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate between \"user\" and \"assistant\""}}`,
			wantKind: model.ErrBadRequest, wantStatus: 400, wantMsg: "roles must alternate",
		},
		{
			name: "404 model", status: 404,
			body:     `{"type":"error","error":{"type":"not_found_error","message":"model: claude-9"}}`,
			wantKind: model.ErrBadRequest, wantStatus: 404, wantMsg: "model: claude-9",
		},
		{name: "mid-stream overloaded_error", status: 200, file: "overloaded.sse", wantKind: model.ErrOverloaded, wantMsg: "Overloaded"},
		{name: "truncated (no message_stop)", status: 200, file: "truncated.sse", wantKind: model.ErrProtocol, wantMsg: "stream ended before the response was complete"},
		{name: "bad JSON", status: 200, file: "bad_json.sse", wantKind: model.ErrProtocol, wantMsg: `invalid JSON in "content_block_delta" event`},
		{
			name: "delta for an unknown block", status: 200,
			body:     "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
			wantKind: model.ErrProtocol, wantMsg: "never started",
		},
		{
			name: "mid-stream rate limit", status: 200,
			body:     "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Rate limited\"}}\n\n",
			wantKind: model.ErrRateLimited, wantMsg: "Rate limited",
		},
		{
			name: "mid-stream prompt too long", status: 200,
			body:     "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 201000 tokens > 200000 maximum\"}}\n\n",
			wantKind: model.ErrContextOverflow, wantMsg: "prompt is too long",
		},
		{name: "empty body", status: 200, wantKind: model.ErrProtocol, wantMsg: "empty response body"},
		{
			name: "200 JSON error", status: 200, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			wantKind: model.ErrOverloaded, wantMsg: "Overloaded",
		},
		{
			name: "200 JSON of another kind", status: 200, body: `{"type":"completion","completion":"hi"}`,
			wantKind: model.ErrProtocol, wantMsg: `unexpected response type "completion"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.body)
			if tt.file != "" {
				body = readTestdata(t, tt.file)
			}
			header := tt.header
			if header == nil {
				header = http.Header{}
			}
			srv := newServer(t, tt.status, header, body)
			c := New(&Options{BaseURL: srv.URL, APIKey: key, HTTPClient: srv.Client(), Name: "claude"})
			c.now = func() time.Time { return time.Date(1994, 11, 6, 8, 49, 7, 0, time.UTC) }
			got, err := c.Stream(context.Background(), simpleRequest(), nil)
			if err == nil {
				t.Fatalf("Stream() = %+v, want an error", got)
			}
			var me *model.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %v (%T) is not a *model.Error", err, err)
			}
			if !errors.Is(err, tt.wantKind) {
				t.Errorf("error %v: kind %v, want %v", err, me.Kind, tt.wantKind)
			}
			if me.Provider != "claude" {
				t.Errorf("Provider = %q, want claude", me.Provider)
			}
			if me.Status != tt.wantStatus {
				t.Errorf("Status = %d, want %d", me.Status, tt.wantStatus)
			}
			if me.RetryAfter != tt.wantRetry {
				t.Errorf("RetryAfter = %v, want %v", me.RetryAfter, tt.wantRetry)
			}
			if !strings.Contains(me.Message, tt.wantMsg) {
				t.Errorf("Message = %q, want it to contain %q", me.Message, tt.wantMsg)
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("error %q contains the API key", err)
			}
		})
	}
}

func TestTransportError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := New(&Options{BaseURL: url}).Stream(context.Background(), simpleRequest(), nil)
	if !errors.Is(err, model.ErrTransport) {
		t.Fatalf("error = %v, want ErrTransport", err)
	}
}

func TestCancelMidStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // lets the server notice the client going away
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\"}}\n\n")
		io.WriteString(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		io.WriteString(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"tick\"}}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // a stream that never ends on its own
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := New(&Options{BaseURL: srv.URL, HTTPClient: srv.Client()}).Stream(ctx, simpleRequest(), func(model.Delta) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	var me *model.Error
	if errors.As(err, &me) {
		t.Errorf("cancellation returned a *model.Error: %v", err)
	}
}

func TestHeadersAndURL(t *testing.T) {
	tests := []struct {
		name        string
		base        string
		key         string
		version     string
		wantVersion string
	}{
		{name: "defaults", key: "sk-ant-x", wantVersion: "2023-06-01"},
		{name: "trailing slash", base: "/", key: "sk-ant-x", wantVersion: "2023-06-01"},
		{name: "trailing /v1", base: "/v1/", version: "2024-01-01", wantVersion: "2024-01-01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, http.StatusOK, sseHeader(), readTestdata(t, "text.sse"))
			c := New(&Options{
				BaseURL: srv.URL + tt.base, APIKey: tt.key, Version: tt.version, HTTPClient: srv.Client(),
				Headers: map[string]string{"anthropic-beta": "prompt-caching-2024-07-31"},
			})
			if _, err := c.Stream(context.Background(), simpleRequest(), nil); err != nil {
				t.Fatal(err)
			}
			rec := srv.recorded()
			if rec.method != http.MethodPost || rec.path != "/v1/messages" {
				t.Errorf("request %s %s, want POST /v1/messages", rec.method, rec.path)
			}
			if got := rec.header.Get("x-api-key"); got != tt.key {
				t.Errorf("x-api-key = %q, want %q", got, tt.key)
			}
			if _, ok := rec.header["X-Api-Key"]; ok != (tt.key != "") {
				t.Errorf("x-api-key present = %v, want %v", ok, tt.key != "")
			}
			if got := rec.header.Get("anthropic-version"); got != tt.wantVersion {
				t.Errorf("anthropic-version = %q, want %q", got, tt.wantVersion)
			}
			if got := rec.header.Get("anthropic-beta"); got != "prompt-caching-2024-07-31" {
				t.Errorf("custom header = %q", got)
			}
			if got := rec.header.Get("Authorization"); got != "" {
				t.Errorf("unexpected Authorization header %q", got)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	c := New(nil)
	if c.url != "https://api.anthropic.com/v1/messages" || c.Name() != "anthropic" || c.version != DefaultVersion {
		t.Errorf("defaults: url %q name %q version %q", c.url, c.Name(), c.version)
	}
}

func ptr[T any](v T) *T { return &v }

// richRequest exercises every part of the request conversion: consecutive
// tool results merged into one user turn, a user message arriving after
// tool results (merged, results first), consecutive user messages, an empty
// message left out, and a call whose arguments were invalid.
func richRequest() *model.Request {
	return &model.Request{
		Model:  "claude-sonnet-4-20250514",
		System: "You are a careful assistant.",
		Messages: []model.Message{
			{Role: model.RoleUser, Content: "What's the weather in Zürich?"},
			{Role: model.RoleUser, Content: "And the time, please."},
			{Role: model.RoleAssistant, Content: "Let me check.", ToolCalls: []model.ToolCall{
				{ID: "toolu_1", Name: "get_weather", Args: json.RawMessage(`{"city":"Zürich"}`)},
				{ID: "toolu_2", Name: "get_time", Args: nil},
				{ID: "toolu_3", Name: "get_time", Args: json.RawMessage(`"{\"tz\": \"Eur"`)},
			}},
			{Role: model.RoleTool, ToolCallID: "toolu_1", ToolName: "get_weather", Content: `{"temp_c": 12}`},
			{Role: model.RoleTool, ToolCallID: "toolu_2", ToolName: "get_time", Content: "14:05"},
			{Role: model.RoleUser, Content: "Use Celsius."},
			{Role: model.RoleTool, ToolCallID: "toolu_3", ToolName: "get_time", Content: "invalid arguments", IsError: true},
			{Role: model.RoleAssistant, Content: ""},
			{Role: model.RoleAssistant, Content: "It is 12 °C and 14:05 <local>."},
			{Role: model.RoleUser, Content: "Thanks!"},
		},
		Tools: []model.ToolSpec{
			{Name: "get_weather", Description: "Current weather for a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
			{Name: "get_time"},
		},
		MaxTokens:   1024,
		Temperature: ptr(0.5),
		TopP:        ptr(0.95),
		Stop:        []string{"\n\nHuman:"},
		Extra: map[string]any{
			"top_k":    40,
			"stream":   false,
			"system":   "ignored",
			"thinking": map[string]any{"type": "enabled", "budget_tokens": 2048},
		},
	}
}

func TestRequestGolden(t *testing.T) {
	tests := []struct {
		golden string
		req    *model.Request
	}{
		{golden: "request_rich.golden.json", req: richRequest()},
		{golden: "request_minimal.golden.json", req: simpleRequest()},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			srv := newServer(t, http.StatusOK, sseHeader(), readTestdata(t, "text.sse"))
			if _, err := New(&Options{BaseURL: srv.URL, HTTPClient: srv.Client()}).Stream(context.Background(), tt.req, nil); err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := json.Indent(&got, srv.recorded().body, "", "  "); err != nil {
				t.Fatalf("request body is not JSON: %v", err)
			}
			got.WriteByte('\n')
			path := filepath.Join("testdata", tt.golden)
			if *update {
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

func TestRequestValidation(t *testing.T) {
	c := New(nil)
	if _, err := c.Stream(context.Background(), nil, nil); !errors.Is(err, model.ErrBadRequest) {
		t.Errorf("nil request: error = %v, want ErrBadRequest", err)
	}
	req := simpleRequest()
	req.Tools = []model.ToolSpec{{Name: "broken", Parameters: json.RawMessage(`{"type":`)}}
	if _, err := c.Stream(context.Background(), req, nil); !errors.Is(err, model.ErrBadRequest) || !strings.Contains(err.Error(), "broken") {
		t.Errorf("invalid schema: error = %v, want ErrBadRequest naming the tool", err)
	}
}

// bodyTransport answers every request with a fixed 200 response body.
type bodyTransport []byte

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     sseHeader(),
		Body:       io.NopCloser(bytes.NewReader(b)),
		Request:    r,
	}, nil
}

func FuzzStream(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.sse")
	files = append(files, "testdata/nonstream.json")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(toolStream(`{}`, `{"a":`, `1}`))
	f.Add(toolStream(`null`, `[`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c := New(&Options{BaseURL: "http://fuzz.invalid", HTTPClient: &http.Client{Transport: bodyTransport(body)}})
		resp, err := c.Stream(context.Background(), simpleRequest(), func(model.Delta) {})
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
		}
	})
}

// stream200 builds a stream of 200 content events: text deltas, then a
// tool_use block whose input arrives in pieces.
func stream200() []byte {
	var b bytes.Buffer
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_bench\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4-20250514\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":100,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":1}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for i := range 150 {
		fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"token %d \"}}\n\n", i)
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"write_file\",\"input\":{}}}\n\n")
	b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"text\\\": \\\"\"}}\n\n")
	for i := range 48 {
		fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"word%d \"}}\n\n", i)
	}
	b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"}\"}}\n\n")
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n")
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":200}}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return b.Bytes()
}

func BenchmarkStream200(b *testing.B) {
	body := stream200()
	c := New(&Options{BaseURL: "http://bench.invalid", HTTPClient: &http.Client{Transport: bodyTransport(body)}})
	req := simpleRequest()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		resp, err := c.Stream(context.Background(), req, func(model.Delta) {})
		if err != nil {
			b.Fatal(err)
		}
		if len(resp.ToolCalls) != 1 {
			b.Fatalf("got %d tool calls", len(resp.ToolCalls))
		}
	}
}
