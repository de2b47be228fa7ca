package main

// Two agentd serve nodes on one PostgreSQL database, through the binary.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"

	"agentd/internal/app"
	"agentd/internal/store/postgres/pgtest"
)

// streamFrame is a frame of GET /v1/stream, as a client reads it.
type streamFrame struct {
	Type string `json:"type"`
	Seq  int64  `json:"seq"`
	Kind string `json:"kind"`
}

// followTurn reads ws until a stored turn end and returns the stored
// events' sequence numbers.
func followTurn(t *testing.T, ws *websocket.Conn) []int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var seqs []int64
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("stream: %v (after %v)", err, seqs)
		}
		var f streamFrame
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("frame %s: %v", b, err)
		}
		if f.Type != "event" || f.Seq == 0 {
			continue
		}
		seqs = append(seqs, f.Seq)
		if f.Kind == "turn-end" {
			return seqs
		}
	}
}

// dialStream opens GET /v1/stream on a daemon's socket.
func dialStream(t *testing.T, dir, query string) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.Dial(t.Context(), "ws://agentd/v1/stream?"+query, &websocket.DialOptions{HTTPClient: unixHTTP(dir)})
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(-1)
	t.Cleanup(func() { ws.CloseNow() })
	return ws
}

// consecutive checks that seqs run from first on, one by one.
func consecutive(t *testing.T, what string, seqs []int64, first int64) {
	t.Helper()
	for i, s := range seqs {
		if s != first+int64(i) {
			t.Fatalf("%s: sequence numbers %v, want %d, %d, … in order, each once", what, seqs, first, first+1)
		}
	}
}

// A WebSocket client of node A follows, live, a turn that runs through
// node B, two agentd serve processes on one PostgreSQL database; it then
// switches to node B while B runs another turn and resumes from the last
// sequence number it saw: it gets the rest, none twice.
func TestStreamAcrossNodesThroughTheDaemon(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	addr := fake(t, "")
	env := []string{app.StoreEnv + "=" + db}
	var dirs []string
	for range 2 {
		dir := dataDir(t, nil)
		if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o700); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "agents", "a.yaml"), []byte(openaiAgent(addr, "")), 0o600)
		serve(t, dir, env...)
		dirs = append(dirs, dir)
	}
	a, b := dirs[0], dirs[1]

	onA := dialStream(t, a, "session=a/s")
	if r := runEnv(t, b, env, "send", "a", "--session", "s", "hello from B"); r.code != 0 {
		t.Fatalf("agentd send through node B: %+v", r)
	}
	seen := followTurn(t, onA)
	consecutive(t, "node A's client", seen, 1)
	onA.CloseNow()

	if r := runEnv(t, b, env, "send", "a", "--session", "s", "while away"); r.code != 0 {
		t.Fatalf("agentd send through node B: %+v", r)
	}
	last := seen[len(seen)-1]
	onB := dialStream(t, b, "session=a/s&after="+strconv.FormatInt(last, 10))
	consecutive(t, "the client after switching to node B", followTurn(t, onB), last+1)
}
