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
	"strings"
	"testing"
	"time"

	"agentd/internal/model"
	"agentd/internal/model/fakellm"
	"agentd/internal/model/internal/wiretest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// piece is how many bytes of a reply a test server writes at a time.
const piece = 37

// dial returns a client with default options for a server at url.
func dial(url string, hc *http.Client) model.Provider {
	return New(&Options{BaseURL: url, HTTPClient: hc})
}

func simpleRequest() *model.Request {
	return &model.Request{Model: "gpt-4o", Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}
}

func TestStreamRecorded(t *testing.T) {
	tests := []wiretest.StreamCase{
		{
			File: "text.sse",
			Want: &model.Response{Text: "Hello! How can I help you today?", StopReason: "stop", Model: "gpt-4o-2024-08-06"},
			WantDeltas: []model.Delta{
				{Text: "Hello"}, {Text: "!"}, {Text: " How can I"}, {Text: " help you today?"},
			},
		},
		{
			File: "text_usage.sse",
			Want: &model.Response{
				Text: "The capital of France is Paris.", StopReason: "stop", Model: "gpt-4.1-mini-2025-04-14",
				Usage: model.Usage{InputTokens: 24, OutputTokens: 7},
			},
			WantDeltas: []model.Delta{{Text: "The capital"}, {Text: " of France is"}, {Text: " Paris."}},
		},
		{
			File: "tool_calls_parallel.sse",
			Want: &model.Response{
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
			File: "reasoning_content.sse",
			Want: &model.Response{
				Text: "2 + 2 = 4.", Reasoning: "The user asks for 2+2.", StopReason: "stop", Model: "deepseek-reasoner",
				Usage: model.Usage{InputTokens: 13, OutputTokens: 41},
			},
			WantDeltas: []model.Delta{
				{Text: "The user asks", Reasoning: true}, {Text: " for 2+2.", Reasoning: true},
				{Text: "2 + 2"}, {Text: " = 4."},
			},
		},
		{
			File: "ollama.sse",
			Want: &model.Response{
				Text: "Let me look.", Reasoning: "I should check the directory.",
				ToolCalls: []model.ToolCall{
					{ID: "call_wteop8bt", Name: "run_command", Args: json.RawMessage(`{"command":"ls"}`)},
					{ID: "call_rk2xye1l", Name: "run_command", Args: json.RawMessage(`{"command":"ls -l"}`)},
				},
				StopReason: "tool_calls", Model: "qwen3:8b",
				Usage: model.Usage{InputTokens: 187, OutputTokens: 64},
			},
			WantDeltas: []model.Delta{
				{Text: "I should check", Reasoning: true}, {Text: " the directory.", Reasoning: true}, {Text: "Let me look."},
			},
		},
		{
			File: "llamacpp.sse",
			Want: &model.Response{
				Text: "Hi there", StopReason: "length", Model: "gpt-3.5-turbo",
				Usage: model.Usage{InputTokens: 9, OutputTokens: 2},
			},
			WantDeltas: []model.Delta{{Text: "Hi"}, {Text: " there"}},
		},
		{
			// Every call at index 0, distinguished by id; no [DONE].
			File: "same_index.sse",
			Want: &model.Response{
				ToolCalls: []model.ToolCall{
					{ID: "call_a1", Name: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)},
					{ID: "call_b2", Name: "read_file", Args: json.RawMessage(`{"path":"b.txt"}`)},
				},
				StopReason: "tool_calls", Model: "llama3.1:8b",
			},
		},
		{
			File:   "nonstream.json",
			Header: http.Header{"Content-Type": {"application/json"}},
			Want: &model.Response{
				Text: "Checking the weather.",
				ToolCalls: []model.ToolCall{
					{ID: "call_Qp4nX7sD2kF9hJ1mL5bV8cZ3", Name: "get_weather", Args: json.RawMessage(`{"city":"Oslo"}`)},
				},
				StopReason: "tool_calls", Model: "gpt-4o-mini-2024-07-18",
				Usage: model.Usage{InputTokens: 82, OutputTokens: 17},
			},
			WantDeltas: []model.Delta{{Text: "Checking the weather."}},
		},
	}
	wiretest.RunStreams(t, piece, func(url string, hc *http.Client) model.Provider {
		return New(&Options{BaseURL: url + "/v1", HTTPClient: hc})
	}, simpleRequest(), tests)
}

func TestStreamNilOnDelta(t *testing.T) {
	srv := wiretest.NewServer(t, piece, http.StatusOK, wiretest.SSEHeader(), wiretest.ReadTestdata(t, "text.sse"))
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
			got, _ := wiretest.Stream(t, piece, dial, simpleRequest(), []byte(b.String()))
			args := wiretest.OneToolCall(t, got).Args
			if a := string(args); a != tt.want {
				t.Errorf("Args = %s, want %s", a, tt.want)
			}
			if !json.Valid(args) {
				t.Errorf("Args %s is not valid JSON", args)
			}
		})
	}
}

func TestMissingToolCallID(t *testing.T) {
	body := "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}},{\"index\":1,\"function\":{\"name\":\"g\",\"arguments\":{\"x\":1}}}]},\"finish_reason\":\"tool_calls\"}]}\n\n"
	got, _ := wiretest.Stream(t, piece, dial, simpleRequest(), []byte(body))
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
	tests := []wiretest.ErrorCase{
		{
			Name: "429 retry-after seconds", Status: 429,
			Header:   http.Header{"Retry-After": {"7"}},
			Body:     `{"error":{"message":"Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			WantKind: model.ErrRateLimited, WantStatus: 429, WantRetry: 7 * time.Second, WantMsg: "Rate limit reached",
		},
		{
			Name: "429 retry-after-ms wins", Status: 429,
			Header:   http.Header{"Retry-After": {"2"}, "Retry-After-Ms": {"1500"}},
			Body:     `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`,
			WantKind: model.ErrRateLimited, WantStatus: 429, WantRetry: 1500 * time.Millisecond, WantMsg: "slow down",
		},
		{
			Name: "429 retry-after HTTP date", Status: 429,
			Header:   http.Header{"Retry-After": {"Sun, 06 Nov 1994 08:49:37 GMT"}},
			Body:     `{"error":{"message":"slow down"}}`,
			WantKind: model.ErrRateLimited, WantStatus: 429, WantRetry: 90 * time.Second, WantMsg: "slow down",
		},
		{
			Name: "429 insufficient quota", Status: 429,
			Body:     `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			WantKind: model.ErrAuth, WantStatus: 429, WantMsg: "exceeded your current quota",
		},
		{
			Name: "500", Status: 500,
			Body:     `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`,
			WantKind: model.ErrServer, WantStatus: 500, WantMsg: "Sorry about that",
		},
		{
			Name: "503 plain text", Status: 503, Body: "upstream connect error",
			WantKind: model.ErrOverloaded, WantStatus: 503, WantMsg: "upstream connect error",
		},
		{
			Name: "529 empty body", Status: 529,
			WantKind: model.ErrOverloaded, WantStatus: 529,
		},
		{
			Name: "401 never shows the key", Status: 401,
			Body:     `{"error":{"message":"Incorrect API key provided: ` + key + `. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			WantKind: model.ErrAuth, WantStatus: 401, WantMsg: "Incorrect API key provided: [redacted]",
		},
		{
			Name: "403", Status: 403, Body: `{"error":{"message":"Project does not have access to model","type":"invalid_request_error","code":"model_not_found"}}`,
			WantKind: model.ErrAuth, WantStatus: 403, WantMsg: "does not have access",
		},
		{
			Name: "400 context_length_exceeded", Status: 400,
			Body:     `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			WantKind: model.ErrContextOverflow, WantStatus: 400, WantMsg: "maximum context length",
		},
		{
			Name: "400 llama.cpp exceed context size", Status: 400,
			Body:     `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}`,
			WantKind: model.ErrContextOverflow, WantStatus: 400, WantMsg: "exceeds the available context size",
		},
		{
			Name: "413", Status: 413, Body: `{"error":{"message":"Request too large"}}`,
			WantKind: model.ErrContextOverflow, WantStatus: 413, WantMsg: "Request too large",
		},
		{
			Name: "400 other", Status: 400,
			Body:     `{"error":{"message":"Invalid value for 'temperature': must be between 0 and 2.","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`,
			WantKind: model.ErrBadRequest, WantStatus: 400, WantMsg: "Invalid value for 'temperature'",
		},
		{
			Name: "404 ollama model missing, error as string", Status: 404,
			Body:     `{"error":"model \"llama9\" not found, try pulling it first"}`,
			WantKind: model.ErrBadRequest, WantStatus: 404, WantMsg: `model "llama9" not found`,
		},
		{
			Name: "422 detail", Status: 422, Body: `{"detail":"Field required: messages"}`,
			WantKind: model.ErrBadRequest, WantStatus: 422, WantMsg: "Field required",
		},
		{Name: "bad JSON chunk", Status: 200, File: "bad_json.sse", WantKind: model.ErrProtocol, WantMsg: "invalid JSON in stream chunk"},
		{Name: "truncated mid-event", Status: 200, File: "truncated.sse", WantKind: model.ErrProtocol, WantMsg: "stream ended before the response was complete"},
		{
			Name: "ends between events without finish", Status: 200,
			Body:     "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n",
			WantKind: model.ErrProtocol, WantMsg: "stream ended before the response was complete",
		},
		{Name: "empty body", Status: 200, WantKind: model.ErrProtocol, WantMsg: "empty response body"},
		{Name: "HTML page", Status: 200, Body: "<html>hello</html>", WantKind: model.ErrProtocol},
		{Name: "mid-stream error object", Status: 200, File: "midstream_error.sse", WantKind: model.ErrServer, WantMsg: "The server had an error"},
		{Name: "mid-stream vLLM overflow", Status: 200, File: "midstream_overflow.sse", WantKind: model.ErrContextOverflow, WantStatus: 400, WantMsg: "maximum context length is 8192"},
		{
			Name: "mid-stream rate limit", Status: 200,
			Body:     "data: {\"error\":{\"message\":\"Rate limit exceeded\",\"type\":\"rate_limit_error\"}}\n\n",
			WantKind: model.ErrRateLimited, WantMsg: "Rate limit exceeded",
		},
		{
			Name: "200 JSON error object", Status: 200,
			Body:     `{"error":{"message":"Invalid 'messages': empty array.","type":"invalid_request_error","code":"empty_array"}}`,
			WantKind: model.ErrBadRequest, WantMsg: "empty array",
		},
		{
			Name: "non-stream JSON without choices", Status: 200, Body: `{"id":"x","object":"chat.completion","choices":[]}`,
			WantKind: model.ErrProtocol, WantMsg: "no choices",
		},
	}
	wiretest.RunErrors(t, piece, func(url string, hc *http.Client) model.Provider {
		c := New(&Options{BaseURL: url, APIKey: key, HTTPClient: hc, Name: "testprov"})
		c.ep.Now = func() time.Time { return time.Date(1994, 11, 6, 8, 48, 7, 0, time.UTC) }
		return c
	}, simpleRequest(), "testprov", key, tests)
}

func TestErrorBodyIsCapped(t *testing.T) {
	body := strings.Repeat("x", 1<<20)
	srv := wiretest.NewServer(t, piece, 400, nil, []byte(body))
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
	_, err := New(&Options{BaseURL: wiretest.ClosedURL(), APIKey: "sk-secret-key"}).Stream(context.Background(), simpleRequest(), nil)
	if !errors.Is(err, model.ErrTransport) {
		t.Fatalf("error = %v, want ErrTransport", err)
	}
	if !model.Retryable(err) {
		t.Errorf("transport error should be retryable")
	}
}

func TestCancelMidStream(t *testing.T) {
	wiretest.CheckCancelMidStream(t, dial, simpleRequest(), "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tick\"}}]}\n\n")
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
			_, rec := wiretest.Stream(t, piece, func(url string, hc *http.Client) model.Provider {
				return New(&Options{
					BaseURL: url + tt.base, APIKey: tt.key, HTTPClient: hc,
					Headers: map[string]string{"HTTP-Referer": "https://agentd.example"},
				})
			}, simpleRequest(), wiretest.ReadTestdata(t, "text.sse"))
			if rec.Method != http.MethodPost || rec.Path != tt.wantPath {
				t.Errorf("request %s %s, want POST %s", rec.Method, rec.Path, tt.wantPath)
			}
			if got := rec.Header.Get("Authorization"); got != tt.wantAuth {
				t.Errorf("Authorization = %q, want %q", got, tt.wantAuth)
			}
			if _, ok := rec.Header["Authorization"]; !ok && tt.wantAuth != "" || ok && tt.wantAuth == "" {
				t.Errorf("Authorization header presence wrong: %v", rec.Header)
			}
			if got := rec.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q", got)
			}
			if got := rec.Header.Get("HTTP-Referer"); got != "https://agentd.example" {
				t.Errorf("custom header = %q", got)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	c := New(nil)
	if c.ep.URL != "https://api.openai.com/v1/chat/completions" || c.Name() != "openai" {
		t.Errorf("defaults: url %q name %q", c.ep.URL, c.Name())
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
	tests := []wiretest.GoldenCase{
		{Golden: "request_rich.golden.json", Req: richRequest()},
		{Golden: "request_minimal.golden.json", Req: simpleRequest()},
		{Golden: "request_max_completion_tokens.golden.json", Req: &model.Request{
			Model: "o3-mini", MaxTokens: 1000,
			Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}},
			Extra:    map[string]any{"max_completion_tokens": 4000, "reasoning_effort": "low"},
		}},
	}
	wiretest.RunGolden(t, piece, dial, *update, tests)
}

func TestRequestValidation(t *testing.T) {
	wiretest.CheckValidation(t, New(nil), simpleRequest())
}

func FuzzStream(f *testing.F) {
	wiretest.FuzzStream(f, func(hc *http.Client) model.Provider {
		return New(&Options{BaseURL: "http://fuzz.invalid/v1", HTTPClient: hc})
	}, simpleRequest(), true,
		[]byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":-1,\"function\":{\"arguments\":\"{\"}}]}}]}\n\n"),
		[]byte(`{"error":"x"}`))
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
	wiretest.BenchStream(b, func(hc *http.Client) model.Provider {
		return New(&Options{BaseURL: "http://bench.invalid/v1", HTTPClient: hc})
	}, simpleRequest(), stream200())
}

// imageRequest has images from the user and from a tool, whose images go
// in a user message after the tool results.
func imageRequest() *model.Request {
	pngImg := model.Image{MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n-dot")}
	gifImg := model.Image{MIMEType: "image/gif", Data: []byte("GIF89a-dot")}
	return &model.Request{
		Model: "gpt-4o",
		Messages: []model.Message{
			{Role: model.RoleUser, Content: "What is in these pictures?", Images: []model.Image{pngImg, gifImg}},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
				{ID: "call_1", Name: "screenshot", Args: json.RawMessage(`{}`)},
				{ID: "call_2", Name: "get_time", Args: json.RawMessage(`{}`)},
			}},
			{Role: model.RoleTool, ToolCallID: "call_1", ToolName: "screenshot", Content: "[image image/png, 12 bytes]", Images: []model.Image{pngImg}},
			{Role: model.RoleTool, ToolCallID: "call_2", ToolName: "get_time", Content: "14:05"},
			{Role: model.RoleAssistant, Content: "A dot and a dot."},
			{Role: model.RoleUser, Content: "", Images: []model.Image{gifImg}},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_3", Name: "screenshot", Args: json.RawMessage(`{}`)}}},
			{Role: model.RoleTool, ToolCallID: "call_3", ToolName: "screenshot", Content: "[image image/gif, 10 bytes]", Images: []model.Image{gifImg}},
		},
	}
}

func TestRequestImagesGolden(t *testing.T) {
	wiretest.RunGolden(t, piece, dial, *update, []wiretest.GoldenCase{{Golden: "request_images.golden.json", Req: imageRequest()}})
}

// fakellm takes the images as the real API would and counts them all.
func TestRequestImagesAcceptedByFakellm(t *testing.T) {
	script, err := fakellm.ParseScript("images.fake", []byte("say {{images}} images\n---\nsay {{images}} images, after a tool\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(fakellm.New(script, nil))
	defer srv.Close()
	resp, err := New(&Options{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()}).Stream(context.Background(), imageRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "5 images, after a tool" {
		t.Errorf("reply %q, want 5 images, after a tool", resp.Text)
	}
}
