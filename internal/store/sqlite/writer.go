package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"agentd/internal/event"
	"agentd/internal/store"
)

// op is the kind of a write request.
type op uint8

const (
	opCommit op = iota + 1
	opEnqueue
	opSession
	opSaveAgent
	opIndex
	opProbe
	opTitle
	opClaim
	opExtPut
	opExtDelete
	opRunStart
	opRunFinish
	opRunPrune
	opRunDeliver
	opInstCreate
	opInstState
	opInstReport
	opInstRefusal
	opConvPut
	opConvSeen
	opOutOpen
	opOutMove
	opOutAck
	opPair
	opPairDecide
	opPairRevoke
	opGrantPut
	opGrantDelete
	opIdentity
)

func (o op) String() string {
	switch o {
	case opCommit:
		return "commit"
	case opEnqueue:
		return "enqueue"
	case opSession:
		return "session"
	case opSaveAgent:
		return "save agent"
	case opIndex:
		return "index"
	case opProbe:
		return "probe"
	case opTitle:
		return "title"
	case opClaim:
		return "claim"
	case opExtPut:
		return "put extension"
	case opExtDelete:
		return "delete extension"
	case opRunStart:
		return "start run"
	case opRunFinish:
		return "finish run"
	case opRunPrune:
		return "prune runs"
	case opRunDeliver:
		return "record delivery"
	case opInstCreate:
		return "create instance"
	case opInstState:
		return "set instance state"
	case opInstReport:
		return "record report"
	case opInstRefusal:
		return "record refusal"
	case opConvPut:
		return "put conversation"
	case opConvSeen:
		return "set seen"
	case opOutOpen:
		return "open outbox"
	case opOutMove:
		return "move outbox"
	case opOutAck:
		return "ack outbox"
	case opPair:
		return "pair"
	case opPairDecide:
		return "decide pairing"
	case opPairRevoke:
		return "revoke pairing"
	case opGrantPut:
		return "put grant"
	case opGrantDelete:
		return "delete grant"
	case opIdentity:
		return "identity"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// request is one write handed to the writer goroutine. The caller fills the
// inputs, the writer the results, then signals reply; the caller reads the
// results only after that. Requests are pooled. Inputs are copies, so a
// caller that gives up waiting (ctx) leaves nothing of its own behind that
// the writer still uses, apart from event payload bytes.
type request struct {
	ctx context.Context
	op  op

	// opCommit
	session int64
	state   string
	events  []event.Event
	done    []int64
	usage   []store.Usage

	// opEnqueue (also its result)
	item store.InboxItem
	// opSession
	agent, key string
	// opSaveAgent
	rec store.AgentRecord
	// opTitle (with session)
	title, titleBy string
	// opClaim (with key)
	node string
	// opExtPut (also its result) and opExtDelete (Type, Name, UpdatedBy)
	ext       store.Extension
	extOp     string
	ifVersion int64
	// opRunStart, opRunFinish and opRunDeliver (Job, Run, DeliveredAt,
	// DeliveryError) (also their result), opRunPrune (Job, ScheduledAt
	// the before, with keep)
	jobRun store.JobRun
	keep   int
	// opInstCreate (also its result), opInstState (ID, State, Result,
	// Turn), opInstReport and opInstRefusal (ID,
	// ReportError)
	inst   store.Instance
	limits store.InstanceLimits
	// opConvPut (also its result), opConvSeen (Connector, Chat, SeenSeq,
	// LastIn)
	conv store.Conversation
	// opOutOpen (also its result), opOutMove (the row to write, with
	// from), opOutAck (ID, with retry; also its result)
	outbox store.OutboxItem
	from   string
	retry  bool
	notice bool // opPairDecide: outbox is the notice to open with an approval
	// opPair (with keep the most pending and at the time; also its
	// result), opPairDecide (Code, State, DecidedBy, with at; also its
	// result), opPairRevoke (Connector, UserID)
	pairing store.Pairing
	at      time.Time
	// opGrantPut, opGrantDelete (ID)
	grant store.Grant
	// opIdentity: the write, which sets its own results (identity.go)
	identity func(w *writer) error

	// results
	sess      store.Session
	created   bool // opSession, opInstCreate, opOutOpen, opPair: the row is new; opTitle, opInstState, opInstReport, opOutMove: it was set
	duplicate bool
	pruned    int64 // opRunPrune: the runs removed
	refused   error // opInstCreate, opPair: the limit that refused it (nothing written)
	err       error

	reply chan struct{} // capacity 1

	// wantEarly: an enqueue whose caller wants the item as soon as it is
	// applied, before the group is durable (see EnqueueEarly).
	wantEarly bool
	early     chan earlyResult // capacity 1

	// lazy: the request may commit without a sync (see EnqueueLazy);
	// group is the number of the group it committed in.
	lazy  bool
	group uint64
}

// earlyResult is an enqueue's outcome, sent before its group commits.
type earlyResult struct {
	item store.InboxItem
	dup  bool
	err  error
}

// hasText reports whether r writes events whose text is indexed.
func (r *request) hasText() bool {
	for i := range r.events {
		switch r.events[i].Kind {
		case event.Input, event.SystemMessage, event.Text:
			return true
		}
	}
	return false
}

// maxPooledEvents bounds the buffers a pooled request keeps.
const maxPooledEvents = 64

func (s *Store) getRequest(ctx context.Context, o op) *request {
	r := s.pool.Get().(*request)
	r.ctx, r.op = ctx, o
	return r
}

func (s *Store) putRequest(r *request) {
	if cap(r.events) > maxPooledEvents || cap(r.usage) > maxPooledEvents || cap(r.done) > maxPooledEvents {
		return
	}
	clear(r.events)
	clear(r.usage)
	*r = request{
		events: r.events[:0],
		done:   r.done[:0],
		usage:  r.usage[:0],
		reply:  r.reply,
		early:  r.early,
	}
	s.pool.Put(r)
}

// send hands r to the writer and waits for its answer. On a nil error the
// results in r are valid and the caller owns r again. On an error r must
// not be used: if ctx ended after the writer accepted r, the writer still
// owns it and may still perform the write.
func (s *Store) send(ctx context.Context, r *request) error {
	if err := s.hand(ctx, r); err != nil {
		return err
	}
	return store.Await(ctx, r.reply)
}

// hand gives r to the writer without waiting for the answer. On an error r
// was not handed over and is back in the pool.
func (s *Store) hand(ctx context.Context, r *request) error {
	if err := ctx.Err(); err != nil {
		s.putRequest(r)
		return err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		s.putRequest(r)
		return store.ErrClosed
	}
	select {
	case s.reqs <- r:
		s.mu.RUnlock()
		return nil
	case <-ctx.Done():
		s.mu.RUnlock()
		s.putRequest(r)
		return ctx.Err()
	}
}

// writer owns the write connection and its prepared statements.
type writer struct {
	s    *Store
	stmt []*sql.Stmt // every statement below, for close

	begin, commit, rollback           *sql.Stmt
	savepoint, release, rollbackTo    *sql.Stmt
	updSession, updKnown, markDone    *sql.Stmt
	insUsage, sessExists, insInbox    *sql.Stmt
	insEvents                         [maxEventRows]*sql.Stmt // insEvents[n-1] writes n events
	eventArgs                         []any                   // insEvents' arguments, reused
	inboxByKey, insSession, sessByKey *sql.Stmt
	upsertAgent, maxEventID, ftsIndex *sql.Stmt
	ftsAgents, ftsDoneSet, probe      *sql.Stmt
	wmSet, wmDelete                   *sql.Stmt
	setTitle, titleInput, claim       *sql.Stmt
	extHeadQ, extUpsert, extDelete    *sql.Stmt
	extHistIns, runIns, runGet        *sql.Stmt
	runFinish, runPrune               *sql.Stmt
	runOfDelivery, runDeliver         *sql.Stmt
	runOfMAC                          *sql.Stmt
	syncNormal, syncFull              *sql.Stmt
	agents                            agentStmts
	conn                              connStmts
	grants                            grantStmts
	ident                             identStmts

	// tails: the last sequence number of sessions written to (tails.go).
	tails tails

	// groups counts the groups committed; Store.synced is the last one
	// known durable, which makes every one before it durable too. normal:
	// the connection is in synchronous=NORMAL, for a lazy group.
	groups uint64
	normal bool

	// The text index is brought up to date in its own transactions, at most
	// every IndexDelay while writes come in, and before every search, rather
	// than in every group: a group then writes fewer pages, and the index
	// gets fewer, larger segments.
	ftsDone   int64 // events with an id up to this are indexed
	ftsDirty  bool  // text events were written since
	lastIndex time.Time
}

// qInsUsage records a model call's usage: its agent defaults to its
// session's, its payer to its agent.
const qInsUsage = `INSERT INTO usage (session_id, agent, model, input_tokens, output_tokens, cost_usd, ts, payer, account)
	SELECT ?1, a.agent, ?3, ?4, ?5, ?6, ?7, COALESCE(NULLIF(?8, ''), a.agent), ?9
	FROM (SELECT COALESCE(NULLIF(?2, ''), (SELECT agent FROM sessions WHERE id = ?1), '') AS agent) a`

// maxEventRows is the most events one INSERT writes: a commit's events go
// in as few statements as that allows, since each statement run costs
// SQLite more than each row it inserts (a turn commits 3 or 4 events).
const maxEventRows = 4

// insertEvents is the INSERT of n events.
func insertEvents(n int) string {
	return "INSERT INTO events (session_id, seq, turn, kind, ts, data) VALUES (?, ?, ?, ?, ?, ?)" +
		strings.Repeat(", (?, ?, ?, ?, ?, ?)", n-1)
}

// IndexDelay bounds how long text written waits to enter the search index
// while the writer is busy; a search first indexes everything written.
const IndexDelay = 200 * time.Millisecond

func newWriter(ctx context.Context, conn *sql.Conn, s *Store) (*writer, error) {
	w := &writer{s: s}
	stmts := []struct {
		dst **sql.Stmt
		sql string
	}{
		{&w.begin, "BEGIN IMMEDIATE"},
		{&w.commit, "COMMIT"},
		{&w.rollback, "ROLLBACK"},
		{&w.savepoint, "SAVEPOINT req"},
		{&w.release, "RELEASE req"},
		{&w.rollbackTo, "ROLLBACK TO req"},
		{&w.updSession, `UPDATE sessions SET last_seq = last_seq + ?, updated_at = ?,
			state = COALESCE(NULLIF(?, ''), state) WHERE id = ? RETURNING last_seq, title_by = ''`},
		{&w.updKnown, qUpdKnown},
		{&w.insEvents[0], insertEvents(1)},
		{&w.insEvents[1], insertEvents(2)},
		{&w.insEvents[2], insertEvents(3)},
		{&w.insEvents[3], insertEvents(4)},
		{&w.markDone, `UPDATE inbox SET state = 'done', done_at = COALESCE(done_at, ?)
			WHERE id = ? AND (? = 0 OR session_id = ?)`},
		{&w.insUsage, qInsUsage},
		{&w.sessExists, `SELECT 1 FROM sessions WHERE id = ?`},
		{&w.insInbox, `INSERT INTO inbox (id, session_id, kind, silent, text, source, origin, idem_key, state, created_at, options, images, hops)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, ?) ON CONFLICT DO NOTHING`},
		{&w.inboxByKey, qInboxByKey},
		{&w.insSession, `INSERT INTO sessions (agent, key, state, last_seq, created_at, updated_at)
			VALUES (?, ?, 'created', 0, ?, ?) ON CONFLICT (agent, key) DO NOTHING RETURNING id`},
		{&w.sessByKey, qSessionByKey},
		{&w.maxEventID, `SELECT coalesce(max(id), 0) FROM events`},
		{&w.ftsIndex, ftsIndexNew},
		{&w.ftsAgents, ftsAgentsNew},
		{&w.ftsDoneSet, ftsDoneSet},
		{&w.probe, `UPDATE search_indexed SET id = id`},
		{&w.wmSet, qWorkingSet},
		{&w.wmDelete, qWorkingDelete},
		{&w.setTitle, qSetTitle},
		{&w.titleInput, qTitleInput},
		{&w.claim, qClaim},
		{&w.extHeadQ, qExtHead},
		{&w.extUpsert, qExtUpsert},
		{&w.extDelete, qExtDelete},
		{&w.extHistIns, qExtHistIns},
		{&w.runIns, qRunIns},
		{&w.runGet, qRun},
		{&w.runFinish, qRunFinish},
		{&w.runPrune, qRunPrune},
		{&w.runOfDelivery, qRunOfDelivery},
		{&w.runOfMAC, qRunOfMAC},
		{&w.runDeliver, qRunDeliver},
		{&w.syncNormal, "PRAGMA synchronous = NORMAL"},
		{&w.syncFull, "PRAGMA synchronous = FULL"},
		{&w.upsertAgent, `INSERT INTO agents (id, name, type, definition, updated_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET name = excluded.name, type = excluded.type,
			definition = excluded.definition, updated_at = excluded.updated_at`},
	}
	for _, p := range append(append(append(append(stmts, w.agents.list()...), w.conn.list()...), w.grants.list()...), w.ident.list()...) {
		st, err := conn.PrepareContext(ctx, p.sql)
		if err != nil {
			_ = w.close()
			return nil, fmt.Errorf("prepare %q: %w", p.sql, err)
		}
		*p.dst = st
		w.stmt = append(w.stmt, st)
	}
	// Text written by a process that stopped before indexing it.
	var indexed, last int64
	if err := conn.QueryRowContext(ctx, ftsDone).Scan(&indexed); err != nil {
		_ = w.close()
		return nil, fmt.Errorf("read index progress: %w", err)
	}
	if err := w.maxEventID.QueryRowContext(ctx).Scan(&last); err != nil {
		_ = w.close()
		return nil, fmt.Errorf("read last event id: %w", err)
	}
	w.ftsDone, w.ftsDirty = indexed, last > indexed
	// Inbox ids are handed out by Store.Enqueue from a counter, so that an
	// item has its id before the writer reaches it.
	var lastInbox int64
	if err := conn.QueryRowContext(ctx, `SELECT max(coalesce((SELECT max(id) FROM inbox), 0),
		coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'inbox'), 0))`).Scan(&lastInbox); err != nil {
		_ = w.close()
		return nil, fmt.Errorf("read last inbox id: %w", err)
	}
	s.nextInbox.Store(lastInbox)
	return w, nil
}

func (w *writer) close() error {
	var errs []error
	for _, st := range w.stmt {
		errs = append(errs, st.Close())
	}
	w.stmt = nil
	return errors.Join(errs...)
}

// run is the writer goroutine. It ends when reqs is closed and drained, and
// then closes done.
func (w *writer) run(reqs <-chan *request, done chan<- struct{}, maxBatch int, hook func()) {
	defer close(done)
	defer w.index() // index what the last writes added
	group := make([]*request, 0, maxBatch)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var r *request
		var ok bool
		if w.ftsDirty {
			timer.Reset(max(IndexDelay-time.Since(w.lastIndex), 0))
			select {
			case r, ok = <-reqs:
				timer.Stop()
			case <-timer.C:
				w.index()
				continue
			}
		} else {
			r, ok = <-reqs
		}
		if !ok {
			return
		}
		if hook != nil {
			hook()
		}
		group = append(group[:0], r)
	drain:
		for len(group) < maxBatch {
			select {
			case r, ok := <-reqs:
				if !ok {
					break drain
				}
				group = append(group, r)
			default:
				break drain
			}
		}
		w.runGroup(group)
		force := false
		for _, r := range group {
			force = force || r.op == opIndex
		}
		if w.ftsDirty && (force || time.Since(w.lastIndex) >= IndexDelay) {
			w.index()
		}
		for i, r := range group {
			group[i] = nil
			r.reply <- struct{}{} // r belongs to its caller from here on
		}
	}
}

// index adds the text of events written since the last index to the
// search index, in a transaction of its own.
func (w *writer) index() {
	if !w.ftsDirty {
		return
	}
	w.lastIndex = time.Now()
	var last int64
	err := w.setSync(false)
	if err == nil {
		err = w.maxEventID.QueryRow().Scan(&last)
	}
	if err == nil && last > w.ftsDone {
		if _, err = w.begin.Exec(); err == nil {
			if _, err = w.ftsAgents.Exec(w.ftsDone, last); err == nil {
				if _, err = w.ftsIndex.Exec(w.ftsDone, last); err == nil {
					if _, err = w.ftsDoneSet.Exec(last); err == nil {
						if _, err = w.commit.Exec(); err == nil {
							w.s.synced.Store(w.groups) // a synced commit after them
						}
					}
				}
			}
			if err != nil {
				_, _ = w.rollback.Exec()
			}
		}
	}
	if err != nil {
		// The text stays unindexed until the next try; writes go on.
		w.s.log.Error("store: index text failed", "err", err)
		return
	}
	w.ftsDone, w.ftsDirty = max(last, w.ftsDone), false
}

// runGroup performs a group of requests in one transaction and sets every
// request's err. It first applies them one after the other with nothing
// between them: a request seldom fails, and a savepoint around each would
// cost statements of its own and a copy of every page it changes (the
// savepoint's journal). If one fails, the transaction is rolled back whole
// and the group applied again, each request in its own savepoint, so that
// the failing one is rolled back alone (applyGuarded). Applying a request
// again gives what the first pass gave: the database is as it was, the
// requests come in the same order, and what a pass writes into a request
// is written again by the next.
func (w *writer) runGroup(group []*request) {
	now := time.Now().UnixNano()
	lazy := w.lazy(group)
	if err := w.setSync(lazy); err != nil {
		w.fail(group, fmt.Errorf("sqlite: synchronous: %w", err), false)
		return
	}
	if _, err := w.begin.Exec(); err != nil {
		w.fail(group, fmt.Errorf("sqlite: begin: %w", err), false)
		return
	}
	w.tails.begin()
	applied, texts, ok := w.applyAll(group, now)
	if !ok && len(group) > 1 {
		// A group of one needs no second pass: its request failed, and
		// nothing is committed.
		if _, err := w.rollback.Exec(); err != nil {
			w.fail(group, fmt.Errorf("sqlite: rollback: %w", err), true)
			return
		}
		w.tails.revert(0)
		if _, err := w.begin.Exec(); err != nil {
			w.fail(group, fmt.Errorf("sqlite: begin: %w", err), false)
			return
		}
		w.s.stats.guarded.Add(1)
		if applied, texts, ok = w.applyGuarded(group, now); !ok {
			return // failed, and told every request so
		}
	}
	if applied == 0 {
		if _, err := w.rollback.Exec(); err != nil {
			w.s.log.Error("store rollback failed", "err", err)
		}
		w.tails.revert(0)
		for _, r := range group {
			w.s.noteWrite(false, r.err)
		}
	} else if _, err := w.commit.Exec(); err != nil {
		w.fail(group, fmt.Errorf("sqlite: commit: %w", err), true)
		return
	} else {
		w.tails.begin() // committed: nothing to undo
		w.s.noteWrite(true, nil)
		w.groups++
		for _, r := range group {
			r.group = w.groups
		}
		if !lazy {
			w.s.synced.Store(w.groups)
		}
	}
	w.ftsDirty = w.ftsDirty || texts
	st := &w.s.stats
	st.requests.Add(int64(len(group)))
	if applied > 0 {
		st.commits.Add(1)
	}
	if n := int64(len(group)); n > st.largest.Load() {
		st.largest.Store(n)
	}
}

// applyAll applies the group's requests in the open transaction, stopping
// at the first that fails (ok false: the transaction holds part of the
// group and must be rolled back). On success it sends the enqueues that
// want it their early result.
func (w *writer) applyAll(group []*request, now int64) (applied int, texts, ok bool) {
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.err = err // the caller gave up before its turn: skip it
			continue
		}
		if err := fullErr(w.apply(r, now)); err != nil {
			r.err = err
			w.s.log.Debug("store write failed", "op", r.op, "err", r.err)
			return applied, texts, false
		}
		applied++
		texts = texts || r.hasText()
	}
	for _, r := range group {
		if r.wantEarly && r.err == nil {
			r.early <- earlyResult{item: r.item, dup: r.duplicate}
		}
	}
	return applied, texts, true
}

// applyGuarded applies the group's requests in the open transaction, each
// in its own savepoint, so that one that fails is rolled back alone. If a
// savepoint itself fails, it fails the whole group (ok false).
func (w *writer) applyGuarded(group []*request, now int64) (applied int, texts, ok bool) {
	for _, r := range group {
		r.err, r.duplicate = nil, false
		if err := r.ctx.Err(); err != nil {
			r.err = err
			continue
		}
		if _, err := w.savepoint.Exec(); err != nil {
			w.fail(group, fmt.Errorf("sqlite: savepoint: %w", err), true)
			return 0, false, false
		}
		mark := w.tails.mark()
		r.err = fullErr(w.apply(r, now))
		if r.err != nil {
			if _, err := w.rollbackTo.Exec(); err != nil {
				w.fail(group, fmt.Errorf("sqlite: rollback to savepoint: %w", err), true)
				return 0, false, false
			}
			w.tails.revert(mark)
			w.s.log.Debug("store write failed", "op", r.op, "err", r.err)
		} else {
			applied++
			texts = texts || r.hasText()
		}
		if r.wantEarly {
			r.early <- earlyResult{item: r.item, dup: r.duplicate, err: r.err}
		}
		if _, err := w.release.Exec(); err != nil {
			w.fail(group, fmt.Errorf("sqlite: release savepoint: %w", err), true)
			return 0, false, false
		}
	}
	return applied, texts, true
}

// lazy reports whether group may commit without a sync: in
// synchronous=FULL, when every request of it may (EnqueueLazy).
func (w *writer) lazy(group []*request) bool {
	if !w.s.syncFull {
		return false
	}
	for _, r := range group {
		if !r.lazy {
			return false
		}
	}
	return true
}

// setSync puts the connection in synchronous=NORMAL for a lazy group, and
// back in FULL for any other transaction, outside a transaction as SQLite
// wants. If it cannot go back, nothing is committed until it can.
func (w *writer) setSync(lazy bool) error {
	if lazy == w.normal {
		return nil
	}
	st := w.syncFull
	if lazy {
		st = w.syncNormal
	}
	if _, err := st.Exec(); err != nil {
		return err
	}
	w.normal = lazy
	return nil
}

// fail gives err to every request of the group that has no error of its
// own, rolling the transaction back if one is open.
func (w *writer) fail(group []*request, err error, inTx bool) {
	err = fullErr(err)
	w.s.noteWrite(false, err)
	w.tails.revert(0)
	if inTx {
		// The transaction may already be gone (SQLite rolls back by itself
		// after some I/O errors); the ROLLBACK error says nothing new then.
		_, _ = w.rollback.Exec()
	}
	w.s.log.Error("store group write failed", "requests", len(group), "err", err)
	for _, r := range group {
		if r.err == nil {
			r.err = err
		}
	}
	w.s.stats.requests.Add(int64(len(group)))
}

func (w *writer) apply(r *request, now int64) error {
	switch r.op {
	case opCommit:
		return w.applyCommit(r, now)
	case opEnqueue:
		return w.applyEnqueue(r, now)
	case opSession:
		return w.applySession(r, now)
	case opSaveAgent:
		return w.applySaveAgent(r, now)
	case opTitle:
		return w.applyTitle(r)
	case opIndex:
		// Handled by the writer loop (see Store.SearchText).
		return nil
	case opProbe:
		return w.applyProbe()
	case opClaim:
		return w.applyClaim(r, now)
	case opExtPut:
		return w.applyExtPut(r, now)
	case opExtDelete:
		return w.applyExtDelete(r, now)
	case opRunStart:
		return w.applyRunStart(r)
	case opRunFinish:
		return w.applyRunFinish(r)
	case opRunPrune:
		return w.applyRunPrune(r)
	case opRunDeliver:
		return w.applyRunDeliver(r)
	case opInstCreate:
		return w.applyInstCreate(r)
	case opInstState:
		return w.applyInstState(r, now)
	case opInstReport, opInstRefusal:
		return w.applyInstReport(r, now)
	case opConvPut:
		return w.applyConvPut(r)
	case opConvSeen:
		return w.applyConvSeen(r, now)
	case opOutOpen:
		return w.applyOutOpen(r)
	case opOutMove:
		return w.applyOutMove(r, now)
	case opOutAck:
		return w.applyOutAck(r, now)
	case opPair:
		return w.applyPair(r)
	case opPairDecide:
		return w.applyPairDecide(r)
	case opPairRevoke:
		return w.applyPairRevoke(r)
	case opGrantPut:
		return w.applyGrantPut(r)
	case opGrantDelete:
		return w.applyGrantDelete(r)
	case opIdentity:
		return r.identity(w)
	}
	return fmt.Errorf("sqlite: unknown write op %d", r.op)
}

func (w *writer) applyCommit(r *request, now int64) error {
	if r.session != 0 {
		last, untitled, err := w.updateSession(r, now)
		if err != nil {
			return err
		}
		seq := last - int64(len(r.events))
		for i := range r.events {
			e := &r.events[i]
			seq++
			e.Seq, e.Session = seq, r.session
			if e.Time.IsZero() {
				e.Time = time.Unix(0, now).UTC()
			}
		}
		if err := w.insertEvents(r.session, r.events); err != nil {
			return err
		}
		for i := range r.events {
			e := &r.events[i]
			seq := e.Seq
			if e.Kind == event.WorkingMemory {
				if err := w.applyWorking(r.session, e); err != nil {
					return fmt.Errorf("sqlite: commit: event %d: %w", seq, err)
				}
			}
			if untitled {
				titled, err := w.titleFromInput(r.session, e)
				if err != nil {
					return fmt.Errorf("sqlite: commit: event %d: %w", seq, err)
				}
				untitled = !titled
			}
		}
		w.tails.set(r.session, tail{last: last, titled: !untitled})
	}
	for _, id := range r.done {
		res, err := w.markDone.Exec(now, id, r.session, r.session)
		if err != nil {
			return fmt.Errorf("sqlite: commit: inbox item %d: %w", id, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return fmt.Errorf("sqlite: commit: inbox item %d of session %d: %w", id, r.session, store.ErrNotFound)
		}
	}
	for i := range r.usage {
		u := &r.usage[i]
		sess := u.Session
		if sess == 0 {
			sess = r.session
		}
		ts := now
		if !u.Time.IsZero() {
			ts = u.Time.UnixNano()
		}
		if _, err := w.insUsage.Exec(sess, u.Agent, u.Model, int64(u.InputTokens), int64(u.OutputTokens), u.CostUSD, ts,
			u.Payer, u.Account); err != nil {
			return fmt.Errorf("sqlite: commit: usage: %w", err)
		}
	}
	return nil
}

// updateSession advances the last sequence number of r's session by its
// events, sets its state and updated_at, and returns the new last sequence
// number and whether the session has no title. Where the writer knows the
// session's tail, it does not read the row back.
func (w *writer) updateSession(r *request, now int64) (last int64, untitled bool, err error) {
	n := int64(len(r.events))
	if t, ok := w.tails.get(r.session); ok {
		res, err := w.updKnown.Exec(n, now, r.state, r.session, t.last, !t.titled)
		if err != nil {
			return 0, false, fmt.Errorf("sqlite: commit: session %d: %w", r.session, err)
		}
		if k, err := res.RowsAffected(); err == nil && k == 1 {
			return t.last + n, !t.titled, nil
		}
		// The row says otherwise: read it back.
	}
	err = w.updSession.QueryRow(n, now, r.state, r.session).Scan(&last, &untitled)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, fmt.Errorf("sqlite: commit: session %d: %w", r.session, store.ErrNotFound)
	}
	if err != nil {
		return 0, false, fmt.Errorf("sqlite: commit: session %d: %w", r.session, err)
	}
	return last, untitled, nil
}

// insertEvents inserts the events of session, numbered already, in
// statements of up to maxEventRows rows.
func (w *writer) insertEvents(session int64, evs []event.Event) error {
	for len(evs) > 0 {
		n := min(len(evs), maxEventRows)
		args := w.eventArgs[:0]
		for i := range evs[:n] {
			e := &evs[i]
			var data []byte // NULL when there is none
			if len(e.Data) > 0 {
				data = e.Data
			}
			args = append(args, session, e.Seq, e.Turn, string(e.Kind), e.Time.UnixNano(), data)
		}
		_, err := w.insEvents[n-1].Exec(args...)
		clear(args)
		w.eventArgs = args[:0]
		if err != nil {
			return fmt.Errorf("sqlite: commit: events %d to %d: %w", evs[0].Seq, evs[n-1].Seq, err)
		}
		evs = evs[n:]
	}
	return nil
}

func (w *writer) applyEnqueue(r *request, now int64) error {
	it := &r.item
	created := now
	if !it.CreatedAt.IsZero() {
		created = it.CreatedAt.UnixNano()
	}
	var images []byte // NULL when there are none
	if len(it.Images) > 0 {
		b, err := json.Marshal(it.Images)
		if err != nil {
			return fmt.Errorf("sqlite: enqueue: images: %w", err)
		}
		images = b
	}
	// The item's id is given (Store.nextInbox): the insert changes one row,
	// or none if the idempotency key (or, by a bug, the id) is taken.
	res, err := w.insInbox.Exec(it.ID, it.Session, string(it.Kind), it.Silent, it.Text, it.Source, it.Origin, it.IdempotencyKey, created, string(it.Options), images, it.Hops)
	if err == nil {
		var n int64
		if n, err = res.RowsAffected(); err == nil && n == 0 {
			err = sql.ErrNoRows
		}
	}
	if errors.Is(err, sql.ErrNoRows) && it.IdempotencyKey == "" {
		return fmt.Errorf("sqlite: enqueue: inbox id %d is taken", it.ID)
	}
	if errors.Is(err, sql.ErrNoRows) {
		// The idempotency key is taken: the insert did nothing.
		existing, err := scanInbox(w.inboxByKey.QueryRow(it.Session, it.IdempotencyKey))
		if err != nil {
			return fmt.Errorf("sqlite: enqueue: read duplicate: %w", err)
		}
		r.item, r.duplicate = existing, true
		return nil
	}
	if isForeignKey(err) {
		// The session's foreign key, checked by the insert itself.
		return fmt.Errorf("sqlite: enqueue: session %d: %w", it.Session, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("sqlite: enqueue: %w", err)
	}
	it.State, it.CreatedAt = store.InboxPending, time.Unix(0, created).UTC()
	return nil
}

// isForeignKey reports whether err is a write refused by a foreign key.
func isForeignKey(err error) bool {
	var se *sqlitedrv.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

func (w *writer) applySession(r *request, now int64) error {
	var id int64
	err := w.insSession.QueryRow(r.agent, r.key, now, now).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		s, err := scanSession(w.sessByKey.QueryRow(r.agent, r.key))
		if err != nil {
			return fmt.Errorf("sqlite: session: %w", err)
		}
		r.sess, r.created = s, false
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: session: %w", err)
	}
	t := time.Unix(0, now).UTC()
	r.sess = store.Session{ID: id, Agent: r.agent, Key: r.key, State: store.StateCreated, CreatedAt: t, UpdatedAt: t}
	r.created = true
	return nil
}

func (w *writer) applySaveAgent(r *request, now int64) error {
	a := &r.rec
	ts := now
	if !a.UpdatedAt.IsZero() {
		ts = a.UpdatedAt.UnixNano()
	}
	if _, err := w.upsertAgent.Exec(a.ID, a.Name, a.Type, a.Definition, ts); err != nil {
		return fmt.Errorf("sqlite: save agent %q: %w", a.ID, err)
	}
	return nil
}
