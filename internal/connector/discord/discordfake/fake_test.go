package discordfake

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"agentd/internal/connector/chatfake"
)

func start(t *testing.T, o *Options) (*Server, string) {
	t.Helper()
	s := New(o)
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.SetBase(srv.URL)
	return s, srv.URL
}

func dial(t *testing.T, s *Server, path string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(t.Context(), s.wsBase()+path+"?v=10&encoding=json", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func read(t *testing.T, c *websocket.Conn) frame {
	t.Helper()
	_, data, err := c.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var f frame
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func write(t *testing.T, c *websocket.Conn, op int, d any) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"op": op, "d": d})
	if err := c.Write(t.Context(), websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

func identify(token string, intents int) map[string]any {
	return map[string]any{"token": token, "intents": intents, "properties": map[string]string{"os": "linux", "browser": "t", "device": "t"}}
}

// The gateway's close codes: a bad token 4004, a privileged intent the app
// lacks 4014, an op before IDENTIFY 4003.
func TestGatewayCloseCodes(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		op   int
		d    any
		code websocket.StatusCode
	}{
		{"bad token", Options{}, opIdentify, identify("nope", 1<<9), 4004},
		{"message content not granted", Options{NoMessageContent: true}, opIdentify, identify("fake-discord-token", 1<<9|1<<15), 4014},
		{"not identified", Options{}, 3, map[string]any{}, 4003},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := start(t, &tc.o)
			c := dial(t, s, "/gateway")
			if f := read(t, c); f.Op != opHello {
				t.Fatalf("first op %d", f.Op)
			}
			write(t, c, tc.op, tc.d)
			_, _, err := c.Read(t.Context())
			if got := websocket.CloseStatus(err); got != tc.code {
				t.Fatalf("close = %d (%v), want %d", got, err, tc.code)
			}
		})
	}
}

// READY, then dispatches numbered from it; a RESUME from an older seq
// replays what came after it, then RESUMED.
func TestGatewayResumeReplays(t *testing.T) {
	s, _ := start(t, nil)
	c := dial(t, s, "/gateway")
	read(t, c)
	write(t, c, opIdentify, identify(s.Token(), 1<<9|1<<12|1<<15))
	ready := read(t, c)
	var rd struct {
		SessionID string `json:"session_id"`
		ResumeURL string `json:"resume_gateway_url"`
	}
	json.Unmarshal(ready.D, &rd)
	if *ready.T != "READY" || *ready.S != 1 || !strings.HasSuffix(rd.ResumeURL, "/resume") {
		t.Fatalf("READY = %+v %s", ready, ready.D)
	}
	s.SendAsUser(UserMessage{Channel: "5", Author: chatfake.User{ID: "7", Name: "A"}, Content: "one"})
	if f := read(t, c); *f.T != "MESSAGE_CREATE" || *f.S != 2 {
		t.Fatalf("dispatch = %+v", f)
	}
	c.CloseNow()
	s.SendAsUser(UserMessage{Channel: "5", Author: chatfake.User{ID: "7"}, Content: "two"})

	c2 := dial(t, s, "/resume")
	read(t, c2)
	write(t, c2, opResume, map[string]any{"token": s.Token(), "session_id": rd.SessionID, "seq": 1})
	var got []string
	for {
		f := read(t, c2)
		var m struct{ Content string }
		json.Unmarshal(f.D, &m)
		got = append(got, *f.T+" "+m.Content)
		if *f.T == "RESUMED" {
			break
		}
	}
	if d := cmp.Diff([]string{"MESSAGE_CREATE one", "MESSAGE_CREATE two", "RESUMED "}, got); d != "" {
		t.Errorf("replay (-want +got):\n%s", d)
	}
}

func rest(t *testing.T, method, url, token, body string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bot "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header, b.Bytes()
}

// REST: the token is checked; a nonce dedups only with enforce_nonce;
// every answer names its bucket; a spent bucket answers 429 with
// retry_after; messages after an id come newest first.
func TestREST(t *testing.T) {
	s, _ := start(t, &Options{BucketLimit: 3})
	s.AddChannel("5", "")
	api := s.APIURL() + "/channels/5/messages"
	if code, _, _ := rest(t, "POST", api, "wrong", `{"content":"x"}`); code != 401 {
		t.Errorf("a wrong token: %d", code)
	}
	var ids []string
	for _, body := range []string{`{"content":"a","nonce":"n1"}`, `{"content":"a","nonce":"n1"}`, `{"content":"b","nonce":"n2","enforce_nonce":true}`} {
		code, h, out := rest(t, "POST", api, s.Token(), body)
		if code != 200 || h.Get("X-RateLimit-Bucket") == "" {
			t.Fatalf("create: %d %s %v", code, out, h)
		}
		var m struct{ ID string }
		json.Unmarshal(out, &m)
		ids = append(ids, m.ID)
	}
	if ids[0] == ids[1] {
		t.Error("a nonce without enforce_nonce deduped")
	}
	code, h, out := rest(t, "POST", api, s.Token(), `{"content":"b","nonce":"n2","enforce_nonce":true}`)
	if code != 429 || h.Get("X-RateLimit-Scope") != "user" || !strings.Contains(string(out), "retry_after") {
		t.Errorf("the 4th create in a bucket of 3: %d %s", code, out)
	}
	code, _, out = rest(t, "GET", api+"?after="+ids[0]+"&limit=10", s.Token(), "")
	var list []struct{ ID string }
	json.Unmarshal(out, &list)
	if code != 200 || len(list) != 2 || list[0].ID != ids[2] || list[1].ID != ids[1] {
		t.Errorf("after: %d %s, want %s then %s", code, out, ids[2], ids[1])
	}
}
