package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A change of working memory reaches the event stream as it happens, as
// every other logged event does: through agentd serve, set and delete a
// key over the API and see both working_memory events on the WebSocket.
func TestWorkingMemoryLive(t *testing.T) {
	dir := dataDir(t, nil)
	_, base := serveListen(t, dir, "127.0.0.1:0")
	tok := strings.TrimSpace(run(t, dir, "token").stdout)
	auth := "Authorization: Bearer " + tok
	if r := request(t, "POST", base+"/v1/sessions/assistant/wm/messages?wait=true", `{"text":"hello"}`, auth); r.status != 200 {
		t.Fatalf("message: %d %s", r.status, r.body)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/v1/stream?session=assistant/wm",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	next := func() map[string]json.RawMessage {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("no frame: %v", err)
		}
		var f map[string]json.RawMessage
		json.Unmarshal(b, &f)
		return f
	}
	if f := next(); string(f["type"]) != `"subscribed"` {
		t.Fatalf("first frame %v", f)
	}
	for _, step := range []struct{ method, body, want string }{
		{"PUT", `{"city":"Lisbon"}`, `"value":{"city":"Lisbon"}`},
		{"DELETE", "", `"deleted":true`},
	} {
		if r := request(t, step.method, base+"/v1/sessions/assistant/wm/working/trip", step.body, auth); r.status/100 != 2 {
			t.Fatalf("%s working memory: %d %s", step.method, r.status, r.body)
		}
		for {
			f := next()
			if string(f["kind"]) == `"working-memory"` { // the stream writes kinds with dashes
				if !strings.Contains(string(f["data"]), step.want) {
					t.Errorf("%s: working_memory %s, want %s", step.method, f["data"], step.want)
				}
				break
			}
		}
	}
}
