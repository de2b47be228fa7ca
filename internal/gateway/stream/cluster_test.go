package stream_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"agentd/internal/event"
	"agentd/internal/gateway/stream"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/store/postgres"
	"agentd/internal/store/postgres/pgtest"
	"agentd/internal/testkit"
)

// clusterNode is an agentd node on a PostgreSQL database other nodes
// share: a runtime on the store, its bus fed by the store's listener, and
// the stream served on it.
type clusterNode struct {
	st  *postgres.Store
	kit *testkit.Kit
	url string
}

func newClusterNode(t *testing.T, db string) *clusterNode {
	t.Helper()
	st, err := postgres.Open(t.Context(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := testkit.New(t, &testkit.Options{Agents: anyAgent{}, Wrap: func(store.Store) store.Store { return st }})
	if _, err := k.Runtime.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.Listen(ctx, k.Bus, nil) }()
	h := stream.New(stream.Join(k.Runtime, st), nil)
	srv := httptest.NewServer(h)
	t.Cleanup(func() { // before the kit's cleanup: the runtime stops after
		h.Close()
		srv.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Listen: %v", err)
		}
		st.Close()
	})
	waitFor(t, "the listener to connect", st.Listening)
	return &clusterNode{st: st, kit: k, url: "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/stream"}
}

// send runs a turn on the node and returns its end.
func (n *clusterNode) send(t *testing.T, addr, text string) event.TurnEndData {
	t.Helper()
	_, end, err := n.kit.Runtime.Send(t.Context(), runtime.Input{Session: addr, Text: text, Source: "api"})
	if err != nil {
		t.Fatal(err)
	}
	return end
}

// readTurn reads c's event frames of sub until a stored turn_end, and
// returns the stored ones' sequence numbers and kinds.
func readTurn(t *testing.T, c *client, sub string) (seqs []int64, kinds []string) {
	t.Helper()
	for {
		f := c.next()
		if f.Type != "event" || f.Sub != sub || f.Seq == 0 {
			continue
		}
		seqs, kinds = append(seqs, f.Seq), append(kinds, f.Kind)
		if f.Kind == "turn-end" {
			return seqs, kinds
		}
	}
}

// A WebSocket client of node A sees, live, a turn that runs on node B
// (through A's listener), each stored event once and in order; it then
// switches to node B while B runs another turn, and resumes from the last
// sequence number it saw on A: it gets the rest, none twice.
func TestStreamFollowsSessionAcrossNodes(t *testing.T) {
	db := pgtest.NewDB(t)
	a, b := newClusterNode(t, db), newClusterNode(t, db)
	const addr = "assistant/chat:alice"

	onA := (&env{url: a.url}).dial(t, "")
	onA.send(map[string]any{"type": "subscribe", "id": "s1", "session": addr})
	if f := onA.next(); f.Type != "subscribed" {
		t.Fatalf("first frame: %+v", f)
	}
	b.send(t, addr, "hello from B")
	seqs, kinds := readTurn(t, onA, "s1")
	if kinds[0] != "input" || kinds[len(kinds)-1] != "turn-end" {
		t.Errorf("node A's client saw kinds %v, want an input first and a turn end last", kinds)
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("node A's client saw sequence numbers %v, want 1, 2, … in order", seqs)
		}
	}
	last := seqs[len(seqs)-1]
	onA.ws.CloseNow()

	b.send(t, addr, "while away")
	onB := (&env{url: b.url}).dial(t, "")
	onB.send(map[string]any{"type": "subscribe", "id": "s2", "session": addr, "after": last})
	more, _ := readTurn(t, onB, "s2")
	for i, s := range more {
		if s != last+int64(i+1) {
			t.Fatalf("after switching with after=%d, the client saw %v, want %d, %d, … in order", last, more, last+1, last+2)
		}
	}
}
