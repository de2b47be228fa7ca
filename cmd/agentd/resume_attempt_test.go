package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"agentd/internal/event"
)

// frames subscribes to a session's live events over the WebSocket stream
// and returns a function that reads the next event frame's kind and data.
func frames(t *testing.T, ctx context.Context, base, tok, session string) func() (string, json.RawMessage) {
	t.Helper()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/v1/stream?session="+session,
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	ws.SetReadLimit(1 << 20)
	return func() (string, json.RawMessage) {
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				t.Fatalf("read a frame: %v", err)
			}
			var f struct {
				Type, Kind string
				Data       json.RawMessage
			}
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatalf("frame %s: %v", b, err)
			}
			if f.Type == "event" {
				return f.Kind, f.Data
			}
		}
	}
}

// A turn cut off by a crash while its model streams is resumed at the next
// start; the deltas of each resumed run carry an attempt number never used
// before for that step, so a client knows to drop the text it was shown
// of the cut attempts. Killed twice, mid-stream each time.
func TestResumedDeltasHaveNewAttempt(t *testing.T) {
	t.Parallel()
	words := strings.Repeat("word ", 40)
	addr := fake(t, "match *\nchunks 40\ngap 40ms\nsay "+words+"\n")
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "")})
	tok := strings.TrimSpace(run(t, dir, "token").stdout)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	seen := map[int]bool{} // attempts of step 1 whose deltas were shown
	for crash := 0; crash <= 2; crash++ {
		d, base := serveListen(t, dir, "127.0.0.1:0")
		next := frames(t, ctx, base, tok, "a/k")
		if crash == 0 {
			if r := request(t, "POST", base+"/v1/sessions/a/k/messages", `{"text":"talk"}`, "Authorization: Bearer "+tok); r.status >= 300 {
				t.Fatalf("post: %d %s", r.status, r.body)
			}
		}
		attempt := 0
		for {
			kind, data := next()
			if kind == "turn-end" {
				var end event.TurnEndData
				json.Unmarshal(data, &end)
				if crash < 2 || end.Status != event.StatusDone || end.Reply != strings.TrimSpace(words) {
					t.Fatalf("run %d: the turn ended %+v", crash, end)
				}
				break
			}
			if kind != "text-delta" {
				continue
			}
			var dd event.DeltaData
			if err := json.Unmarshal(data, &dd); err != nil || dd.Step != 1 {
				t.Fatalf("run %d: delta %s", crash, data)
			}
			if attempt == 0 {
				attempt = dd.Attempt
				if seen[attempt] {
					t.Fatalf("run %d: deltas of attempt %d, which an earlier run showed (%v)", crash, attempt, seen)
				}
				seen[attempt] = true
			} else if dd.Attempt != attempt {
				t.Fatalf("run %d: attempt %d after %d", crash, dd.Attempt, attempt)
			}
			if crash < 2 {
				d.kill() // mid-stream: the attempt is cut off
				break
			}
		}
	}
	if len(seen) != 3 {
		t.Errorf("attempts shown: %v", seen)
	}
}
