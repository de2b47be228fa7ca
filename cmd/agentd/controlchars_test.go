package main

// Control characters, U+2028/U+2029 and invalid UTF-8 in a reply reach
// every client intact: agentd send and chat, in process and through the
// daemon, the API's ?stream=true, the WebSocket event stream, the
// OpenAI-compatible API and the MCP facade's ask_* tools.

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentd/internal/event"
	"agentd/internal/gateway"
)

// awkward is every character that needs escaping in JSON, DEL, the line
// and paragraph separators and invalid UTF-8, between words; argv cannot
// hold NUL, so it is sent only where JSON carries it.
func awkward(nul bool) string {
	var b strings.Builder
	b.WriteString("esc \x1b[A")
	for c := byte(1); c < 0x20; c++ {
		b.WriteString(" c")
		b.WriteByte(c)
	}
	if nul {
		b.WriteString(" nul\x00")
	}
	b.WriteString(" del\x7f ls\u2028 ps\u2029 bad\xff\xfe cut\xe2\x80 end")
	return b.String()
}

// decoded is s as it reads after a trip through JSON: each byte that is
// not valid UTF-8 becomes U+FFFD.
func decoded(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out string
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The offline echo model answers with the message, so the reply holds
// whatever the user sent.
func TestControlCharactersSend(t *testing.T) {
	t.Parallel()
	dir := dataDir(t, nil)
	msg := awkward(false)
	want := decoded(t, msg)
	check := func(how string) {
		t.Helper()
		r := run(t, dir, "send", "assistant", msg)
		if r.code != 0 || r.stdout != want+"\n" {
			t.Errorf("send %s: exit %d, stdout %q, want %q\n%s", how, r.code, r.stdout, want+"\n", r.stderr)
		}
		r = run(t, dir, "send", "--json", "assistant", msg)
		if r.code != 0 {
			t.Fatalf("send --json %s: exit %d\n%s", how, r.code, r.stderr)
		}
		_, end := jsonEvents(t, r.stdout)
		if end == nil || end.Reply != want {
			t.Errorf("send --json %s: end %+v", how, end)
		}
	}
	check("in process")
	serve(t, dir)
	check("through the daemon")
}

// chat streams the reply's deltas as they come; here a model says the
// awkward text, NUL included (a script line cannot hold a line break).
func TestControlCharactersChat(t *testing.T) {
	t.Parallel()
	say := strings.NewReplacer("\n", "", "\r", "").Replace(awkward(true))
	addr := fake(t, "match *\nsay "+say+"\n")
	dir := dataDir(t, map[string]string{"agents/tester.yaml": openaiAgent(addr, "")})
	want := decoded(t, say)
	check := func(how string) {
		t.Helper()
		r := runInput(t, dir, nil, "hello\n/quit\n", "chat", "tester")
		if r.code != 0 || !strings.Contains(r.stdout, "agent> "+want+"\n") || strings.Contains(r.stdout, "[error") {
			t.Errorf("chat %s: exit %d, stdout %q, want the reply %q\n%s", how, r.code, r.stdout, want, r.stderr)
		}
	}
	check("in process")
	serve(t, dir)
	check("through the daemon")
}

// Through agentd serve on TCP: POST ?stream=true, the WebSocket, the
// OpenAI-compatible API and the MCP facade, each with NUL too.
func TestControlCharactersGateway(t *testing.T) {
	t.Parallel()
	dir := dataDir(t, nil)
	_, base := serveListen(t, dir, "127.0.0.1:0")
	tok := strings.TrimSpace(run(t, dir, "token").stdout)
	auth := http.Header{"Authorization": {"Bearer " + tok}}
	msg := awkward(true)
	want := decoded(t, msg)
	body, _ := json.Marshal(map[string]string{"text": msg})

	t.Run("stream=true", func(t *testing.T) {
		r := request(t, "POST", base+"/v1/sessions/assistant/lines/messages?stream=true", string(body), "Authorization: Bearer "+tok)
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		var deltas strings.Builder
		var reply string
		sc := bufio.NewScanner(strings.NewReader(r.body))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var line gateway.StreamLine
			if !json.Valid(sc.Bytes()) || json.Unmarshal(sc.Bytes(), &line) != nil {
				t.Fatalf("not a JSON line: %q", sc.Text())
			}
			if line.Error != nil {
				t.Fatalf("error line: %s", sc.Text())
			}
			if ev := line.Event; ev != nil && ev.Kind == event.TextDelta {
				var d event.DeltaData
				if err := ev.Decode(&d); err != nil {
					t.Fatalf("text delta %s: %v", ev.Data, err)
				}
				deltas.WriteString(d.Text)
			}
			if line.End != nil {
				reply = line.End.Reply
			}
		}
		if deltas.String() != want || reply != want {
			t.Errorf("deltas %q, reply %q; want %q", deltas.String(), reply, want)
		}
	})

	t.Run("websocket", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/v1/stream?session=assistant/ws", &websocket.DialOptions{HTTPHeader: auth})
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		ws.SetReadLimit(1 << 20)
		frame := func() map[string]json.RawMessage {
			_, b, err := ws.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var f map[string]json.RawMessage
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatalf("frame %q: %v", b, err)
			}
			return f
		}
		if f := frame(); string(f["type"]) != `"subscribed"` {
			t.Fatalf("first frame %v", f)
		}
		if r := request(t, "POST", base+"/v1/sessions/assistant/ws/messages", string(body), "Authorization: Bearer "+tok); r.status != 202 && r.status != 200 {
			t.Fatalf("post: %d %s", r.status, r.body)
		}
		var deltas strings.Builder
		for {
			f := frame()
			kind := string(f["kind"])
			if kind == `"text-delta"` {
				var d event.DeltaData
				if err := json.Unmarshal(f["data"], &d); err != nil || string(f["data"]) == "null" {
					t.Fatalf("text-delta data %s: %v", f["data"], err)
				}
				deltas.WriteString(d.Text)
			}
			if kind == `"turn-end"` {
				var end event.TurnEndData
				json.Unmarshal(f["data"], &end)
				if end.Reply != want {
					t.Errorf("turn-end reply %q, want %q", end.Reply, want)
				}
				break
			}
		}
		if deltas.String() != want {
			t.Errorf("deltas %q, want %q", deltas.String(), want)
		}
	})

	t.Run("chat completions", func(t *testing.T) {
		req, _ := json.Marshal(map[string]any{"model": "assistant", "stream": true, "user": "cc",
			"messages": []map[string]string{{"role": "user", "content": msg}}})
		r := request(t, "POST", base+"/v1/chat/completions", string(req), "Authorization: Bearer "+tok, "Content-Type: application/json")
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		var content strings.Builder
		for _, line := range strings.Split(r.body, "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var chunk struct {
				Choices []struct {
					Delta struct{ Content string }
				}
			}
			if err := json.Unmarshal([]byte(data), &chunk); err != nil {
				t.Fatalf("chunk %q: %v", data, err)
			}
			for _, c := range chunk.Choices {
				content.WriteString(c.Delta.Content)
			}
		}
		if content.String() != want {
			t.Errorf("content %q, want %q", content.String(), want)
		}
	})

	t.Run("ask", func(t *testing.T) {
		hc := &http.Client{Transport: bearer{tok}}
		c := mcp.NewClient(&mcp.Implementation{Name: "agentd-test", Version: "1"}, nil)
		cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "ask_assistant", Arguments: map[string]any{"message": msg}})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				got += tc.Text
			}
		}
		if res.IsError || got != want {
			t.Errorf("ask_assistant: %q (isError %v), want %q", got, res.IsError, want)
		}
	})
}
