package openai

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
			n := min(len(body), 37)
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
	return &model.Request{Model: "gpt-4o", Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}
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
			want: &model.Response{Text: "Hello! How can I help you today?", StopReason: "stop", Model: "gpt-4o-2024-08-06"},
			wantDeltas: []model.Delta{
				{Text: "Hello"}, {Text: "!"}, {Text: " How can I"}, {Text: " help you today?"},
			},
		},
		{
			file: "text_usage.sse",
			want: &model.Response{
				Text: "The capital of France is Paris.", StopReason: "stop", Model: "gpt-4.1-mini-2025-04-14",
				Usage: model.Usage{InputTokens: 24, OutputTokens: 7},
			},
			wantDeltas: []model.Delta{{Text: "The capital"}, {Text: " of France is"}, {Text: " Paris."}},
		},
		{
			file: "tool_calls_parallel.sse",
			want: &model.Response{
				ToolCalls: []model.ToolCall{
					{ID: "call_8qvLJ2YpN4Gd0fXo3KHi1sTw", Name: "get_weather", Args: json.RawMessage(`{"city": "Z\u00fcrich", "unit": "celsius"}`)},
					{ID: "call_Rz5mB0cW7uT1yE9nK2aJ6pQd", Name: "get_time", Args: json.RawMessage(`{"tz": "Europe/Zurich"}`)},
					{ID: "call_Mx3vN8qL1bH6dS0tG4wE9yRk", Name: "list_files", Args: json.RawMessage(`{}`)},
				},
				StopReason: "tool_calls", Model: "gpt-4o-mini-2024-07-18",
				Usage: model.Usage{InputTokens: 112, OutputTokens: 58},
			},
		},
		{
			file: "reasoning_content.sse",
			want: &model.Response{
				Text: "2 + 2 = 4.", Reasoning: "The user asks for 2+2.", StopReason: "stop", Model: "deepseek-reasoner",
				Usage: model.Usage{InputTokens: 13, OutputTokens: 41},
			},
			wantDeltas: []model.Delta{
				{Text: "The user asks", Reasoning: true}, {Text: " for 2+2.", Reasoning: true},
				{Text: "2 + 2"}, {Text: " = 4."},
			},
		},
		{
			file: "ollama.sse",
			want: &model.Response{
				Text: "Let me look.", Reasoning: "I should check the directory.",
				ToolCalls: []model.ToolCall{
					{ID: "call_wteop8bt", Name: "run_command", Args: json.RawMessage(`{"command":"ls"}`)},
					{ID: "call_rk2xye1l", Name: "run_command", Args: json.RawMessage(`{"command":"ls -l"}`)},
				},
				StopReason: "tool_calls", Model: "qwen3:8b",
				Usage: model.Usage{InputTokens: 187, OutputTokens: 64},
			},
			wantDeltas: []model.Delta{
				{Text: "I should check", Reasoning: true}, {Text: " the directory.", Reasoning: true}, {Text: "Let me look."},
			},
		},
		{
			file: "llamacpp.sse",
			want: &model.Response{
				Text: "Hi there", StopReason: "length", Model: "gpt-3.5-turbo",
				Usage: model.Usage{InputTokens: 9, OutputTokens: 2},
			},
			wantDeltas: []model.Delta{{Text: "Hi"}, {Text: " there"}},
		},
		{
			// Every call at index 0, distinguished by id; no [DONE].
			file: "same_index.sse",
			want: &model.Response{
				ToolCalls: []model.ToolCall{
					{ID: "call_a1", Name: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)},
					{ID: "call_b2", Name: "read_file", Args: json.RawMessage(`{"path":"b.txt"}`)},
				},
				StopReason: "tool_calls", Model: "llama3.1:8b",
			},
		},
		{
			file:   "nonstream.json",
			header: http.Header{"Content-Type": {"application/json"}},
			want: &model.Response{
				Text: "Checking the weather.",
				ToolCalls: []model.ToolCall{
					{ID: "call_Qp4nX7sD2kF9hJ1mL5bV8cZ3", Name: "get_weather", Args: json.RawMessage(`{"city":"Oslo"}`)},
				},
				StopReason: "tool_calls", Model: "gpt-4o-mini-2024-07-18",
				Usage: model.Usage{InputTokens: 82, OutputTokens: 17},
			},
			wantDeltas: []model.Delta{{Text: "Checking the weather."}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			header := tt.header
			if header == nil {
				header = sseHeader()
			}
			srv := newServer(t, http.StatusOK, header, readTestdata(t, tt.file))
			c := New(&Options{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()})
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

func TestStreamNilOnDelta(t *testing.T) {
	srv := newServer(t, http.StatusOK, sseHeader(), readTestdata(t, "text.sse"))
	c := New(&Options{BaseURL: srv.URL, HTTPClient: srv.Client()})
	got, err := c.Stream(context.Background(), simpleRequest(), nil)
	if err != nil || got.Text != "Hello! How can I help you today?" {
		t.Fatalf("Stream() = %+v, %v", got, err)
	}
}

func TestToolArguments(t *testing.T) {
	tests := []struct {
		name string
		args []string // argument fragments, each sent in its own chunk
		want string
	}{
		{name: "empty", args: []string{""}, want: `{}`},
		{name: "white space", args: []string{" ", "\n"}, want: `{}`},
		{name: "split object", args: []string{`{"a":`, ` [1, 2`, `]}`}, want: `{"a": [1, 2]}`},
		{name: "invalid kept as string", args: []string{`{"a": 1`}, want: `"{\"a\": 1"`},
		{name: "not an object passes through", args: []string{`[1]`}, want: `[1]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			fmt.Fprintf(&b, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}}]}\n\n")
			for _, a := range tt.args {
				frag, _ := json.Marshal(a)
				fmt.Fprintf(&b, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":%s}}]}}]}\n\n", frag)
			}
			b.WriteString("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n")
			srv := newServer(t, http.StatusOK, sseHeader(), []byte(b.String()))
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
			if !json.Valid(got.ToolCalls[0].Args) {
				t.Errorf("Args %s is not valid JSON", got.ToolCalls[0].Args)
			}
		})
	}
}

func TestMissingToolCallID(t *testing.T) {
	body := "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}},{\"index\":1,\"function\":{\"name\":\"g\",\"arguments\":{\"x\":1}}}]},\"finish_reason\":\"tool_calls\"}]}\n\n"
	srv := newServer(t, http.StatusOK, sseHeader(), []byte(body))
	got, err := New(&Options{BaseURL: srv.URL, HTTPClient: srv.Client()}).Stream(context.Background(), simpleRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.ToolCalls) != 2 {
		t.Fatalf("got %d tool calls, want 2", len(got.ToolCalls))
	}
	a, b := got.ToolCalls[0], got.ToolCalls[1]
	if !strings.HasPrefix(a.ID, "call_") || !strings.HasPrefix(b.ID, "call_") || a.ID == b.ID {
		t.Errorf("generated ids %q, %q: want distinct call_ ids", a.ID, b.ID)
	}
	if string(b.Args) != `{"x":1}` {
		t.Errorf("object arguments = %s, want {\"x\":1}", b.Args)
	}
}

func TestStreamErrors(t *testing.T) {
	const key = "sk-test-0123456789abcdef"
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
			name: "429 retry-after seconds", status: 429,
			header:   http.Header{"Retry-After": {"7"}},
			body:     `{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			wantKind: model.ErrRateLimited, wantStatus: 429, wantRetry: 7 * time.Second, wantMsg: "Rate limit reached",
		},
		{
			name: "429 retry-after-ms wins", status: 429,
			header:   http.Header{"Retry-After": {"2"}, "Retry-After-Ms": {"1500"}},
			body:     `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`,
			wantKind: model.ErrRateLimited, wantStatus: 429, wantRetry: 1500 * time.Millisecond, wantMsg: "slow down",
		},
		{
			name: "429 retry-after HTTP date", status: 429,
			header:   http.Header{"Retry-After": {"Sun, 06 Nov 1994 08:49:37 GMT"}},
			body:     `{"error":{"message":"slow down"}}`,
			wantKind: model.ErrRateLimited, wantStatus: 429, wantRetry: 90 * time.Second, wantMsg: "slow down",
		},
		{
			name: "429 insufficient quota", status: 429,
			body:     `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			wantKind: model.ErrAuth, wantStatus: 429, wantMsg: "exceeded your current quota",
		},
		{
			name: "500", status: 500,
			body:     `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`,
			wantKind: model.ErrOverloaded, wantStatus: 500, wantMsg: "Sorry about that",
		},
		{
			name: "503 plain text", status: 503, body: "upstream connect error",
			wantKind: model.ErrOverloaded, wantStatus: 503, wantMsg: "upstream connect error",
		},
		{
			name: "529 empty body", status: 529,
			wantKind: model.ErrOverloaded, wantStatus: 529,
		},
		{
			name: "401 never shows the key", status: 401,
			body:     `{"error":{"message":"Incorrect API key provided: ` + key + `. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			wantKind: model.ErrAuth, wantStatus: 401, wantMsg: "Incorrect API key provided: [redacted]",
		},
		{
			name: "403", status: 403, body: `{"error":{"message":"Project does not have access to model","type":"invalid_request_error","code":"model_not_found"}}`,
			wantKind: model.ErrAuth, wantStatus: 403, wantMsg: "does not have access",
		},
		{
			name: "400 context_length_exceeded", status: 400,
			body:     `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			wantKind: model.ErrContextOverflow, wantStatus: 400, wantMsg: "maximum context length",
		},
		{
			name: "400 llama.cpp exceed context size", status: 400,
			body:     `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}`,
			wantKind: model.ErrContextOverflow, wantStatus: 400, wantMsg: "exceeds the available context size",
		},
		{
			name: "413", status: 413, body: `{"error":{"message":"Request too large"}}`,
			wantKind: model.ErrContextOverflow, wantStatus: 413, wantMsg: "Request too large",
		},
		{
			name: "400 other", status: 400,
			body:     `{"error":{"message":"Invalid value for 'temperature': must be between 0 and 2.","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`,
			wantKind: model.ErrBadRequest, wantStatus: 400, wantMsg: "Invalid value for 'temperature'",
		},
		{
			name: "404 ollama model missing, error as string", status: 404,
			body:     `{"error":"model \"llama9\" not found, try pulling it first"}`,
			wantKind: model.ErrBadRequest, wantStatus: 404, wantMsg: `model "llama9" not found`,
		},
		{
			name: "422 detail", status: 422, body: `{"detail":"Field required: messages"}`,
			wantKind: model.ErrBadRequest, wantStatus: 422, wantMsg: "Field required",
		},
		{name: "bad JSON chunk", status: 200, file: "bad_json.sse", wantKind: model.ErrProtocol, wantMsg: "invalid JSON in stream chunk"},
		{name: "truncated mid-event", status: 200, file: "truncated.sse", wantKind: model.ErrProtocol, wantMsg: "stream ended before the response was complete"},
		{
			name: "ends between events without finish", status: 200,
			body:     "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n",
			wantKind: model.ErrProtocol, wantMsg: "stream ended before the response was complete",
		},
		{name: "empty body", status: 200, wantKind: model.ErrProtocol, wantMsg: "empty response body"},
		{name: "HTML page", status: 200, body: "<html>hello</html>", wantKind: model.ErrProtocol},
		{name: "mid-stream error object", status: 200, file: "midstream_error.sse", wantKind: model.ErrOverloaded, wantMsg: "The server had an error"},
		{name: "mid-stream vLLM overflow", status: 200, file: "midstream_overflow.sse", wantKind: model.ErrContextOverflow, wantStatus: 400, wantMsg: "maximum context length is 8192"},
		{
			name: "mid-stream rate limit", status: 200,
			body:     "data: {\"error\":{\"message\":\"Rate limit exceeded\",\"type\":\"rate_limit_error\"}}\n\n",
			wantKind: model.ErrRateLimited, wantMsg: "Rate limit exceeded",
		},
		{
			name: "200 JSON error object", status: 200,
			body:     `{"error":{"message":"Invalid 'messages': empty array.","type":"invalid_request_error","code":"empty_array"}}`,
			wantKind: model.ErrBadRequest, wantMsg: "empty array",
		},
		{
			name: "non-stream JSON without choices", status: 200, body: `{"id":"x","object":"chat.completion","choices":[]}`,
			wantKind: model.ErrProtocol, wantMsg: "no choices",
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
			c := New(&Options{BaseURL: srv.URL, APIKey: key, HTTPClient: srv.Client(), Name: "testprov"})
			c.now = func() time.Time { return time.Date(1994, 11, 6, 8, 48, 7, 0, time.UTC) }
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
			if me.Provider != "testprov" {
				t.Errorf("Provider = %q, want testprov", me.Provider)
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

func TestErrorBodyIsCapped(t *testing.T) {
	body := strings.Repeat("x", 1<<20)
	srv := newServer(t, 400, nil, []byte(body))
	_, err := New(&Options{BaseURL: srv.URL, HTTPClient: srv.Client()}).Stream(context.Background(), simpleRequest(), nil)
	var me *model.Error
	if !errors.As(err, &me) || !errors.Is(err, model.ErrBadRequest) {
		t.Fatalf("error = %v, want a bad request *model.Error", err)
	}
	if len(me.Message) > 1024 {
		t.Errorf("message is %d bytes, want a short excerpt", len(me.Message))
	}
}

func TestTransportError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := New(&Options{BaseURL: url, APIKey: "sk-secret-key"}).Stream(context.Background(), simpleRequest(), nil)
	if !errors.Is(err, model.ErrTransport) {
		t.Fatalf("error = %v, want ErrTransport", err)
	}
	if !model.Retryable(err) {
		t.Errorf("transport error should be retryable")
	}
}

func TestCancelMidStream(t *testing.T) {
	first := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tick\"}}]}\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, first)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // a stream that never ends on its own
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := New(&Options{BaseURL: srv.URL, HTTPClient: srv.Client()})
	_, err := c.Stream(ctx, simpleRequest(), func(model.Delta) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	var me *model.Error
	if errors.As(err, &me) {
		t.Errorf("cancellation returned a *model.Error: %v", err)
	}
}

func TestCancelBeforeResponse(t *testing.T) {
	arrived := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // lets the server notice the client going away
		close(arrived)
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	_, err := New(&Options{BaseURL: srv.URL, HTTPClient: srv.Client()}).Stream(ctx, simpleRequest(), nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}

func TestHeadersAndURL(t *testing.T) {
	tests := []struct {
		name     string
		base     string // appended to the server URL
		key      string
		wantPath string
		wantAuth string
	}{
		{name: "no trailing slash", base: "/v1", key: "sk-abc", wantPath: "/v1/chat/completions", wantAuth: "Bearer sk-abc"},
		{name: "trailing slash", base: "/v1/", key: "sk-abc", wantPath: "/v1/chat/completions", wantAuth: "Bearer sk-abc"},
		{name: "no key, no header", base: "/v1", wantPath: "/v1/chat/completions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, http.StatusOK, sseHeader(), readTestdata(t, "text.sse"))
			c := New(&Options{
				BaseURL: srv.URL + tt.base, APIKey: tt.key, HTTPClient: srv.Client(),
				Headers: map[string]string{"HTTP-Referer": "https://agentd.example"},
			})
			if _, err := c.Stream(context.Background(), simpleRequest(), nil); err != nil {
				t.Fatal(err)
			}
			rec := srv.recorded()
			if rec.method != http.MethodPost || rec.path != tt.wantPath {
				t.Errorf("request %s %s, want POST %s", rec.method, rec.path, tt.wantPath)
			}
			if got := rec.header.Get("Authorization"); got != tt.wantAuth {
				t.Errorf("Authorization = %q, want %q", got, tt.wantAuth)
			}
			if _, ok := rec.header["Authorization"]; !ok && tt.wantAuth != "" || ok && tt.wantAuth == "" {
				t.Errorf("Authorization header presence wrong: %v", rec.header)
			}
			if got := rec.header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q", got)
			}
			if got := rec.header.Get("HTTP-Referer"); got != "https://agentd.example" {
				t.Errorf("custom header = %q", got)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	c := New(nil)
	if c.url != "https://api.openai.com/v1/chat/completions" || c.Name() != "openai" {
		t.Errorf("defaults: url %q name %q", c.url, c.Name())
	}
}

func ptr[T any](v T) *T { return &v }

// richRequest exercises every part of the request encoding.
func richRequest() *model.Request {
	return &model.Request{
		Model:  "gpt-4o-mini",
		System: "You are a careful assistant.",
		Messages: []model.Message{
			{Role: model.RoleUser, Content: "What's the weather in Zürich, and what time is it?"},
			{Role: model.RoleAssistant, Content: "Let me check.", ToolCalls: []model.ToolCall{
				{ID: "call_1", Name: "get_weather", Args: json.RawMessage(`{"city":"Zürich"}`)},
				{ID: "call_2", Name: "get_time", Args: nil},
			}},
			{Role: model.RoleTool, ToolCallID: "call_1", ToolName: "get_weather", Content: `{"temp_c": 12}`},
			{Role: model.RoleTool, ToolCallID: "call_2", ToolName: "get_time", Content: "14:05"},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
				{ID: "call_3", Name: "get_time", Args: json.RawMessage(`"{\"tz\": \"Eur"`)},
			}},
			{Role: model.RoleTool, ToolCallID: "call_3", ToolName: "get_time", Content: "invalid arguments", IsError: true},
			{Role: model.RoleAssistant, Content: "It is 12 °C and 14:05."},
			{Role: model.RoleUser, Content: "Thanks!"},
		},
		Tools: []model.ToolSpec{
			{Name: "get_weather", Description: "Current weather for a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
			{Name: "get_time"},
		},
		MaxTokens:   512,
		Temperature: ptr(0.2),
		TopP:        ptr(0.9),
		Stop:        []string{"\n\nUser:"},
		Extra:       map[string]any{"seed": 7, "stream": false, "model": "other", "top_k": 40},
	}
}

func TestRequestGolden(t *testing.T) {
	tests := []struct {
		golden string
		req    *model.Request
	}{
		{golden: "request_rich.golden.json", req: richRequest()},
		{golden: "request_minimal.golden.json", req: simpleRequest()},
		{golden: "request_max_completion_tokens.golden.json", req: &model.Request{
			Model: "o3-mini", MaxTokens: 1000,
			Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}},
			Extra:    map[string]any{"max_completion_tokens": 4000, "reasoning_effort": "low"},
		}},
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
	f.Add([]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":-1,\"function\":{\"arguments\":\"{\"}}]}}]}\n\n"))
	f.Add([]byte(`{"error":"x"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c := New(&Options{BaseURL: "http://fuzz.invalid/v1", HTTPClient: &http.Client{Transport: bodyTransport(body)}})
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
			if tc.ID == "" {
				t.Fatalf("tool call %q has no id", tc.Name)
			}
		}
	})
}

// stream200 builds a 200-chunk stream: text deltas, then a tool call whose
// arguments arrive in pieces, then usage.
func stream200() []byte {
	var b bytes.Buffer
	head := `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1746380573,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0392822090","choices":[{"index":0,"delta":`
	for i := range 150 {
		fmt.Fprintf(&b, "data: %s{\"content\":\"token %d \"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n", head, i)
	}
	fmt.Fprintf(&b, "data: %s{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"arguments\":\"\"}}]},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n", head)
	fmt.Fprintf(&b, "data: %s{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"text\\\": \\\"\"}}]},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n", head)
	for i := range 46 {
		fmt.Fprintf(&b, "data: %s{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"word%d \"}}]},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}\n\n", head, i)
	}
	fmt.Fprintf(&b, "data: %s{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"}\"}}]},\"logprobs\":null,\"finish_reason\":\"tool_calls\"}],\"usage\":null}\n\n", head)
	b.WriteString(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1746380573,"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":200,"total_tokens":300}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

func BenchmarkStream200(b *testing.B) {
	body := stream200()
	c := New(&Options{BaseURL: "http://bench.invalid/v1", HTTPClient: &http.Client{Transport: bodyTransport(body)}})
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
