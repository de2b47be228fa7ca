// Package postgres is agentd's store on PostgreSQL: store.Store and the
// optional abilities the SQLite store has (history search and working
// memory, usage reports, titles, readiness), on a database several agentd
// nodes can share (jackc/pgx).
//
// Writes that must keep their order — Commit, CommitAsync, Enqueue — go
// through writer goroutines (Options.Writers), each session's to one of
// them, which commit concurrent requests as a group: a writer takes the
// first waiting request, drains what is already queued (up to
// Options.MaxBatch), sends them all in one round trip as one transaction
// and commits once, so that many sessions share each commit's WAL flush;
// while one writer waits for its flush the others send theirs. A request the group cannot apply (a
// session that does not exist, an inbox item of another session, a value
// PostgreSQL refuses) rolls the group back, and its requests are then
// applied one by one, each in its own transaction, so that only the
// failing one fails. A session's requests handed over by one goroutine
// are committed in the order they were handed over (CommitAsync relies on
// it); requests of different sessions may be committed in either order.
//
// Sequence numbers: a commit increments its session's last_seq and
// inserts the events numbered below the new value in one statement; the
// row lock on the session orders concurrent writers (of this node or
// another), so a session's sequence numbers are gapless whoever writes.
//
// Cancellation is as in the SQLite store: a write whose ctx ends while it
// waits returns ctx.Err(), but a request the writer has already taken may
// still be committed; a caller that must know reads back.
//
// The schema is versioned (table agentd_schema) and migrated on Open under
// an advisory lock. History search uses PostgreSQL's full-text search: see
// SearchHistory.
//
// The connection string is never logged or shown with its password
// (Redact); prefer a password from the environment (Options.Password from
// the variable store.password_env names, or PGPASSWORD) or a passfile.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"agentd/internal/store"
)

var (
	_ store.Store        = (*Store)(nil)
	_ store.HistoryStore = (*Store)(nil)
	_ store.OpsStore     = (*Store)(nil)
)

// ErrInUse is returned by Open for a database another agentd node has
// open: until nodes coordinate (who runs which session's turns), one node
// uses a database at a time.
var ErrInUse = errors.New("the database is in use by another agentd node")

// ErrInvalid is store.ErrInvalid.
var ErrInvalid = store.ErrInvalid

// Defaults.
const (
	DefaultMaxBatch         = 256
	DefaultPoolSize         = 10
	DefaultStatementTimeout = 30 * time.Second
	DefaultWriters          = 4
)

// Options configure a Store. The zero value (or nil) gives the defaults.
type Options struct {
	// Logger receives migration and write-failure messages; nil discards them.
	Logger *slog.Logger
	// Password, when set, is the password to connect with, in place of
	// one in the connection string, PGPASSWORD or the passfile.
	Password string
	// PoolSize is the most connections the store opens (default
	// DefaultPoolSize); the writer uses one at a time.
	PoolSize int
	// StatementTimeout bounds each statement on the server (default
	// DefaultStatementTimeout; negative for none).
	StatementTimeout time.Duration
	// MaxBatch caps the requests committed in one transaction (default
	// DefaultMaxBatch).
	MaxBatch int
	// Writers is the number of writer goroutines, each committing its
	// groups on a connection of its own while the others' commits are in
	// flight; a session's writes all go to one, in order (default
	// DefaultWriters, at most PoolSize - 1).
	Writers int
}

// WriterStats counts the writer's work since Open.
type WriterStats struct {
	Commits      int64 // transactions committed
	Requests     int64 // requests handled
	LargestGroup int64 // the most requests committed in one transaction
	Retried      int64 // groups rolled back and applied one request at a time
}

// Store is a store.Store on a PostgreSQL database. It is safe for
// concurrent use.
type Store struct {
	log  *slog.Logger
	pool *pgxpool.Pool
	name string // the connection string without its password, for messages
	// node holds the node's lock on the database (nodeLock) for as long
	// as the store is open; the lock goes with the connection, so a node
	// that dies releases it.
	node *pgx.Conn

	mu     sync.RWMutex // guards closed and sends on reqs
	closed bool
	reqs   []chan *request // one per writer; a session's requests go to one
	wg     sync.WaitGroup  // the writers
	isDown atomic.Bool     // set once Close starts; lets reads report ErrClosed

	stats struct {
		commits, requests, largest, retried atomic.Int64
	}
}

// Open connects to the database that connString names (a postgres:// URL
// or key=value string, as libpq takes), applies pending migrations and
// starts the writer. ctx bounds the opening only.
func Open(ctx context.Context, connString string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case o.MaxBatch < 0:
		return nil, fmt.Errorf("postgres: open: negative MaxBatch %d", o.MaxBatch)
	case o.MaxBatch == 0:
		o.MaxBatch = DefaultMaxBatch
	}
	switch {
	case o.PoolSize < 0:
		return nil, fmt.Errorf("postgres: open: negative pool size %d", o.PoolSize)
	case o.PoolSize == 0:
		o.PoolSize = DefaultPoolSize
	}
	switch {
	case o.Writers < 0:
		return nil, fmt.Errorf("postgres: open: negative Writers %d", o.Writers)
	case o.Writers == 0:
		o.Writers = DefaultWriters
	}
	o.Writers = max(1, min(o.Writers, o.PoolSize-1))
	if o.StatementTimeout == 0 {
		o.StatementTimeout = DefaultStatementTimeout
	}
	name := Redact(connString)
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		// pgx's parse errors redact the password themselves.
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	cfg.MaxConns = int32(min(o.PoolSize, 1<<20))
	configure(cfg.ConnConfig, &o)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open %s: %w", name, err)
	}
	s := &Store{log: o.Logger, pool: pool, name: name}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open %s: %w", name, err)
	}
	if err := migrate(ctx, pool, migrations(), s.log); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open %s: %w", name, err)
	}
	if s.node, err = lockNode(ctx, cfg.ConnConfig); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open %s: %w", name, err)
	}
	s.reqs = make([]chan *request, o.Writers)
	for i := range s.reqs {
		s.reqs[i] = make(chan *request, o.MaxBatch)
		w := &writer{s: s}
		s.wg.Go(func() { w.run(s.reqs[i], o.MaxBatch) })
	}
	return s, nil
}

// ConnConfig returns the connection settings of connString with o's
// password and statement timeout, for another part of agentd (long-term
// memory) to open connections to the store's database as the store does.
func ConnConfig(connString string, o *Options) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.StatementTimeout == 0 {
		opts.StatementTimeout = DefaultStatementTimeout
	}
	configure(cfg, &opts)
	return cfg, nil
}

// configure applies o's password and statement timeout to cfg, and names
// agentd as the application unless the connection string does.
func configure(cfg *pgx.ConnConfig, o *Options) {
	if o.Password != "" {
		cfg.Password = o.Password
	}
	if o.StatementTimeout > 0 {
		cfg.RuntimeParams["statement_timeout"] = strconv.FormatInt(o.StatementTimeout.Milliseconds(), 10)
	}
	if cfg.RuntimeParams["application_name"] == "" {
		cfg.RuntimeParams["application_name"] = "agentd"
	}
}

// Name returns the connection string the store was opened with, without
// its password.
func (s *Store) Name() string { return s.name }

// Close finishes the writes already queued, stops the writer and closes
// the connections. Calls after Close return store.ErrClosed; Close itself
// may be called more than once.
func (s *Store) Close() error {
	s.isDown.Store(true)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for _, c := range s.reqs {
		close(c)
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.pool.Close()
	if err := s.node.Close(context.Background()); err != nil {
		return fmt.Errorf("postgres: close: %w", err)
	}
	return nil
}

// nodeLock is the advisory lock a node holds on its database.
const nodeLock = 0x61676e746402

// lockWait is how long lockNode waits for the lock: a node killed a
// moment ago holds it until its server process notices the connection
// is gone.
const lockWait = 5 * time.Second

// lockNode takes the node's lock on a connection of its own, or fails
// with ErrInUse when another node holds it for longer than lockWait.
func lockNode(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(lockWait)
	for {
		var ok bool
		if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(nodeLock)).Scan(&ok); err != nil {
			c.Close(ctx)
			return nil, err
		}
		if ok {
			return c, nil
		}
		if time.Now().After(deadline) {
			c.Close(ctx)
			return nil, ErrInUse
		}
		select {
		case <-ctx.Done():
			c.Close(ctx)
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stats returns the writer's counters.
func (s *Store) Stats() WriterStats {
	return WriterStats{
		Commits:      s.stats.commits.Load(),
		Requests:     s.stats.requests.Load(),
		LargestGroup: s.stats.largest.Load(),
		Retried:      s.stats.retried.Load(),
	}
}

// Redact returns a connection string with its password replaced by
// "xxxxx", for messages: a postgres:// URL's user info, or a key=value
// string's password.
func Redact(connString string) string {
	if strings.HasPrefix(connString, "postgres://") || strings.HasPrefix(connString, "postgresql://") {
		u, err := url.Parse(connString)
		if err != nil {
			return "postgres://(a connection string that does not parse)"
		}
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	var out []string
	for _, f := range strings.Fields(connString) {
		if k, _, ok := strings.Cut(f, "="); ok && strings.EqualFold(strings.TrimSpace(k), "password") {
			f = "password=xxxxx"
		}
		out = append(out, f)
	}
	return strings.Join(out, " ")
}

// HasPassword reports whether a connection string holds a password.
func HasPassword(connString string) bool {
	return Redact(connString) != connString
}

// readErr wraps a read error, reporting store.ErrClosed if the store was
// closed underneath the read.
func (s *Store) readErr(op string, err error) error {
	if s.isDown.Load() {
		return fmt.Errorf("postgres: %s: %w", op, store.ErrClosed)
	}
	return fmt.Errorf("postgres: %s: %w", op, classify(err))
}

// classify marks errors a caller may act on: values PostgreSQL refuses
// to store are store.ErrInvalid, a full disk store.ErrFull.
func classify(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrFull) {
		return err
	}
	switch {
	case pe.Code == "53100" || pe.Code == "53400": // disk_full, configuration_limit_exceeded
		return fmt.Errorf("%w: %w", store.ErrFull, err)
	case strings.HasPrefix(pe.Code, "22"): // data exception: a bad byte, a value out of range
		return fmt.Errorf("%w: %w", store.ErrInvalid, err)
	case pe.Code == "23503": // foreign_key_violation: a session that does not exist
		return fmt.Errorf("%w: %w", store.ErrNotFound, err)
	}
	return err
}
