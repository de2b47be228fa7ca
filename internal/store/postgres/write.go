package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"agentd/internal/event"
	"agentd/internal/store"
)

// The writer's statements.
const (
	// One statement appends a batch's events: the session's last_seq
	// grows by their number (the row lock orders concurrent writers), they
	// are numbered below it, and the session is titled from its first
	// input with a title if it has none.
	qCommitSession = `WITH s AS (
		UPDATE sessions SET last_seq = last_seq + $2, updated_at = $3, state = COALESCE(NULLIF($4, ''), state),
			title = CASE WHEN title_by = '' AND $5 <> '' THEN $5 ELSE title END,
			title_by = CASE WHEN title_by = '' AND $5 <> '' THEN 'input' ELSE title_by END
		WHERE id = $1 RETURNING last_seq),
	ins AS (
		INSERT INTO events (session_id, seq, turn, kind, ts, data, search)
		SELECT $1, s.last_seq - $2 + e.n, e.turn, e.kind, e.ts, e.data, e.search::tsvector
		FROM s, unnest($6::bigint[], $7::text[], $8::bigint[], $9::bytea[], $10::text[])
			WITH ORDINALITY AS e(turn, kind, ts, data, search, n))
	SELECT coalesce((SELECT last_seq FROM s), agentd_refuse('no such session'))`
	// A working_memory event's projection; $5 counts the events of the
	// batch after it, whose numbers are below the session's last_seq.
	qWorkingSet = `INSERT INTO working_memory (session_id, key, value, updated_at, seq)
		VALUES ($1, $2, $3, $4, (SELECT last_seq FROM sessions WHERE id = $1) - $5)
		ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value,
		updated_at = excluded.updated_at, seq = excluded.seq`
	qWorkingDelete = `DELETE FROM working_memory WHERE session_id = $1 AND key = $2`
	qMarkDone      = `WITH u AS (UPDATE inbox SET state = 'done', done_at = COALESCE(done_at, $1)
		WHERE id = ANY($2) AND ($3 = 0 OR session_id = $3) RETURNING 1)
	SELECT CASE WHEN (SELECT count(*) FROM u) = $4 THEN 0 ELSE agentd_refuse('no such inbox item') END`
	// A usage row's agent defaults to its session's, its payer to its
	// agent.
	qInsUsage = `INSERT INTO usage (session_id, agent, model, input_tokens, output_tokens, cost_usd, ts, payer, account)
		SELECT u.sess, a.agent, u.model, u.input, u.output, u.cost, u.ts, COALESCE(NULLIF(u.payer, ''), a.agent), u.account
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::float8[], $7::bigint[], $8::text[], $9::text[])
			AS u(sess, agent, model, input, output, cost, ts, payer, account),
		LATERAL (SELECT COALESCE(NULLIF(u.agent, ''), (SELECT agent FROM sessions WHERE id = u.sess), '') AS agent) a`
	// An inbox item, or the one its idempotency key names already (read
	// in the same statement when it was stored before this transaction).
	qEnqueue = `WITH ins AS (
		INSERT INTO inbox (session_id, kind, silent, text, source, origin, idem_key, state, created_at, options, images, hops)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9, $10, $11)
		ON CONFLICT (session_id, idem_key) WHERE idem_key <> '' DO NOTHING
		RETURNING id)
	SELECT id, false FROM ins
	UNION ALL
	SELECT id, true FROM inbox WHERE session_id = $1 AND idem_key = $7 AND idem_key <> '' AND NOT EXISTS (SELECT 1 FROM ins)`
	qInsSession = `INSERT INTO sessions (agent, key, state, last_seq, created_at, updated_at)
		VALUES ($1, $2, 'created', 0, $3, $3) ON CONFLICT (agent, key) DO NOTHING RETURNING id`
	qUpsertAgent = `INSERT INTO agents (id, name, type, definition, updated_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO UPDATE SET name = excluded.name, type = excluded.type,
		definition = excluded.definition, updated_at = excluded.updated_at`
)

// Commit writes b in one transaction and waits until it is durable. It
// assigns the events consecutive sequence numbers after the session's last
// one and writes them back into b.Events, together with the session id and,
// where it was zero, the commit time. A batch without events may still set
// the state, mark inbox items done and record usage.
//
// A batch with a session also sets the session's updated_at. Event
// payloads (Data) must not be changed while Commit runs, nor, if ctx ends
// first, until the write has happened. On an error other than ctx's,
// nothing of b is written; on any error b is unchanged.
func (s *Store) Commit(ctx context.Context, b *store.Batch) error {
	r, err := commitRequest(ctx, b)
	if r == nil {
		return err
	}
	if err := s.send(ctx, r); err != nil {
		return err
	}
	if r.err == nil {
		copy(b.Events, r.events)
	}
	return r.err
}

// CommitAsync hands b to the writer now, behind every write handed over
// before it, and returns a function that waits until b is durable (or
// failed) and returns the result, as Commit would. Writes to one session
// handed over by one goroutine become durable in the order it handed them
// over. The
// returned function must be called exactly once; b's events get their Seq
// when it returns nil.
func (s *Store) CommitAsync(ctx context.Context, b *store.Batch) func() error {
	// Once handed over, the write happens whatever becomes of ctx.
	r, err := commitRequest(context.WithoutCancel(ctx), b)
	if r == nil {
		return func() error { return err }
	}
	if err := s.hand(ctx, r); err != nil {
		return func() error { return err }
	}
	return func() error {
		<-r.reply
		if r.err == nil {
			copy(b.Events, r.events)
		}
		return r.err
	}
}

// commitRequest checks b and copies it into a request; a nil request with
// a nil error means there is nothing to write.
func commitRequest(ctx context.Context, b *store.Batch) (*request, error) {
	if b == nil {
		return nil, fmt.Errorf("postgres: commit: %w: nil batch", ErrInvalid)
	}
	if err := store.CheckBatch(b); err != nil {
		return nil, fmt.Errorf("postgres: commit: %w: %v", ErrInvalid, err)
	}
	for i := range b.Events {
		if b.Events[i].Kind == event.WorkingMemory {
			if _, err := store.CheckWorking(b.Events[i].Data); err != nil {
				return nil, fmt.Errorf("postgres: commit: %w: %v", ErrInvalid, err)
			}
		}
	}
	if b.Session == 0 && len(b.Done) == 0 && len(b.Usage) == 0 {
		return nil, nil // nothing to write
	}
	r := newRequest(ctx, opCommit)
	r.session, r.state, r.epoch = b.Session, b.State, b.Epoch
	r.events = slices.Clone(b.Events)
	r.done = slices.Clone(b.Done)
	r.usage = slices.Clone(b.Usage)
	for i := range r.events {
		if e := &r.events[i]; e.Kind == event.Input {
			if r.title = store.InputTitle(e.Data); r.title != "" {
				break
			}
		}
	}
	return r, nil
}

// commitSteps are the statements of a commit request; node is this
// node's id, for the fence of a batch with an epoch.
func commitSteps(r *request, node string, now int64) []step {
	var ss []step
	if r.session != 0 && r.epoch != 0 {
		ss = append(ss, step{
			sql:  qFence,
			args: []any{r.session, node, r.epoch},
			read: func(br pgx.BatchResults) error {
				var zero int64
				err := br.QueryRow().Scan(&zero)
				if refused(err) {
					return fmt.Errorf("postgres: commit: session %d at epoch %d: %w", r.session, r.epoch, store.ErrFenced)
				}
				if err != nil {
					return fmt.Errorf("postgres: commit: session %d: lease: %w", r.session, classify(err))
				}
				return nil
			},
		})
	}
	if r.session != 0 {
		n := len(r.events)
		turns, kinds, times := make([]int64, n), make([]string, n), make([]int64, n)
		datas, searches := make([][]byte, n), make([]*string, n)
		for i := range r.events {
			e := &r.events[i]
			e.Session = r.session
			if e.Time.IsZero() {
				e.Time = time.Unix(0, now).UTC()
			}
			turns[i], kinds[i], times[i] = e.Turn, string(e.Kind), e.Time.UnixNano()
			if len(e.Data) > 0 {
				datas[i] = e.Data
			}
			if indexed(e.Kind) {
				if v := tsvector(e.Data); v != "" {
					searches[i] = &v
				}
			}
		}
		ss = append(ss, step{
			sql:  qCommitSession,
			args: []any{r.session, int64(n), now, r.state, r.title, turns, kinds, times, datas, searches},
			read: func(br pgx.BatchResults) error {
				var last int64
				err := br.QueryRow().Scan(&last)
				if refused(err) {
					return fmt.Errorf("postgres: commit: session %d: %w", r.session, store.ErrNotFound)
				}
				if err != nil {
					return fmt.Errorf("postgres: commit: session %d: %w", r.session, classify(err))
				}
				for i := range r.events {
					r.events[i].Seq = last - int64(n) + int64(i) + 1
				}
				return nil
			},
		})
		if n > 0 {
			ss = append(ss, notifyEvents(r.session))
		}
		for i := range r.events {
			e := &r.events[i]
			if e.Kind != event.WorkingMemory {
				continue
			}
			d, _ := store.CheckWorking(e.Data) // checked by commitRequest
			st := step{sql: qWorkingDelete, args: []any{r.session, d.Key}}
			if !d.Deleted {
				st = step{sql: qWorkingSet, args: []any{r.session, d.Key, []byte(d.Value), e.Time.UnixNano(), int64(n - 1 - i)}}
			}
			st.read = execRead("working memory")
			ss = append(ss, st)
		}
	}
	if len(r.done) > 0 {
		ids := slices.Clone(r.done)
		slices.Sort(ids)
		ids = slices.Compact(ids)
		ss = append(ss, step{
			sql:  qMarkDone,
			args: []any{now, ids, r.session, len(ids)},
			read: func(br pgx.BatchResults) error {
				var zero int64
				err := br.QueryRow().Scan(&zero)
				if refused(err) {
					return fmt.Errorf("postgres: commit: inbox items %v of session %d: %w", ids, r.session, store.ErrNotFound)
				}
				if err != nil {
					return fmt.Errorf("postgres: commit: inbox items: %w", classify(err))
				}
				return nil
			},
		})
	}
	if len(r.usage) > 0 {
		n := len(r.usage)
		sess, agents, models := make([]int64, n), make([]string, n), make([]string, n)
		in, out, cost, ts := make([]int64, n), make([]int64, n), make([]float64, n), make([]int64, n)
		payers, accounts := make([]string, n), make([]string, n)
		for i, u := range r.usage {
			sess[i], agents[i], models[i] = u.Session, u.Agent, u.Model
			payers[i], accounts[i] = u.Payer, u.Account
			if sess[i] == 0 {
				sess[i] = r.session
			}
			in[i], out[i], cost[i], ts[i] = int64(u.InputTokens), int64(u.OutputTokens), u.CostUSD, now
			if !u.Time.IsZero() {
				ts[i] = u.Time.UnixNano()
			}
		}
		ss = append(ss, step{sql: qInsUsage, args: []any{sess, agents, models, in, out, cost, ts, payers, accounts}, read: execRead("usage")})
	}
	return ss
}

// execRead reads a statement's result that says nothing but success.
func execRead(what string) func(br pgx.BatchResults) error {
	return func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("postgres: commit: %s: %w", what, classify(err))
		}
		return nil
	}
}

// enqueueSteps is the statement of an enqueue request.
func enqueueSteps(r *request, now int64) []step {
	it := &r.item
	created := now
	if !it.CreatedAt.IsZero() {
		created = it.CreatedAt.UnixNano()
	}
	var images []byte // NULL when there are none
	if len(it.Images) > 0 {
		images, _ = json.Marshal(it.Images) // checked by Enqueue
	}
	var opts []byte
	if len(it.Options) > 0 {
		opts = it.Options
	}
	return []step{{
		sql: qEnqueue,
		args: []any{it.Session, string(it.Kind), it.Silent, []byte(it.Text), it.Source, it.Origin, it.IdempotencyKey,
			created, opts, images, int64(it.Hops)},
		read: func(br pgx.BatchResults) error {
			var id int64
			var dup bool
			err := br.QueryRow().Scan(&id, &dup)
			if errors.Is(err, pgx.ErrNoRows) {
				// The key was taken by a transaction that committed after
				// this statement began (another node's): nothing was
				// written; Enqueue applies it again.
				r.err = fmt.Errorf("postgres: enqueue: %w", errKeyRaced)
				return nil
			}
			if err != nil {
				return fmt.Errorf("postgres: enqueue: session %d: %w", it.Session, classify(err))
			}
			it.ID, r.duplicate = id, dup
			if !dup {
				it.State, it.CreatedAt = store.InboxPending, time.Unix(0, created).UTC()
			}
			return nil
		},
	}, notifyInbox(it.Session)}
}

// errKeyRaced is an enqueue whose idempotency key another transaction
// took after the enqueue's statement began: applied again, it finds that
// item.
var errKeyRaced = errors.New("idempotency key taken meanwhile")

// Enqueue persists a pending inbox item and returns it with its id (the
// turn id). If the session already has an item with the same non-empty
// IdempotencyKey, it returns that item with duplicate = true and writes
// nothing. item.State is ignored; a zero CreatedAt becomes now.
func (s *Store) Enqueue(ctx context.Context, item store.InboxItem) (store.InboxItem, bool, error) {
	switch {
	case item.Session <= 0:
		return store.InboxItem{}, false, fmt.Errorf("postgres: enqueue: %w: session id %d", ErrInvalid, item.Session)
	case item.Kind != event.Input && item.Kind != event.SystemMessage && item.Kind != event.Reset && item.Kind != event.CompactRequest:
		return store.InboxItem{}, false, fmt.Errorf("postgres: enqueue: %w: kind %q, want %q, %q, %q or %q",
			ErrInvalid, item.Kind, event.Input, event.SystemMessage, event.Reset, event.CompactRequest)
	case item.Hops < 0:
		return store.InboxItem{}, false, fmt.Errorf("postgres: enqueue: %w: hops %d", ErrInvalid, item.Hops)
	}
	if len(item.Images) > 0 {
		if _, err := json.Marshal(item.Images); err != nil {
			return store.InboxItem{}, false, fmt.Errorf("postgres: enqueue: %w: images: %v", ErrInvalid, err)
		}
	}
	if s.isDown.Load() {
		return store.InboxItem{}, false, store.ErrClosed
	}
	if err := s.reach(ctx); err != nil {
		return store.InboxItem{}, false, fmt.Errorf("postgres: enqueue: %w", err)
	}
	if item.IdempotencyKey != "" {
		// Most duplicates are redeliveries of something stored long ago:
		// answer them without queueing for the writer.
		it, err := s.inboxByKey(ctx, item.Session, item.IdempotencyKey)
		if err == nil {
			return it, true, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return store.InboxItem{}, false, err
		}
	}
	for try := 0; ; try++ {
		r := newRequest(ctx, opEnqueue)
		r.item = item
		if err := s.send(ctx, r); err != nil {
			return store.InboxItem{}, false, err
		}
		if try == 0 && errors.Is(r.err, errKeyRaced) {
			continue
		}
		if r.err != nil {
			return store.InboxItem{}, false, r.err
		}
		if r.duplicate {
			it, err := s.InboxItem(ctx, r.item.ID)
			return it, true, err
		}
		return r.item, false, nil
	}
}

// Session returns the session agent/key, creating it in state created if
// it does not exist. Concurrent callers for a new address (on any node)
// all get the same session; exactly one of them sees created = true.
func (s *Store) Session(ctx context.Context, agent, key string) (store.Session, bool, error) {
	switch {
	case agent == "" || key == "":
		return store.Session{}, false, fmt.Errorf("postgres: session: %w: empty agent or key (%q, %q)", ErrInvalid, agent, key)
	case strings.Contains(agent, "/"):
		return store.Session{}, false, fmt.Errorf("postgres: session: %w: agent id %q contains '/'", ErrInvalid, agent)
	}
	if s.isDown.Load() {
		return store.Session{}, false, store.ErrClosed
	}
	for {
		sess, err := s.SessionByAddress(ctx, agent, key)
		if err == nil {
			return sess, false, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return store.Session{}, false, err
		}
		now := time.Now().UnixNano()
		var id int64
		err = s.pool.QueryRow(ctx, qInsSession, agent, key, now).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // made meanwhile by another caller: read it
		}
		if err != nil {
			return store.Session{}, false, s.readErr("session", err)
		}
		t := time.Unix(0, now).UTC()
		return store.Session{ID: id, Agent: agent, Key: key, State: store.StateCreated, CreatedAt: t, UpdatedAt: t}, true, nil
	}
}

// SaveAgent records an agent definition, replacing any earlier one with the
// same id. A zero UpdatedAt becomes now.
func (s *Store) SaveAgent(ctx context.Context, a store.AgentRecord) error {
	if a.ID == "" {
		return fmt.Errorf("postgres: save agent: %w: empty id", ErrInvalid)
	}
	if len(a.Definition) > 0 && !json.Valid(a.Definition) {
		return fmt.Errorf("postgres: save agent %q: %w: definition is not valid JSON", a.ID, ErrInvalid)
	}
	if s.isDown.Load() {
		return store.ErrClosed
	}
	ts := time.Now().UnixNano()
	if !a.UpdatedAt.IsZero() {
		ts = a.UpdatedAt.UnixNano()
	}
	var def []byte
	if len(a.Definition) > 0 {
		def = a.Definition
	}
	if _, err := s.pool.Exec(ctx, qUpsertAgent, a.ID, a.Name, a.Type, def, ts); err != nil {
		return s.readErr(fmt.Sprintf("save agent %q", a.ID), err)
	}
	return nil
}
