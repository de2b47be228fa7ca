package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"agentd/internal/event"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/store/postgres"
	"agentd/internal/store/postgres/pgtest"
	"agentd/internal/testkit"
)

// node is one agentd node of a cluster test: a runtime on its own
// PostgreSQL store (its node in the registry) of a shared database, with
// the store's listener publishing the other nodes' events on its bus.
type node struct {
	st *postgres.Store
	rt *runtime.Runtime
	m  *testkit.Model
	// reads counts the runtime's reads of an inbox item's state, leases
	// its calls to take, keep or give up a lease and to read a session
	// and its pending inputs as it takes one.
	reads, leases *atomic.Int32
	// enqueued, when set, is called with each input the node's store
	// has just inserted, before the runtime queues it.
	enqueued *atomic.Pointer[func(store.InboxItem)]
}

// Its lease grace is long: what ends one early is tested, not waited for.
// tune, if given, changes its runtime's options after those.
func newNode(t *testing.T, db string, tune ...func(*runtime.Options)) *node {
	t.Helper()
	st, err := postgres.Open(t.Context(), db, &postgres.Options{LeaseTTL: 400 * time.Millisecond, Heartbeat: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	n := &node{st: st, m: testkit.NewModel(), reads: new(atomic.Int32), leases: new(atomic.Int32),
		enqueued: new(atomic.Pointer[func(store.InboxItem)])}
	k := testkit.New(t, &testkit.Options{Agents: testAgents(), Model: n.m,
		Wrap: func(store.Store) store.Store { return counted{st, n.reads, n.leases, n.enqueued} },
		Runtime: func(o *runtime.Options) {
			o.ClaimEvery, o.OutsideWait, o.LeaseGrace = 50*time.Millisecond, 200*time.Millisecond, time.Minute
			for _, f := range tune {
				f(o)
			}
		}})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := st.Listen(ctx, k.Runtime.Bus(), &postgres.ListenOptions{
			Cancel: k.Runtime.CancelRunning, Inbox: k.Runtime.EndGrace, Release: k.Runtime.EndGrace}); err != nil {
			t.Errorf("listen: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait(); k.Close(); st.Close() })
	for !st.Listening() { // what other nodes commit from now on is seen
		time.Sleep(time.Millisecond)
	}
	n.rt = k.Runtime
	if _, err := n.rt.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return n
}

// counted is a node's store counting the reads of an inbox item (n) and
// the calls about leases (l).
type counted struct {
	*postgres.Store
	n, l *atomic.Int32
	e    *atomic.Pointer[func(store.InboxItem)]
}

func (s counted) Enqueue(ctx context.Context, item store.InboxItem) (store.InboxItem, bool, error) {
	it, dup, err := s.Store.Enqueue(ctx, item)
	if f := s.e.Load(); f != nil && err == nil {
		(*f)(it)
	}
	return it, dup, err
}

func (s counted) InboxItem(ctx context.Context, id int64) (store.InboxItem, error) {
	s.n.Add(1)
	return s.Store.InboxItem(ctx, id)
}

func (s counted) Lease(ctx context.Context, session int64) (int64, bool, error) {
	s.l.Add(1)
	return s.Store.Lease(ctx, session)
}

func (s counted) Unlease(ctx context.Context, session, epoch int64) (bool, error) {
	s.l.Add(1)
	return s.Store.Unlease(ctx, session, epoch)
}

func (s counted) SessionByID(ctx context.Context, id int64) (store.Session, error) {
	s.l.Add(1)
	return s.Store.SessionByID(ctx, id)
}

func (s counted) Pending(ctx context.Context, session int64) ([]store.InboxItem, error) {
	s.l.Add(1)
	return s.Store.Pending(ctx, session)
}

// hold holds the next model call for text on whichever node runs it (a
// node may claim an input another accepted before that one leases the
// session); entered waits for the call and returns the node running it,
// open lets it go on.
type hold struct {
	nodes []*node
	gates []*testkit.Gate
}

func holdOn(t *testing.T, text string, nodes ...*node) *hold {
	h := &hold{nodes: nodes}
	for _, n := range nodes {
		h.gates = append(h.gates, n.m.Gate(text))
	}
	t.Cleanup(h.open)
	return h
}

func (h *hold) entered(t *testing.T) *node {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		for i, g := range h.gates {
			select {
			case <-g.Entered:
				return h.nodes[i]
			default:
			}
		}
		select {
		case <-deadline:
			t.Fatal("no node ran the held model call")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (h *hold) open() {
	for _, g := range h.gates {
		g.Open()
	}
}

// turnEnds returns the turn ends of a session's log, by turn.
func turnEnds(t *testing.T, st store.Store, addr string) (ends map[int64]int, order []int64) {
	t.Helper()
	s, err := st.SessionByAddress(t.Context(), "a", addr)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Events(t.Context(), s.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	ends = map[int64]int{}
	for _, e := range evs {
		if e.Kind == event.TurnEnd {
			ends[e.Turn]++
			order = append(order, e.Turn)
		}
	}
	return ends, order
}

// Two nodes on one database: an input accepted by one node for a
// session whose turn runs on the other is run after that turn by the node
// running the session, and its sender learns its end; a node that loses
// the lease of a session in a turn (it paused: the lease expired and was
// taken) is fenced, and the turn resumes and ends once.
func TestNodesShareAndTakeOverSessions(t *testing.T) {
	db := pgtest.NewDB(t)
	a, b := newNode(t, db), newNode(t, db)
	ctx := t.Context()

	h := holdOn(t, "first", a, b)
	first, err := a.rt.Submit(ctx, runtime.Input{Session: "a/s", Text: "first", Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	runner := h.entered(t) // it holds the session's lease
	other := a
	if runner == a {
		other = b
	}
	second, err := other.rt.Submit(ctx, runtime.Input{Session: "a/s", Text: "second", Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	h.open()
	end, err := other.rt.Wait(ctx, second.Turn)
	if err != nil || end.Reply != "re: second" {
		t.Fatalf("second turn through the other node = %+v, %v", end, err)
	}
	ends, order := turnEnds(t, a.st, "s")
	if len(order) != 2 || order[0] != first.Turn || ends[first.Turn] != 1 || ends[second.Turn] != 1 {
		t.Fatalf("turn ends %v in order %v; want the first, then the second, once each", ends, order)
	}
	// Neither turn began elsewhere: neither is marked resumed.
	for _, turn := range []int64{first.Turn, second.Turn} {
		evs, err := a.st.TurnEvents(ctx, first.SessionID, turn)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Kind == event.Marker {
				t.Errorf("turn %d has a marker %s: it never ran elsewhere", turn, e.Data)
			}
		}
	}

	h = holdOn(t, "third", a, b)
	third, err := a.rt.Submit(ctx, runtime.Input{Session: "a/s", Text: "third", Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	h.entered(t)
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `UPDATE agentd_leases SET expires_at = now() - interval '1 second', node_id = 'paused'`); err != nil {
		t.Fatal(err)
	}
	h.open()
	end, err = b.rt.Wait(ctx, third.Turn)
	if err != nil || end.Reply != "re: third" {
		t.Fatalf("third turn = %+v, %v", end, err)
	}
	ends, _ = turnEnds(t, b.st, "s")
	if ends[third.Turn] != 1 {
		t.Fatalf("the third turn ended %d times, want once", ends[third.Turn])
	}
	if calls := len(a.m.Requests("third")) + len(b.m.Requests("third")); calls != 2 {
		t.Fatalf("the third turn's model was called %d times, want 2: the fenced call, then the resumed one", calls)
	}
}

// A caller waiting on one node for a turn another node runs learns its
// end from the events that node committed, published on the waiting
// node's bus by its listener: it reads the turn's state from the store
// once, when it starts waiting, and not again.
func TestWaitAcrossNodesWakesFromTheBus(t *testing.T) {
	db := pgtest.NewDB(t)
	a, b := newNode(t, db), newNode(t, db)
	ctx := t.Context()
	h := holdOn(t, "far", a, b)
	rc, err := a.rt.Submit(ctx, runtime.Input{Session: "a/w", Text: "far", Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	other := a
	if h.entered(t) == a {
		other = b
	}
	before := other.reads.Load()
	done := make(chan error, 1)
	go func() {
		end, err := other.rt.Wait(ctx, rc.Turn)
		if err == nil && end.Reply != "re: far" {
			err = fmt.Errorf("turn ended %+v", end)
		}
		done <- err
	}()
	for other.reads.Load() == before { // it has read the turn pending
		time.Sleep(time.Millisecond)
	}
	h.open()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := other.reads.Load() - before; n != 1 {
		t.Errorf("the waiter read the turn's state %d times, want once: its end comes from the bus", n)
	}
}

// A cancel asked of a node that does not run the session's turn reaches
// the node that does, which cancels it; with no turn running on any
// node, both say so.
func TestCancelAcrossNodes(t *testing.T) {
	db := pgtest.NewDB(t)
	a, b := newNode(t, db), newNode(t, db)
	ctx := t.Context()
	for _, n := range []*node{a, b} {
		if err := n.rt.Cancel(ctx, "a/c"); !errors.Is(err, runtime.ErrNoTurn) {
			t.Fatalf("Cancel of a session that does not exist: %v, want ErrNoTurn", err)
		}
	}
	h := holdOn(t, "long", a, b)
	rc, err := a.rt.Submit(ctx, runtime.Input{Session: "a/c", Text: "long", Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	other := a
	if h.entered(t) == a {
		other = b
	}
	if err := other.rt.Cancel(ctx, "a/c"); err != nil {
		t.Fatalf("Cancel through the node not running the turn: %v", err)
	}
	end, err := other.rt.Wait(ctx, rc.Turn)
	if err != nil || end.Status != event.StatusCancelled {
		t.Fatalf("turn ended %+v, %v; want cancelled", end, err)
	}
	// The node that ran it may hear of its end after the waiter here.
	if err := other.rt.Cancel(ctx, "a/c"); !errors.Is(err, runtime.ErrNoTurn) {
		t.Errorf("Cancel after the turn: %v, want ErrNoTurn", err)
	}
	// The session goes on: its next input runs.
	next, end, err := other.rt.Send(ctx, runtime.Input{Session: "a/c", Text: "after", Source: "test"})
	if err != nil || end.Reply != "re: after" {
		t.Fatalf("the next turn (%d) = %+v, %v", next.Turn, end, err)
	}
}

// Writes of a session's log outside its turns — close and reopen
// markers, recorded events, working memory set through the API — are
// made under the session's lease: through a node that does not run the
// session's turn they wait for it and are refused as busy while it runs,
// and go through once it has ended.
func TestWritesOutsideTurnsTakeTheLease(t *testing.T) {
	db := pgtest.NewDB(t)
	a, b := newNode(t, db), newNode(t, db)
	ctx := t.Context()
	h := holdOn(t, "busy", a, b)
	rc, err := a.rt.Submit(ctx, runtime.Input{Session: "a/o", Text: "busy", Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	other := a
	if h.entered(t) == a {
		other = b
	}
	setWorking := func(ctx context.Context) error {
		_, err := other.st.SetWorking(ctx, rc.SessionID, "k", []byte(`1`))
		return err
	}
	for name, write := range map[string]func() error{
		"close": func() error { return other.rt.CloseSession(ctx, "a/o") },
		"record": func() error {
			return other.rt.Record(ctx, "a/o", event.New(0, 0, event.Marker, event.MarkerData{Name: "x"}))
		},
		"working memory": func() error { return other.rt.OutsideTurn(ctx, rc.SessionID, setWorking) },
	} {
		if err := write(); !errors.Is(err, runtime.ErrBusy) {
			t.Errorf("%s through the other node while the turn runs: %v, want ErrBusy", name, err)
		}
	}
	h.open()
	if end, err := other.rt.Wait(ctx, rc.Turn); err != nil || end.Status != event.StatusDone {
		t.Fatalf("turn = %+v, %v", end, err)
	}
	if err := other.rt.OutsideTurn(ctx, rc.SessionID, setWorking); err != nil {
		t.Fatalf("working memory after the turn: %v", err)
	}
	if err := other.rt.CloseSession(ctx, "a/o"); err != nil {
		t.Fatalf("close after the turn: %v", err)
	}
	if ok, err := other.rt.Reopen(ctx, "a/o"); err != nil || !ok {
		t.Fatalf("reopen after the turn: %v, %v", ok, err)
	}
	// What the turn wrote and what came after are in order, none between.
	evs, err := a.st.Events(ctx, rc.SessionID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []event.Kind
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	if n := len(kinds); n < 4 || kinds[n-4] != event.TurnEnd || kinds[n-3] != event.WorkingMemory || kinds[n-2] != event.Marker || kinds[n-1] != event.Marker {
		t.Fatalf("the log's kinds %v, want the turn, then working memory, closed and reopened", kinds)
	}
	// The session goes on, on either node.
	if _, end, err := a.rt.Send(ctx, runtime.Input{Session: "a/o", Text: "again", Source: "test"}); err != nil || end.Reply != "re: again" {
		t.Fatalf("a turn after: %+v, %v", end, err)
	}
}

// A session's next turn on the node that ran its last takes no round
// trip about the lease (taking it, reading the session and its pending
// inputs, giving it up): the node keeps the lease idle for a grace. An
// input another node accepts meanwhile ends the grace: the keeping node
// runs it, and its sender, on the other node, learns its end.
func TestLeaseKeptIdleForTheNextTurn(t *testing.T) {
	db := pgtest.NewDB(t)
	a, b := newNode(t, db), newNode(t, db)
	ctx := t.Context()
	send := func(n *node, text string) {
		t.Helper()
		if _, end, err := n.rt.Send(ctx, runtime.Input{Session: "a/g", Text: text, Source: "test"}); err != nil || end.Reply != "re: "+text {
			t.Fatalf("%s: %+v, %v", text, end, err)
		}
	}
	send(a, "one")
	before := a.leases.Load()
	send(a, "two")
	if n := a.leases.Load() - before; n != 0 {
		t.Errorf("the next turn on the same node made %d calls about the lease, want none", n)
	}
	send(b, "three") // a keeps the lease: b's input runs there
	if got := len(a.m.Requests("three")); got != 1 {
		t.Errorf("the node keeping the lease ran the other node's input %d times, want once", got)
	}
}

// An input is queued on the node that accepted it only if no worker of
// the node found it in the store first. Here another input's worker takes
// the session's lease, and with it both pending inputs, between the
// first input's insert and its queuing: the first runs there, once, and
// its sender learns its end; it is not run again from its start (a second
// input event, a second model call with tool calls of new ids).
func TestInputFoundInTheStoreFirstRunsOnce(t *testing.T) {
	db := pgtest.NewDB(t)
	a, _ := newNode(t, db), newNode(t, db)
	ctx := t.Context()
	inserted, queue := make(chan int64, 1), make(chan struct{})
	hook := func(it store.InboxItem) {
		if it.Text == "first" {
			inserted <- it.ID
			<-queue
		}
	}
	a.enqueued.Store(&hook)
	send := func(text string) error {
		_, end, err := a.rt.Send(ctx, runtime.Input{Session: "a/once", Text: text, Source: "test"})
		if err == nil && end.Reply != "re: "+text {
			err = fmt.Errorf("%s: %+v", text, end)
		}
		return err
	}
	first := make(chan error, 1)
	go func() { first <- send("first") }()
	turn := recv(t, "the first input's insert", inserted)
	if err := send("second"); err != nil { // runs the first too
		t.Fatal(err)
	}
	close(queue)
	if err := recv(t, "the first input's end", first); err != nil {
		t.Fatal(err)
	}
	if err := send("third"); err != nil { // after whatever the first's queuing queued
		t.Fatal(err)
	}
	s, err := a.st.SessionByAddress(ctx, "a", "once")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := a.st.TurnEvents(ctx, s.ID, turn)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[event.Kind]int{}
	for _, e := range evs {
		counts[e.Kind]++
	}
	if counts[event.Input] != 1 || counts[event.TurnEnd] != 1 {
		t.Errorf("the first input's turn logged %d inputs and %d turn ends, want one each: %v", counts[event.Input], counts[event.TurnEnd], kinds(evs))
	}
	if n := len(a.m.Requests("first")); n != 1 {
		t.Errorf("the model was called %d times for the first input, want once", n)
	}
}

// A node whose lease of a session expired during a turn (its heartbeat
// was late) and that takes it back at the same epoch, no other node
// having run the session meanwhile, resumes the turn from the log: its
// input, logged before the lease expired, is not logged again.
func TestTurnFencedResumesOnTheSameNode(t *testing.T) {
	db := pgtest.NewDB(t)
	a := newNode(t, db, func(o *runtime.Options) { o.ClaimEvery = time.Hour }) // no claim renews the lease
	ctx := t.Context()
	h := holdOn(t, "slow", a)
	done := make(chan error, 1)
	go func() {
		_, end, err := a.rt.Send(ctx, runtime.Input{Session: "a/fenced", Text: "slow", Source: "test"})
		if err == nil && end.Status != event.StatusDone {
			err = fmt.Errorf("the turn ended %+v", end)
		}
		done <- err
	}()
	h.entered(t)
	s, err := a.st.SessionByAddress(ctx, "a", "fenced")
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the input in the log", func() bool {
		evs, err := a.st.Events(ctx, s.ID, 0, 0)
		return err == nil && slices.ContainsFunc(evs, func(e event.Event) bool { return e.Kind == event.Input })
	})
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `UPDATE agentd_leases SET expires_at = now() - interval '1 second' WHERE session_id = $1`, s.ID); err != nil {
		t.Fatal(err)
	}
	h.open()
	if err := recv(t, "the turn's end", done); err != nil {
		t.Fatal(err)
	}
	evs, err := a.st.Events(ctx, s.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[event.Kind]int{}
	for _, e := range evs {
		counts[e.Kind]++
	}
	if counts[event.Input] != 1 || counts[event.TurnEnd] != 1 {
		t.Errorf("the turn logged %d inputs and %d turn ends, want one each: %v", counts[event.Input], counts[event.TurnEnd], kinds(evs))
	}
}
