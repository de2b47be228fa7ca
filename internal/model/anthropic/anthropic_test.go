package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
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
const piece = 41

// dial returns a client with default options for a server at url.
func dial(url string, hc *http.Client) model.Provider {
	return New(&Options{BaseURL: url, HTTPClient: hc})
}

func simpleRequest() *model.Request {
	return &model.Request{Model: "claude-sonnet-4-20250514", Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}
}

func TestStreamRecorded(t *testing.T) {
	tests := []wiretest.StreamCase{
		{
			File: "text.sse",
			Want: &model.Response{
				Text: "Hello! How can I help you today?", StopReason: "end_turn", Model: "claude-sonnet-4-20250514",
				Usage: model.Usage{InputTokens: 25, OutputTokens: 12},
			},
			WantDeltas: []model.Delta{{Text: "Hello"}, {Text: "! How can I help"}, {Text: " you today?"}},
		},
		{
			File: "tool_use.sse",
			Want: &model.Response{
				Text: "I'll check the weather and the time.",
				ToolCalls: []model.ToolCall{
					{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "get_weather", Args: json.RawMessage(`{"location": "San Francisco, CA", "unit": "fahrenheit"}`)},
					{ID: "toolu_01VQ2T4k9ZrQn8E5jwJYw3Bx", Name: "get_time", Args: json.RawMessage(`{"tz": "America/Los_Angeles"}`)},
					{ID: "toolu_01Hc4bP7mYkWn2Rj8sXe5LqA", Name: "list_alerts", Args: json.RawMessage(`{}`)},
				},
				StopReason: "tool_use", Model: "claude-sonnet-4-20250514",
				Usage: model.Usage{InputTokens: 472 + 1024 + 2048, OutputTokens: 89},
			},
			WantDeltas: []model.Delta{{Text: "I'll check the weather"}, {Text: " and the time."}},
		},
		{
			File: "thinking.sse",
			Want: &model.Response{
				Text: "The GCD is 21.", Reasoning: "I need to find the GCD of 1071 and 462 using the Euclidean algorithm.",
				StopReason: "end_turn", Model: "claude-sonnet-4-20250514",
				Usage: model.Usage{InputTokens: 36, OutputTokens: 140},
			},
			WantDeltas: []model.Delta{
				{Text: "I need to find the GCD of 1071 and 462", Reasoning: true},
				{Text: " using the Euclidean algorithm.", Reasoning: true},
				{Text: "The GCD is 21."},
			},
		},
		{
			File:   "nonstream.json",
			Header: http.Header{"Content-Type": {"application/json"}},
			Want: &model.Response{
				Text: "Let me look that up.",
				ToolCalls: []model.ToolCall{
					{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Args: json.RawMessage(`{"location": "Oslo"}`)},
				},
				StopReason: "tool_use", Model: "claude-sonnet-4-20250514",
				Usage: model.Usage{InputTokens: 410, OutputTokens: 41},
			},
			WantDeltas: []model.Delta{{Text: "Let me look that up."}},
		},
	}
	wiretest.RunStreams(t, piece, dial, simpleRequest(), tests)
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
			got, _ := wiretest.Stream(t, piece, dial, simpleRequest(), toolStream(tt.startInput, tt.fragments...))
			if a := string(wiretest.OneToolCall(t, got).Args); a != tt.want {
				t.Errorf("Args = %s, want %s", a, tt.want)
			}
		})
	}
}

func TestStreamErrors(t *testing.T) {
	const key = "sk-ant-api03-test-0123456789"
	tests := []wiretest.ErrorCase{
		{
			Name: "429 rate_limit_error", Status: 429,
			Header:   http.Header{"Retry-After": {"12"}, "Request-Id": {"req_011"}},
			Body:     `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 50,000 input tokens per minute."},"request_id":"req_011"}`,
			WantKind: model.ErrRateLimited, WantStatus: 429, WantRetry: 12 * time.Second, WantMsg: "exceed the rate limit",
		},
		{
			Name: "429 HTTP date", Status: 429,
			Header:   http.Header{"Retry-After": {"Sun, 06 Nov 1994 08:49:37 GMT"}},
			Body:     `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`,
			WantKind: model.ErrRateLimited, WantStatus: 429, WantRetry: 30 * time.Second, WantMsg: "slow down",
		},
		{
			Name: "529 overloaded", Status: 529,
			Body:     `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			WantKind: model.ErrOverloaded, WantStatus: 529, WantMsg: "Overloaded",
		},
		{
			Name: "500 api_error", Status: 500,
			Body:     `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`,
			WantKind: model.ErrServer, WantStatus: 500, WantMsg: "Internal server error",
		},
		{
			Name: "502 from a proxy", Status: 502, Body: "<html><body>Bad Gateway</body></html>",
			WantKind: model.ErrServer, WantStatus: 502, WantMsg: "Bad Gateway",
		},
		{
			Name: "401 never shows the key", Status: 401,
			Body:     `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + key + `"}}`,
			WantKind: model.ErrAuth, WantStatus: 401, WantMsg: "invalid x-api-key [redacted]",
		},
		{
			Name: "403 permission", Status: 403,
			Body:     `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`,
			WantKind: model.ErrAuth, WantStatus: 403, WantMsg: "does not have permission",
		},
		{
			Name: "400 prompt is too long", Status: 400,
			Body:     `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 215304 tokens > 200000 maximum"}}`,
			WantKind: model.ErrContextOverflow, WantStatus: 400, WantMsg: "prompt is too long",
		},
		{
			Name: "400 input and max_tokens exceed context", Status: 400,
			Body:     `{"type":"error","error":{"type":"invalid_request_error","message":"input length and ` + "`max_tokens`" + ` exceed context limit: 197000 + 8192 > 200000, decrease input length or ` + "`max_tokens`" + ` and try again"}}`,
			WantKind: model.ErrContextOverflow, WantStatus: 400, WantMsg: "exceed context limit",
		},
		{
			Name: "413 request_too_large", Status: 413,
			Body:     `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`,
			WantKind: model.ErrContextOverflow, WantStatus: 413, WantMsg: "maximum allowed number of bytes",
		},
		{
			Name: "400 other", Status: 400,
			Body:     `{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate between \"user\" and \"assistant\""}}`,
			WantKind: model.ErrBadRequest, WantStatus: 400, WantMsg: "roles must alternate",
		},
		{
			Name: "404 model", Status: 404,
			Body:     `{"type":"error","error":{"type":"not_found_error","message":"model: claude-9"}}`,
			WantKind: model.ErrBadRequest, WantStatus: 404, WantMsg: "model: claude-9",
		},
		{Name: "mid-stream overloaded_error", Status: 200, File: "overloaded.sse", WantKind: model.ErrOverloaded, WantMsg: "Overloaded"},
		{Name: "truncated (no message_stop)", Status: 200, File: "truncated.sse", WantKind: model.ErrProtocol, WantMsg: "stream ended before the response was complete"},
		{Name: "bad JSON", Status: 200, File: "bad_json.sse", WantKind: model.ErrProtocol, WantMsg: `invalid JSON in "content_block_delta" event`},
		{
			Name: "delta for an unknown block", Status: 200,
			Body:     "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
			WantKind: model.ErrProtocol, WantMsg: "never started",
		},
		{
			Name: "mid-stream rate limit", Status: 200,
			Body:     "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Rate limited\"}}\n\n",
			WantKind: model.ErrRateLimited, WantMsg: "Rate limited",
		},
		{
			Name: "mid-stream prompt too long", Status: 200,
			Body:     "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 201000 tokens > 200000 maximum\"}}\n\n",
			WantKind: model.ErrContextOverflow, WantMsg: "prompt is too long",
		},
		{Name: "empty body", Status: 200, WantKind: model.ErrProtocol, WantMsg: "empty response body"},
		{
			Name: "200 JSON error", Status: 200, Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			WantKind: model.ErrOverloaded, WantMsg: "Overloaded",
		},
		{
			Name: "200 JSON of another kind", Status: 200, Body: `{"type":"completion","completion":"hi"}`,
			WantKind: model.ErrProtocol, WantMsg: `unexpected response type "completion"`,
		},
	}
	wiretest.RunErrors(t, piece, func(url string, hc *http.Client) model.Provider {
		c := New(&Options{BaseURL: url, APIKey: key, HTTPClient: hc, Name: "claude"})
		c.ep.Now = func() time.Time { return time.Date(1994, 11, 6, 8, 49, 7, 0, time.UTC) }
		return c
	}, simpleRequest(), "claude", key, tests)
}

func TestTransportError(t *testing.T) {
	_, err := New(&Options{BaseURL: wiretest.ClosedURL()}).Stream(context.Background(), simpleRequest(), nil)
	if !errors.Is(err, model.ErrTransport) {
		t.Fatalf("error = %v, want ErrTransport", err)
	}
}

func TestCancelMidStream(t *testing.T) {
	wiretest.CheckCancelMidStream(t, dial, simpleRequest(),
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\"}}\n\n"+
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"+
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"tick\"}}\n\n")
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
			_, rec := wiretest.Stream(t, piece, func(url string, hc *http.Client) model.Provider {
				return New(&Options{
					BaseURL: url + tt.base, APIKey: tt.key, Version: tt.version, HTTPClient: hc,
					Headers: map[string]string{"anthropic-beta": "prompt-caching-2024-07-31"},
				})
			}, simpleRequest(), wiretest.ReadTestdata(t, "text.sse"))
			if rec.Method != http.MethodPost || rec.Path != "/v1/messages" {
				t.Errorf("request %s %s, want POST /v1/messages", rec.Method, rec.Path)
			}
			if got := rec.Header.Get("x-api-key"); got != tt.key {
				t.Errorf("x-api-key = %q, want %q", got, tt.key)
			}
			if _, ok := rec.Header["X-Api-Key"]; ok != (tt.key != "") {
				t.Errorf("x-api-key present = %v, want %v", ok, tt.key != "")
			}
			if got := rec.Header.Get("anthropic-version"); got != tt.wantVersion {
				t.Errorf("anthropic-version = %q, want %q", got, tt.wantVersion)
			}
			if got := rec.Header.Get("anthropic-beta"); got != "prompt-caching-2024-07-31" {
				t.Errorf("custom header = %q", got)
			}
			if got := rec.Header.Get("Authorization"); got != "" {
				t.Errorf("unexpected Authorization header %q", got)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	c := New(nil)
	if c.ep.URL != "https://api.anthropic.com/v1/messages" || c.Name() != "anthropic" || c.ep.APIHeaders["anthropic-version"] != DefaultVersion {
		t.Errorf("defaults: url %q name %q version %q", c.ep.URL, c.Name(), c.ep.APIHeaders["anthropic-version"])
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
	tests := []wiretest.GoldenCase{
		{Golden: "request_rich.golden.json", Req: richRequest()},
		{Golden: "request_minimal.golden.json", Req: simpleRequest()},
	}
	wiretest.RunGolden(t, piece, dial, *update, tests)
}

func TestRequestValidation(t *testing.T) {
	wiretest.CheckValidation(t, New(nil), simpleRequest())
}

func FuzzStream(f *testing.F) {
	wiretest.FuzzStream(f, func(hc *http.Client) model.Provider {
		return New(&Options{BaseURL: "http://fuzz.invalid", HTTPClient: hc})
	}, simpleRequest(), false, toolStream(`{}`, `{"a":`, `1}`), toolStream(`null`, `[`))
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
	wiretest.BenchStream(b, func(hc *http.Client) model.Provider {
		return New(&Options{BaseURL: "http://bench.invalid", HTTPClient: hc})
	}, simpleRequest(), stream200())
}

// imageRequest has images from the user (image blocks before the text) and
// from tools (inside tool_result contents, with or without text).
func imageRequest() *model.Request {
	pngImg := model.Image{MIMEType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n-dot")}
	webpImg := model.Image{MIMEType: "image/webp", Data: []byte("RIFF\x00\x00\x00\x00WEBPVP8 ")}
	return &model.Request{
		Model: "claude-sonnet-4-20250514",
		Messages: []model.Message{
			{Role: model.RoleUser, Content: "What is in these pictures?", Images: []model.Image{pngImg, webpImg}},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
				{ID: "toolu_1", Name: "screenshot", Args: json.RawMessage(`{}`)},
				{ID: "toolu_2", Name: "camera", Args: json.RawMessage(`{}`)},
			}},
			{Role: model.RoleTool, ToolCallID: "toolu_1", ToolName: "screenshot", Content: "[image image/png, 12 bytes]", Images: []model.Image{pngImg}},
			{Role: model.RoleTool, ToolCallID: "toolu_2", ToolName: "camera", Images: []model.Image{webpImg}},
			{Role: model.RoleAssistant, Content: "Two dots."},
			{Role: model.RoleUser, Images: []model.Image{pngImg}},
		},
	}
}

func TestRequestImagesGolden(t *testing.T) {
	wiretest.RunGolden(t, piece, dial, *update, []wiretest.GoldenCase{{Golden: "request_images.golden.json", Req: imageRequest()}})
}

// fakellm takes the images as the real API would and counts them all.
func TestRequestImagesAcceptedByFakellm(t *testing.T) {
	script, err := fakellm.ParseScript("images.fake", []byte("say {{images}} images\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(fakellm.New(script, nil))
	defer srv.Close()
	resp, err := New(&Options{BaseURL: srv.URL, HTTPClient: srv.Client()}).Stream(context.Background(), imageRequest(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "5 images" {
		t.Errorf("reply %q, want 5 images", resp.Text)
	}
}
