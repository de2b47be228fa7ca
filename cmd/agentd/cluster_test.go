package main

// Two agentd serve nodes on one PostgreSQL database, through the binary.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/jackc/pgx/v5"

	"agentd/internal/app"
	"agentd/internal/event"
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

// leaseHolder waits until a live node holds session key's lease with an
// input pending and returns that node's id.
func leaseHolder(t *testing.T, db, key string) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		var id string
		err := conn.QueryRow(t.Context(), `SELECT l.node_id FROM agentd_leases l JOIN sessions s ON s.id = l.session_id
			WHERE s.key = $1 AND l.expires_at > now()
			AND EXISTS (SELECT 1 FROM inbox i WHERE i.session_id = s.id AND i.state = 'pending')`, key).Scan(&id)
		if err == nil {
			return id
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no node took session %s's lease", key)
	return ""
}

// A turn that runs on one of two agentd serve nodes is cancelled with
// agentd cancel through the other, and its sender (agentd send, waiting
// through the daemon) learns it ended cancelled. Writes outside turns
// through the other node (close, working memory) are refused as busy
// while the turn runs and go through after it.
func TestCancelAcrossNodesThroughTheDaemon(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	addr := fake(t, "match ^slow\ndelay 10m\nsay too late\n\nmatch ^quick\nsay quick reply\n")
	files := map[string]string{"agents/a.yaml": openaiAgent(addr, "")}
	nodes := []*clusterNode{{dir: dataDir(t, files)}, {dir: dataDir(t, files)}}
	for _, n := range nodes {
		pgDirs.Store(n.dir, db)
		n.start(t)
	}
	if r := run(t, nodes[1].dir, "cancel", "a/s"); r.code == 0 || !strings.Contains(r.stderr, "no turn running") {
		t.Fatalf("agentd cancel with no turn: %+v", r)
	}
	sent := make(chan result, 1)
	go func() { sent <- run(t, nodes[0].dir, "send", "--json", "a", "--session", "s", "slow") }()
	holder := leaseHolder(t, db, "s")
	runner, other := nodes[0], nodes[1]
	if holder == other.id {
		runner, other = other, runner
	}
	// Writes outside turns through the other node wait for the session's
	// lease, and are refused as busy while the turn runs.
	if r := run(t, other.dir, "close", "a/s"); r.code == 0 || !strings.Contains(r.stderr, "busy") {
		t.Fatalf("agentd close through the node not running the turn: %+v", r)
	}
	if code := putWorking(t, other.dir, "a/s", "plan"); code != http.StatusConflict {
		t.Fatalf("working memory set through the node not running the turn: %d, want 409", code)
	}
	if r := run(t, other.dir, "cancel", "a/s"); r.code != 0 {
		t.Fatalf("agentd cancel through the node not running the turn: %+v", r)
	}
	r := <-sent
	if _, end := jsonEvents(t, r.stdout); end == nil || end.Status != event.StatusCancelled {
		t.Fatalf("the slow turn ended %+v, want cancelled: %+v", end, r)
	}
	// Once it has ended they go through, whichever node answers.
	if code := putWorking(t, other.dir, "a/s", "plan"); code != http.StatusOK && code != http.StatusNoContent {
		t.Fatalf("working memory set after the turn: %d", code)
	}
	for _, cmd := range []string{"close", "reopen"} {
		if r := run(t, other.dir, cmd, "a/s"); r.code != 0 {
			t.Fatalf("agentd %s after the turn: %+v", cmd, r)
		}
	}
	// The next turn runs wherever the lease goes; a sender waiting on
	// either node learns its end.
	for _, n := range []*clusterNode{other, runner} {
		r := run(t, n.dir, "send", "--json", "a", "--session", "s", "quick")
		if _, end := jsonEvents(t, r.stdout); r.code != 0 || end == nil || end.Reply != "quick reply" {
			t.Fatalf("agentd send through a node: %+v", r)
		}
	}
}

// putWorking sets a working memory key of a session through a daemon's
// API and returns the answer's status.
func putWorking(t *testing.T, dir, addr, name string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, "http://agentd/v1/sessions/"+addr+"/working/"+name, strings.NewReader(`"ship it"`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := unixHTTP(dir).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
