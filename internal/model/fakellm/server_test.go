package fakellm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// samples returns the sample scripts of testdata/samples.txtar by name.
func samples(t testing.TB) map[string]*Script {
	t.Helper()
	a := readArchive(t, filepath.Join("testdata", "samples.txtar"))
	m := map[string]*Script{}
	for _, f := range a.Files {
		s, err := ParseScript(f.Name, []byte(f.Data))
		if err != nil {
			t.Fatal(err)
		}
		m[f.Name] = s
	}
	return m
}

func mustParse(t testing.TB, src string) *Script {
	t.Helper()
	s, err := ParseScript("test.fake", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var createdRE = regexp.MustCompile(`"created":\d+`)

// showResponse renders a response as the golden files show it.
func showResponse(resp *http.Response, body []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", resp.Status)
	for _, h := range []string{"Content-Type", "Retry-After", "Allow"} {
		if v := resp.Header.Get(h); v != "" {
			fmt.Fprintf(&b, "%s: %s\n", h, v)
		}
	}
	b.WriteString("\n")
	if path := resp.Request.URL.Path; path != "/v1/models" && path != "/models" {
		body = createdRE.ReplaceAll(body, []byte(`"created":0`))
	}
	b.Write(body)
	if len(body) > 0 && body[len(body)-1] != '\n' {
		b.WriteString("\n[no newline at end]\n")
	}
	return b.String()
}

// post sends body to path on srv and returns the response and its body.
func do(t testing.TB, srv *httptest.Server, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return resp, data
}

func TestHTTPGolden(t *testing.T) {
	path := filepath.Join("testdata", "http.txtar")
	a := readArchive(t, path)
	scripts := samples(t)
	changed := false
	for _, file := range slices.Clone(a.Files) {
		name := file.Name
		base, ok := strings.CutSuffix(name, ".request")
		if !ok {
			continue
		}
		t.Run(base, func(t *testing.T) {
			head, body, _ := strings.Cut(file.Data, "\n")
			f := strings.Fields(head)
			if len(f) < 2 {
				t.Fatalf("bad request line %q", head)
			}
			var script *Script
			if len(f) > 2 {
				if script = scripts[f[2]]; script == nil {
					t.Fatalf("no sample script %q", f[2])
				}
			}
			srv := httptest.NewServer(New(script, nil))
			defer srv.Close()
			resp, data := do(t, srv, f[0], f[1], strings.TrimSuffix(body, "\n"))
			if !strings.Contains(base, "truncate") {
				checkWellFormed(t, resp, data)
			}
			got := showResponse(resp, data)
			want, ok := a.Get(base + ".response")
			if ok && got == want {
				return
			}
			if !*update {
				t.Fatalf("response mismatch (-want +got):\n%s", cmp.Diff(want, got))
			}
			setAfter(a, name, base+".response", got)
			changed = true
		})
	}
	if changed {
		if err := os.WriteFile(path, a.Format(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkWellFormed checks that every JSON body and SSE data line parses.
func checkWellFormed(t *testing.T, resp *http.Response, body []byte) {
	t.Helper()
	ct := resp.Header.Get("Content-Type")
	switch {
	case ct == "text/event-stream":
		for _, line := range strings.Split(string(body), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && d != "[DONE]" && !json.Valid([]byte(d)) {
				t.Errorf("invalid JSON in SSE data line: %s", d)
			}
		}
	case ct == "application/json":
		if !json.Valid(body) {
			t.Errorf("invalid JSON body: %s", body)
		}
	}
}

// result is a response reduced to what a client takes from it.
type result struct {
	Text, Reasoning string
	Calls           []resultCall
	Stop            string
	In, Out         int
	Complete        bool // the stream ended with [DONE] or message_stop
}

type resultCall struct{ ID, Name, Args string }

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("arguments %q: %v", s, err)
	}
	return b.String()
}

// sseEvents splits an SSE body into (event, data) pairs.
func sseEvents(t *testing.T, body []byte) [][2]string {
	t.Helper()
	var out [][2]string
	var event, data string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != "" {
				out = append(out, [2]string{event, data})
			}
			event, data = "", ""
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return out
}

// readOpenAIStream assembles a chat.completion.chunk stream.
func readOpenAIStream(t *testing.T, body []byte) result {
	t.Helper()
	var r result
	for _, ev := range sseEvents(t, body) {
		if r.Complete {
			t.Fatalf("data after [DONE]: %s", ev[1])
		}
		if ev[1] == "[DONE]" {
			r.Complete = true
			continue
		}
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Content   *string `json:"content"`
					Reasoning string  `json:"reasoning_content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Type     string `json:"type"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
				Total      int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev[1]), &c); err != nil {
			t.Fatalf("chunk %s: %v", ev[1], err)
		}
		if c.Object != "chat.completion.chunk" {
			t.Fatalf("object %q", c.Object)
		}
		if c.Usage != nil {
			if len(c.Choices) != 0 || c.Usage.Total != c.Usage.Prompt+c.Usage.Completion {
				t.Fatalf("bad usage chunk %s", ev[1])
			}
			r.In, r.Out = c.Usage.Prompt, c.Usage.Completion
		}
		for _, ch := range c.Choices {
			d := ch.Delta
			if d.Content != nil {
				r.Text += *d.Content
			}
			r.Reasoning += d.Reasoning
			for _, tc := range d.ToolCalls {
				if tc.ID != "" {
					if tc.Index != len(r.Calls) || tc.Type != "function" {
						t.Fatalf("tool call start %s", ev[1])
					}
					r.Calls = append(r.Calls, resultCall{ID: tc.ID, Name: tc.Function.Name})
				}
				if tc.Index != len(r.Calls)-1 {
					t.Fatalf("tool call index %d with %d calls", tc.Index, len(r.Calls))
				}
				r.Calls[tc.Index].Args += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				r.Stop = *ch.FinishReason
			}
		}
	}
	for i := range r.Calls {
		r.Calls[i].Args = compact(t, r.Calls[i].Args)
	}
	return r
}

func readOpenAIJSON(t *testing.T, body []byte) result {
	t.Helper()
	var c struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Role      string  `json:"role"`
				Content   *string `json:"content"`
				Reasoning string  `json:"reasoning_content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	if c.Object != "chat.completion" || len(c.Choices) != 1 || c.Choices[0].Message.Role != "assistant" {
		t.Fatalf("bad chat.completion %s", body)
	}
	m := c.Choices[0].Message
	r := result{Reasoning: m.Reasoning, Stop: c.Choices[0].FinishReason, In: c.Usage.Prompt, Out: c.Usage.Completion, Complete: true}
	if m.Content != nil {
		r.Text = *m.Content
	}
	for _, tc := range m.ToolCalls {
		r.Calls = append(r.Calls, resultCall{ID: tc.ID, Name: tc.Function.Name, Args: compact(t, tc.Function.Arguments)})
	}
	return r
}

// readAnthropicStream assembles a Messages stream, checking the order of
// its events.
func readAnthropicStream(t *testing.T, body []byte) result {
	t.Helper()
	var r result
	open := -1 // the open block's index
	next := 0  // the next block's index
	var kind string
	started := false
	for _, ev := range sseEvents(t, body) {
		var e struct {
			Type    string `json:"type"`
			Index   int    `json:"index"`
			Message struct {
				Usage struct {
					In int `json:"input_tokens"`
				} `json:"usage"`
			} `json:"message"`
			ContentBlock struct {
				Type string `json:"type"`
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"content_block"`
			Delta struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				Thinking    string `json:"thinking"`
				PartialJSON string `json:"partial_json"`
				Signature   string `json:"signature"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Usage struct {
				Out int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev[1]), &e); err != nil {
			t.Fatalf("event %s: %v", ev[1], err)
		}
		if e.Type != ev[0] {
			t.Fatalf("event name %q, data type %q", ev[0], e.Type)
		}
		if r.Complete {
			t.Fatalf("event after message_stop: %s", ev[1])
		}
		if !started && e.Type != "message_start" {
			t.Fatalf("first event is %s", e.Type)
		}
		switch e.Type {
		case "message_start":
			started = true
			r.In = e.Message.Usage.In
		case "ping":
		case "content_block_start":
			if open >= 0 || e.Index != next {
				t.Fatalf("block %d starts with %d open, %d expected", e.Index, open, next)
			}
			open, kind = e.Index, e.ContentBlock.Type
			next++
			if kind == "tool_use" {
				r.Calls = append(r.Calls, resultCall{ID: e.ContentBlock.ID, Name: e.ContentBlock.Name})
			}
		case "content_block_delta":
			if e.Index != open {
				t.Fatalf("delta for block %d, open %d", e.Index, open)
			}
			switch {
			case e.Delta.Type == "text_delta" && kind == "text":
				r.Text += e.Delta.Text
			case e.Delta.Type == "thinking_delta" && kind == "thinking":
				r.Reasoning += e.Delta.Thinking
			case e.Delta.Type == "signature_delta" && kind == "thinking":
				if e.Delta.Signature == "" {
					t.Fatal("empty signature")
				}
			case e.Delta.Type == "input_json_delta" && kind == "tool_use":
				r.Calls[len(r.Calls)-1].Args += e.Delta.PartialJSON
			default:
				t.Fatalf("delta %s in a %s block", e.Delta.Type, kind)
			}
		case "content_block_stop":
			if e.Index != open {
				t.Fatalf("stop for block %d, open %d", e.Index, open)
			}
			open = -1
		case "message_delta":
			if open >= 0 {
				t.Fatalf("message_delta with block %d open", open)
			}
			r.Stop, r.Out = e.Delta.StopReason, e.Usage.Out
		case "message_stop":
			r.Complete = true
		default:
			t.Fatalf("unknown event %s", e.Type)
		}
	}
	for i := range r.Calls {
		r.Calls[i].Args = compact(t, r.Calls[i].Args)
	}
	return r
}

func readAnthropicJSON(t *testing.T, body []byte) result {
	t.Helper()
	var m struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		Content []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			Thinking  string          `json:"thinking"`
			Signature string          `json:"signature"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
		} `json:"content"`
		StopReason string `json:"stop_reason"`
		Usage      struct {
			In  int `json:"input_tokens"`
			Out int `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	if m.Type != "message" || m.Role != "assistant" {
		t.Fatalf("bad message %s", body)
	}
	r := result{Stop: m.StopReason, In: m.Usage.In, Out: m.Usage.Out, Complete: true}
	for _, c := range m.Content {
		switch c.Type {
		case "text":
			r.Text += c.Text
		case "thinking":
			if c.Signature == "" {
				t.Fatal("thinking block without signature")
			}
			r.Reasoning += c.Thinking
		case "tool_use":
			r.Calls = append(r.Calls, resultCall{ID: c.ID, Name: c.Name, Args: compact(t, string(c.Input))})
		default:
			t.Fatalf("block type %q", c.Type)
		}
	}
	return r
}

// exchangeResult sends one request and reads the response as a client would.
func exchangeResult(t *testing.T, srv *httptest.Server, f format, stream bool, messages string) result {
	t.Helper()
	path := "/v1/chat/completions"
	body := `{"model":"m","stream":%t,"stream_options":{"include_usage":true},"messages":%s}`
	if f == anthropic {
		path = "/v1/messages"
		body = `{"model":"m","max_tokens":1024,"stream":%t,"messages":%s}`
	}
	resp, data := do(t, srv, "POST", path, fmt.Sprintf(body, stream, messages))
	if resp.StatusCode != 200 {
		t.Fatalf("status %s: %s", resp.Status, data)
	}
	switch {
	case f == openAI && stream:
		return readOpenAIStream(t, data)
	case f == openAI:
		return readOpenAIJSON(t, data)
	case stream:
		return readAnthropicStream(t, data)
	default:
		return readAnthropicJSON(t, data)
	}
}

// TestResponses checks what clients of both formats read, streamed and not,
// against the script; streamed and whole responses must agree.
func TestResponses(t *testing.T) {
	scripts := samples(t)
	oaToolTurn := `[{"role":"user","content":"summarize"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"list_dir","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"a","content":"notes \"1\".txt"}]`
	anToolTurn := `[{"role":"user","content":"summarize"},
		{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"list_dir","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"notes \"1\".txt"}]}]`
	tests := []struct {
		name     string
		script   string
		f        format
		messages string
		want     result
	}{
		{
			name: "openai echo", f: openAI,
			messages: `[{"role":"user","content":"héllo wörld, a longer line of text"}]`,
			want:     result{Text: "héllo wörld, a longer line of text", Stop: "stop", Out: 9},
		},
		{
			name: "anthropic echo", f: anthropic,
			messages: `[{"role":"user","content":"héllo wörld, a longer line of text"}]`,
			want:     result{Text: "héllo wörld, a longer line of text", Stop: "end_turn", Out: 9},
		},
		{
			name: "openai think and call", script: "demo.fake", f: openAI,
			messages: `[{"role":"user","content":"weather?"}]`,
			want: result{
				Reasoning: "The user asks about the weather, so I look it up first.",
				Calls:     []resultCall{{ID: "call_%_0_0", Name: "get_weather", Args: `{"city":"Paris","units":"metric"}`}},
				Stop:      "tool_calls", Out: 24,
			},
		},
		{
			name: "anthropic think and call", script: "demo.fake", f: anthropic,
			messages: `[{"role":"user","content":"weather?"}]`,
			want: result{
				Reasoning: "The user asks about the weather, so I look it up first.",
				Calls:     []resultCall{{ID: "toolu_%_0_0", Name: "get_weather", Args: `{"city":"Paris","units":"metric"}`}},
				Stop:      "tool_use", Out: 24,
			},
		},
		{
			name: "openai tool result in arguments", script: "tools.fake", f: openAI, messages: oaToolTurn,
			want: result{
				Calls: []resultCall{{ID: "call_%_1_0", Name: "read_file", Args: `{"path":"notes \"1\".txt"}`}},
				Stop:  "tool_calls", Out: 9,
			},
		},
		{
			name: "anthropic tool result in arguments", script: "tools.fake", f: anthropic, messages: anToolTurn,
			want: result{
				Calls: []resultCall{{ID: "toolu_%_1_0", Name: "read_file", Args: `{"path":"notes \"1\".txt"}`}},
				Stop:  "tool_use", Out: 9,
			},
		},
		{
			name: "openai n_messages", script: "demo.fake", f: openAI,
			messages: `[{"role":"system","content":"s"},{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]`,
			want:     result{Text: "You said: c (4 messages so far)", Stop: "stop", Out: 7},
		},
		{
			name: "think only", script: "think.fake", f: anthropic,
			messages: `[{"role":"user","content":"x"}]`,
			want:     result{Reasoning: "hmm", Stop: "end_turn", Out: 1},
		},
	}
	scripts["think.fake"] = mustParse(t, "think hmm\n")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(New(scripts[tt.script], nil))
			defer srv.Close()
			var results [2]result
			for i, stream := range []bool{false, true} {
				r := exchangeResult(t, srv, tt.f, stream, tt.messages)
				if r.In < 1 {
					t.Errorf("stream=%t: input tokens %d", stream, r.In)
				}
				r.In = 0
				for i := range r.Calls {
					// The id's middle part is a hash of the turn.
					c := &r.Calls[i]
					if parts := strings.Split(c.ID, "_"); len(parts) == 4 && len(parts[1]) == 8 {
						parts[1] = "%"
						c.ID = strings.Join(parts, "_")
					}
				}
				want := tt.want
				want.Complete = true
				if diff := cmp.Diff(want, r); diff != "" {
					t.Errorf("stream=%t (-want +got):\n%s", stream, diff)
				}
				results[i] = r
			}
			if diff := cmp.Diff(results[0], results[1]); diff != "" {
				t.Errorf("streamed and whole responses differ (-whole +streamed):\n%s", diff)
			}
		})
	}
}

// TestResponseIndex checks which response answers each call of a turn.
func TestResponseIndex(t *testing.T) {
	s := mustParse(t, `
match go
say first
---
say second
---
say third
`)
	srv := httptest.NewServer(New(s, nil))
	defer srv.Close()
	tests := []struct {
		name     string
		f        format
		messages string
		want     string
	}{
		{"openai first call", openAI, `[{"role":"user","content":"go"}]`, "first"},
		{"openai after tool results", openAI, `[{"role":"user","content":"go"},
			{"role":"assistant","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"1","content":"r"}]`, "second"},
		{"openai third call", openAI, `[{"role":"user","content":"go"},
			{"role":"assistant","tool_calls":[]},{"role":"tool","content":"r"},
			{"role":"assistant","tool_calls":[]},{"role":"tool","content":"r"}]`, "third"},
		{"openai past the last: echo", openAI, `[{"role":"user","content":"go"},
			{"role":"assistant"},{"role":"assistant"},{"role":"assistant"}]`, "go"},
		{"openai new turn starts over", openAI, `[{"role":"user","content":"go"},
			{"role":"assistant","content":"first"},{"role":"user","content":"go"}]`, "first"},
		{"openai no rule matches: echo", openAI, `[{"role":"user","content":"stop"}]`, "stop"},
		{"anthropic first call", anthropic, `[{"role":"user","content":"go"}]`, "first"},
		{"anthropic after tool results", anthropic, `[{"role":"user","content":[{"type":"text","text":"go"}]},
			{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"f","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"1","content":"r"}]}]`, "second"},
		{"anthropic third call", anthropic, `[{"role":"user","content":"go"},
			{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"f","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"1","content":"r"}]},
			{"role":"assistant","content":[{"type":"tool_use","id":"2","name":"f","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"2","content":"r"}]}]`, "third"},
		{"anthropic text beside tool results is user text", anthropic, `[{"role":"user","content":"go"},
			{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"f","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"1","content":"r"},{"type":"text","text":"go"}]}]`, "first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, stream := range []bool{false, true} {
				r := exchangeResult(t, srv, tt.f, stream, tt.messages)
				if r.Text != tt.want {
					t.Errorf("stream=%t: got %q, want %q", stream, r.Text, tt.want)
				}
			}
		})
	}
}

func TestFailTimes(t *testing.T) {
	srv := httptest.NewServer(New(samples(t)["failures.fake"], nil))
	defer srv.Close()
	for _, f := range []format{openAI, anthropic} {
		// Failures are counted per request messages, so each format gets
		// messages of its own.
		path, body := "/v1/chat/completions", `{"messages":[{"role":"user","content":"rate %d openai"}]}`
		if f == anthropic {
			path, body = "/v1/messages", `{"messages":[{"role":"user","content":"rate %d anthropic"}]}`
		}
		// Two failures per distinct request, then the reply.
		for _, n := range []int{1, 2} {
			for try, want := range []int{429, 429, 200, 200} {
				resp, data := do(t, srv, "POST", path, fmt.Sprintf(body, n))
				if resp.StatusCode != want {
					t.Fatalf("format %d request %d try %d: status %d, want %d: %s", f, n, try, resp.StatusCode, want, data)
				}
				if want == 429 && resp.Header.Get("Retry-After") != "1" {
					t.Errorf("Retry-After %q, want 1", resp.Header.Get("Retry-After"))
				}
				if want == 200 && !bytes.Contains(data, []byte("recovered after two rate limits")) {
					t.Errorf("body %s", data)
				}
			}
		}
	}
	// fail without times always fails.
	for range 3 {
		resp, _ := do(t, srv, "POST", "/v1/messages", `{"messages":[{"role":"user","content":"overloaded"}]}`)
		if resp.StatusCode != 529 {
			t.Fatalf("status %d, want 529", resp.StatusCode)
		}
	}
}

func TestFailOnlyResponseEchoesOnceRecovered(t *testing.T) {
	srv := httptest.NewServer(New(mustParse(t, "fail 500 times=1\n"), nil))
	defer srv.Close()
	body := `{"messages":[{"role":"user","content":"again"}]}`
	if resp, _ := do(t, srv, "POST", "/v1/chat/completions", body); resp.StatusCode != 500 {
		t.Fatalf("status %d, want 500", resp.StatusCode)
	}
	r := exchangeResult(t, srv, openAI, false, `[{"role":"user","content":"again"}]`)
	if r.Text != "again" {
		t.Fatalf("text %q, want the echo", r.Text)
	}
}

func TestDelay(t *testing.T) {
	s := mustParse(t, "match slow\ndelay 10ms\nsay done\nmatch stuck\ndelay 1h\nsay never\n")
	srv := httptest.NewServer(New(s, nil))
	defer srv.Close()
	if r := exchangeResult(t, srv, anthropic, true, `[{"role":"user","content":"slow"}]`); r.Text != "done" {
		t.Fatalf("text %q", r.Text)
	}
	// A client that gives up during a delay ends it.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/messages",
		strings.NewReader(`{"messages":[{"role":"user","content":"stuck"}]}`))
	errc := make(chan error, 1)
	go func() {
		resp, err := srv.Client().Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// A paced stream delivers every piece, and a client that gives up in a
// gap ends the stream.
func TestGap(t *testing.T) {
	s := mustParse(t, "match paced\nchunks 4\ngap 1ms\nsay one two three four\nmatch crawl\nchunks 4\ngap 1h\nsay never ending story\n")
	srv := httptest.NewServer(New(s, nil))
	defer srv.Close()
	for _, f := range []format{openAI, anthropic} {
		if r := exchangeResult(t, srv, f, true, `[{"role":"user","content":"paced"}]`); r.Text != "one two three four" {
			t.Fatalf("text %q", r.Text)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"stream":true,"messages":[{"role":"user","content":"crawl"}]}`))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 16)
	if _, err := resp.Body.Read(first); err != nil {
		t.Fatalf("first event: %v", err)
	}
	cancel()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	resp.Body.Close()
}

func TestTruncate(t *testing.T) {
	srv := httptest.NewServer(New(samples(t)["failures.fake"], nil))
	defer srv.Close()
	for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
		resp, data := do(t, srv, "POST", path, `{"stream":true,"messages":[{"role":"user","content":"cut"}]}`)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d", path, resp.StatusCode)
		}
		s := string(data)
		if strings.Contains(s, "[DONE]") || strings.Contains(s, "message_stop") || strings.Contains(s, "finish_reason\":\"") {
			t.Errorf("%s: truncated stream has its end:\n%s", path, s)
		}
		if !strings.Contains(s, "this rep") {
			t.Errorf("%s: truncated stream has no text:\n%s", path, s)
		}
		// Whole responses are cut too: the JSON does not parse.
		_, data = do(t, srv, "POST", path, `{"messages":[{"role":"user","content":"cut"}]}`)
		if json.Valid(data) || len(data) == 0 {
			t.Errorf("%s: truncated body is valid JSON: %s", path, data)
		}
	}
}

// nostream refuses streamed requests only, in each format's error shape.
func TestNoStream(t *testing.T) {
	srv := httptest.NewServer(New(mustParse(t, "match ^tools\nnostream\nsay whole\nmatch ^worded\nnostream 400 streaming is not supported\nsay fine\n"), nil))
	defer srv.Close()
	for _, tc := range []struct {
		path, user, want string
		status           int
	}{
		{"/v1/chat/completions", "tools", `{"error":{"message":"Cannot use tools with stream","type":"server_error","param":null,"code":null}}`, 500},
		{"/v1/messages", "tools", `{"type":"error","error":{"type":"api_error","message":"Cannot use tools with stream"}}`, 500},
		{"/v1/chat/completions", "worded", `"message":"streaming is not supported","type":"invalid_request_error"`, 400},
	} {
		resp, data := do(t, srv, "POST", tc.path, `{"stream":true,"max_tokens":99,"messages":[{"role":"user","content":"`+tc.user+`"}]}`)
		if resp.StatusCode != tc.status || !strings.Contains(string(data), tc.want) {
			t.Errorf("%s %s streamed: %d %s", tc.path, tc.user, resp.StatusCode, data)
		}
		f := openAI
		if tc.path == "/v1/messages" {
			f = anthropic
		}
		if r := exchangeResult(t, srv, f, false, `[{"role":"user","content":"`+tc.user+`"}]`); r.Text == "" {
			t.Errorf("%s %s whole: %+v", tc.path, tc.user, r)
		}
	}
}

// stall sends half a response and then nothing until the client gives
// up; with times=N only the first N identical requests stall.
func TestStall(t *testing.T) {
	srv := httptest.NewServer(New(mustParse(t, "match ^once\nstall times=1\nchunks 4\nsay one two three four\n"), nil))
	defer srv.Close()
	for _, tc := range []struct {
		f      format
		stream bool
	}{{openAI, true}, {anthropic, true}, {openAI, false}, {anthropic, false}} {
		path := "/v1/chat/completions"
		if tc.f == anthropic {
			path = "/v1/messages"
		}
		msgs := fmt.Sprintf(`[{"role":"user","content":"once %d %t"}]`, tc.f, tc.stream)
		ctx, cancel := context.WithCancel(t.Context())
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+path,
			strings.NewReader(fmt.Sprintf(`{"stream":%t,"max_tokens":99,"messages":%s}`, tc.stream, msgs)))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		first := make([]byte, 16)
		if _, err := io.ReadFull(resp.Body, first); err != nil {
			t.Fatalf("the start: %v", err)
		}
		// The rest never comes: the response ends only when the client
		// gives up.
		done := make(chan error, 1)
		go func() { _, err := io.ReadAll(resp.Body); done <- err }()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("format %d stream %t: the stalled response ended with %v", tc.f, tc.stream, err)
		}
		resp.Body.Close()
		// The second identical request is answered whole.
		if r := exchangeResult(t, srv, tc.f, tc.stream, msgs); r.Text != "one two three four" {
			t.Errorf("format %d stream %t, after the stall: %+v", tc.f, tc.stream, r)
		}
	}
}

// A request's max_tokens cuts the reply, as a model stops at its limit.
func TestMaxTokens(t *testing.T) {
	srv := httptest.NewServer(New(mustParse(t, "match ^long\nthink abcdefgh\nsay 0123456789abcdefghij\ncall f {}\nmatch ^fixed\nsay short\nusage 7 500\n"), nil))
	defer srv.Close()
	for _, tc := range []struct {
		path, body, text, stop string
		out                    int
	}{
		{"/v1/chat/completions", `"max_tokens":4`, "01234567", "length", 4},
		{"/v1/chat/completions", `"max_tokens":99,"max_completion_tokens":3`, "0123", "length", 3},
		{"/v1/messages", `"max_tokens":5`, "0123456789ab", "max_tokens", 5},
		{"/v1/messages", `"max_tokens":1000`, "0123456789abcdefghij", "tool_use", 7},
	} {
		for _, stream := range []bool{false, true} {
			f := openAI
			if tc.path == "/v1/messages" {
				f = anthropic
			}
			body := fmt.Sprintf(`{"stream":%t,"stream_options":{"include_usage":true},%s,"messages":[{"role":"user","content":"long"}]}`, stream, tc.body)
			resp, data := do(t, srv, "POST", tc.path, body)
			var r result
			switch {
			case f == openAI && stream:
				r = readOpenAIStream(t, data)
			case f == openAI:
				r = readOpenAIJSON(t, data)
			case stream:
				r = readAnthropicStream(t, data)
			default:
				r = readAnthropicJSON(t, data)
			}
			if resp.StatusCode != 200 || r.Text != tc.text || r.Stop != tc.stop || r.Out != tc.out {
				t.Errorf("%s %s stream %t: %d %+v", tc.path, tc.body, stream, resp.StatusCode, r)
			}
		}
	}
	// usage's output count is capped as well.
	_, data := do(t, srv, "POST", "/v1/chat/completions", `{"max_tokens":50,"messages":[{"role":"user","content":"fixed"}]}`)
	if r := readOpenAIJSON(t, data); r.Out != 50 || r.Text != "short" || r.Stop != "length" {
		t.Errorf("fixed usage: %+v", r)
	}
}

func TestStatsAndRoutes(t *testing.T) {
	s := New(mustParse(t, "match boom\nfail 500\n"), nil)
	srv := httptest.NewServer(s)
	defer srv.Close()
	do(t, srv, "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`)
	do(t, srv, "POST", "/chat/completions", `{"messages":[{"role":"user","content":"boom"}]}`)
	do(t, srv, "POST", "/v1/messages", `{"messages":[{"role":"user","content":"x"}]}`)
	do(t, srv, "POST", "/messages", `{}`)
	do(t, srv, "GET", "/v1/messages", "")
	do(t, srv, "GET", "/v1/models", "")
	do(t, srv, "GET", "/models", "")
	do(t, srv, "HEAD", "/healthz", "")
	do(t, srv, "GET", "/nope", "")
	want := Stats{ChatCompletions: 2, Messages: 3, Models: 2, Healthz: 1, NotFound: 1, Failures: 1, BadRequests: 2}
	if diff := cmp.Diff(want, s.Stats()); diff != "" {
		t.Fatalf("stats (-want +got):\n%s", diff)
	}
}

func TestModelName(t *testing.T) {
	srv := httptest.NewServer(New(nil, nil))
	defer srv.Close()
	for _, tc := range []struct{ body, want string }{
		{`{"model":"my-model","messages":[{"role":"user","content":"x"}]}`, `"model":"my-model"`},
		{`{"messages":[{"role":"user","content":"x"}]}`, `"model":"fake"`},
	} {
		_, data := do(t, srv, "POST", "/v1/messages", tc.body)
		if !bytes.Contains(data, []byte(tc.want)) {
			t.Errorf("body %s lacks %s", data, tc.want)
		}
	}
}

func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := New(mustParse(t, "match wait\ndelay 1h\nsay late\n"), nil)
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ctx, ln) }()

	url := "http://" + ln.Addr().String()
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok\n" {
		t.Fatalf("healthz: %d %q", resp.StatusCode, body)
	}
	// A request waiting in a delay does not hold up the shutdown.
	waiting := make(chan struct{})
	go func() {
		defer close(waiting)
		resp, err := http.Post(url+"/v1/messages", "application/json",
			strings.NewReader(`{"messages":[{"role":"user","content":"wait"}]}`))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	for s.Stats().Messages == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	<-waiting
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Fatal("server still answers after shutdown")
	}
}

func TestServeListenerError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if err := New(nil, nil).Serve(context.Background(), ln); err == nil {
		t.Fatal("Serve on a closed listener returned nil")
	}
}

func TestPieces(t *testing.T) {
	tests := []struct {
		s    string
		k    int
		want []string
	}{
		{"", 3, nil},
		{"abcdef", 3, []string{"ab", "cd", "ef"}},
		{"abcdefg", 3, []string{"ab", "cd", "efg"}},
		{"ab", 5, []string{"a", "b"}},
		{"héllo", 5, []string{"h", "é", "l", "lo"}},
		{"日本語", 2, []string{"日本", "語"}},
		{"abc", 1, []string{"abc"}},
	}
	for _, tt := range tests {
		p := pieces{s: []byte(tt.s), k: tt.k}
		var got []string
		for piece, ok := p.next(); ok; piece, ok = p.next() {
			got = append(got, string(piece))
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("pieces(%q, %d) (-want +got):\n%s", tt.s, tt.k, diff)
		}
	}
}

// FuzzRequest sends arbitrary bodies to both APIs: the server answers 200
// or 400 with a well-formed body, and never panics.
func FuzzRequest(f *testing.F) {
	a := readArchive(f, filepath.Join("testdata", "http.txtar"))
	for _, file := range a.Files {
		if strings.HasSuffix(file.Name, ".request") {
			_, body, _ := strings.Cut(file.Data, "\n")
			f.Add(body)
		}
	}
	s := New(mustParse(f, "match (?i)weather\nthink t\ncall f {\"q\": \"{{last_user}}\", \"n\": {{n_messages}}, \"i\": {{images}}}\n---\nsay {{tool_result}} {{images}}\n"), nil)
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
			w := httptest.NewRecorder()
			s.ServeHTTP(w, httptest.NewRequest("POST", path, strings.NewReader(body)))
			switch ct := w.Header().Get("Content-Type"); {
			case w.Code == 400 && ct == "application/json":
			case w.Code == 200 && ct == "application/json":
				if !json.Valid(w.Body.Bytes()) {
					t.Fatalf("invalid JSON body %s", w.Body)
				}
			case w.Code == 200 && ct == "text/event-stream":
				for _, line := range strings.Split(w.Body.String(), "\n") {
					if d, ok := strings.CutPrefix(line, "data: "); ok && d != "[DONE]" && !json.Valid([]byte(d)) {
						t.Fatalf("invalid JSON in data line %s", d)
					}
				}
			default:
				t.Fatalf("status %d, Content-Type %q", w.Code, ct)
			}
		}
	})
}

// {{system}} is the request's system prompt in both formats.
func TestSystemVariable(t *testing.T) {
	srv := httptest.NewServer(New(mustParse(t, "say [{{system}}]\n"), nil))
	defer srv.Close()
	for _, tc := range []struct {
		name, path, body, want string
	}{
		{"openai", "/v1/chat/completions", `{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]}`, "[be brief]"},
		{"openai, parts", "/v1/chat/completions", `{"model":"m","messages":[{"role":"developer","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"user","content":"hi"}]}`, "[a\nb]"},
		{"openai, none", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "[]"},
		{"anthropic", "/v1/messages", `{"model":"m","max_tokens":9,"system":"be brief","messages":[{"role":"user","content":"hi"}]}`, "[be brief]"},
		{"anthropic, blocks", "/v1/messages", `{"model":"m","max_tokens":9,"system":[{"type":"text","text":"a"}],"messages":[{"role":"user","content":"hi"}]}`, "[a]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, data := do(t, srv, "POST", tc.path, tc.body)
			if resp.StatusCode != 200 {
				t.Fatalf("status %s: %s", resp.Status, data)
			}
			var got result
			if strings.HasPrefix(tc.path, "/v1/messages") {
				got = readAnthropicJSON(t, data)
			} else {
				got = readOpenAIJSON(t, data)
			}
			if got.Text != tc.want {
				t.Errorf("text %q, want %q", got.Text, tc.want)
			}
		})
	}
}
