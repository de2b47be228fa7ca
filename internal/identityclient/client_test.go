package identityclient_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentd/approval"
	"agentd/internal/event"
	"agentd/internal/identityclient"
	"agentd/internal/identityserver"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
)

const serverURL = "http://127.0.0.1:7400/mcp"

// keys signs with one fixed key for every agent.
type keys struct{ priv ed25519.PrivateKey }

func (k keys) Approve(_ string, m approval.Message, at time.Time, aud, tool string, args any) (*approval.Approval, error) {
	return approval.Sign(k.priv, m, at, aud, tool, args)
}

func (k keys) pub() string { return approval.EncodePublicKey(k.priv.Public().(ed25519.PublicKey)) }

// world is a node's store with ended turns, and an identity server on
// its own store that the client reaches in memory while up is set.
type world struct {
	t    *testing.T
	node *sqlite.Store
	ids  *sqlite.Store
	srv  *identityserver.Server
	// up: the server answers; down, dials and calls fail.
	keys  keys
	up    atomic.Bool
	dials atomic.Int64
	sess  store.Session
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := t.Context()
	w := &world{t: t, keys: keys{ed25519.NewKeyFromSeed(make([]byte, 32))}}
	var err error
	if w.node, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "node.db"), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.node.Close() })
	if w.ids, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), "ids.db"), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.ids.Close() })
	if w.srv, err = identityserver.New(w.ids, &identityserver.Options{Audience: []string{serverURL}}); err != nil {
		t.Fatal(err)
	}
	if w.sess, _, err = w.node.Session(ctx, "a", "main"); err != nil {
		t.Fatal(err)
	}
	w.up.Store(true)
	return w
}

// turn runs (records) one ended turn of agent a and returns its id.
func (w *world) turn(text string) int64 {
	w.t.Helper()
	it, _, err := w.node.Enqueue(w.t.Context(), store.InboxItem{Session: w.sess.ID, Kind: event.Input, Text: text})
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.node.Commit(w.t.Context(), &store.Batch{Session: w.sess.ID, Done: []int64{it.ID}}); err != nil {
		w.t.Fatal(err)
	}
	return it.ID
}

func (w *world) dial(ctx context.Context) (identityclient.Session, error) {
	w.dials.Add(1)
	if !w.up.Load() {
		return nil, errors.New("connection refused")
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := w.srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return nil, err
	}
	return &session{cs, ss, w}, nil
}

// session is an in-memory connection that fails every call while the
// server is down, as one whose server went away.
type session struct {
	*mcp.ClientSession
	ss *mcp.ServerSession
	w  *world
}

func (s *session) CallTool(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	if !s.w.up.Load() {
		return nil, errors.New("connection reset")
	}
	return s.ClientSession.CallTool(ctx, p)
}

func (s *session) Close() error { _ = s.ss.Close(); return s.ClientSession.Close() }

func (w *world) client(lead identityclient.Leader) *identityclient.Client {
	w.t.Helper()
	c, err := identityclient.New(&identityclient.Options{
		URL: serverURL, Outbox: w.node, Keys: w.keys, Lead: lead, Dial: w.dial,
		Agents: []identityclient.Agent{{ID: "a", Character: identityserver.Character{Name: "a", Pubkey: w.keys.pub()}}},
		Lifecycle: func(_ context.Context, agentID string, turn int64) (json.RawMessage, error) {
			return json.RawMessage(fmt.Sprintf(`{"messageId":"%d","daemonName":%q}`, turn, agentID)), nil
		},
		Backoff: func(int) time.Duration { return time.Millisecond },
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

// run runs c until the test ends.
func (w *world) run(c *identityclient.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx) })
	w.t.Cleanup(func() { cancel(); wg.Wait() })
}

// logged waits until the server's log holds n lifecycles and returns
// their message ids in seq order.
func (w *world) logged(n int) []string {
	w.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ls, err := w.ids.IdentityLogs(w.t.Context(), w.keys.pub(), 0, 0)
		if err != nil {
			w.t.Fatal(err)
		}
		if len(ls) >= n || time.Now().After(deadline) {
			var ids []string
			for _, l := range ls {
				ids = append(ids, l.MessageID)
			}
			return ids
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ids(turns ...int64) []string {
	var out []string
	for _, t := range turns {
		out = append(out, fmt.Sprint(t))
	}
	return out
}

// TestDeliverInOrderAfterOutage: the agent is registered; turns that end
// while the server is down stay queued and arrive in order once it is
// back, each once.
func TestDeliverInOrderAfterOutage(t *testing.T) {
	w := newWorld(t)
	c := w.client(nil)
	w.run(c)
	t1 := w.turn("one")
	c.Ended("a", t1)
	if got := w.logged(1); !cmp.Equal(got, ids(t1)) {
		t.Fatalf("logged %v; want %v", got, ids(t1))
	}
	if ch, err := w.ids.Character(t.Context(), w.keys.pub()); err != nil || !strings.Contains(string(ch.File), `"name":"a"`) {
		t.Errorf("character = %+v, %v; want a registered", ch, err)
	}
	w.up.Store(false)
	c.Ended("b", 999) // not an agent of this server: ignored
	var more []int64
	for i := range 3 {
		tn := w.turn(fmt.Sprint("down ", i))
		more = append(more, tn)
		c.Ended("a", tn)
	}
	// While the server is down they wait in the queue, tried again and
	// again.
	waitFor(t, "the three queued with a failed try", func() bool {
		due, err := w.node.DueIdentityLogs(t.Context(), serverURL, w.keys.pub(), 0)
		return err == nil && len(due) == 3 && due[0].Tries > 0 && due[0].Turn == more[0]
	})
	if got := w.logged(1); len(got) != 1 {
		t.Fatalf("logged %v while down; want the first alone", got)
	}
	w.up.Store(true)
	c.Ended("a", more[2]) // again: queued once
	want := ids(append([]int64{t1}, more...)...)
	if got := w.logged(4); !cmp.Equal(got, want) {
		t.Errorf("logged %v; want %v", got, want)
	}
	waitFor(t, "nothing due after delivery", func() bool {
		due, err := w.node.DueIdentityLogs(t.Context(), serverURL, w.keys.pub(), 0)
		return err == nil && len(due) == 0
	})
}

// waitFor polls cond until it holds, failing the test after a while.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: gave up", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSweepQueuesMissedTurns: turns that ended after the first one queued
// but never reached the queue (a crash between the turn's end and its
// queueing) are queued and delivered at the next start; earlier turns
// are not.
func TestSweepQueuesMissedTurns(t *testing.T) {
	w := newWorld(t)
	before := w.turn("before the identity server")
	first := w.turn("first")
	if _, _, err := w.node.QueueIdentityLog(t.Context(), store.IdentityOutboxItem{Server: serverURL, Pubkey: w.keys.pub(), Agent: "a", Turn: first,
		Lifecycle: json.RawMessage(fmt.Sprintf(`{"messageId":"%d"}`, first))}); err != nil {
		t.Fatal(err)
	}
	missed := []int64{w.turn("missed 1"), w.turn("missed 2")}
	w.run(w.client(nil))
	want := ids(first, missed[0], missed[1])
	if got := w.logged(3); !cmp.Equal(got, want) {
		t.Errorf("logged %v; want %v (not %d)", got, want, before)
	}
}

// notLeader leads nothing: another node delivers.
type notLeader struct{ asked atomic.Int64 }

func (l *notLeader) TryLead(context.Context, string) (store.Lead, error) {
	l.asked.Add(1)
	return nil, nil
}

// TestFollowerQueuesOnly: a node that does not lead the server's delivery
// queues its turns and never connects.
func TestFollowerQueuesOnly(t *testing.T) {
	w := newWorld(t)
	lead := &notLeader{}
	c := w.client(lead)
	w.run(c)
	tn := w.turn("one")
	c.Ended("a", tn)
	waitFor(t, "the turn queued", func() bool {
		due, err := w.node.DueIdentityLogs(t.Context(), serverURL, w.keys.pub(), 0)
		return err == nil && len(due) == 1 && due[0].Turn == tn
	})
	if lead.asked.Load() == 0 || w.dials.Load() != 0 {
		t.Errorf("asked to lead %d times, dialed %d; want asked, never dialed", lead.asked.Load(), w.dials.Load())
	}
}
