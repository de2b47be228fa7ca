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
// Nodes: every Store is a node in the registry (agentd_nodes, nodes.go)
// with a heartbeat, and takes session leases (agentd_leases, lease.go):
// a commit with a lease epoch is fenced in its own transaction
// (store.ErrFenced). Close gives the node's leases up.
//
// Extension rows (extension.go) are changed outside the writers, each
// change in a transaction of its own under the row's advisory lock, and
// announced to every node on ExtensionsChannel.
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

// ErrInvalid is store.ErrInvalid.
var ErrInvalid = store.ErrInvalid

// Defaults.
const (
	DefaultMaxBatch         = 256
	DefaultPoolSize         = 10
	DefaultStatementTimeout = 30 * time.Second
	DefaultWriters          = 4
	DefaultRetryFor         = 30 * time.Second
	// DefaultConnectTimeout bounds a connection attempt when the
	// connection string sets no connect_timeout.
	DefaultConnectTimeout = 5 * time.Second
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
	// RetryFor is how long a writer retries a group of writes it cannot
	// send because the database cannot be reached (default
	// DefaultRetryFor; negative: it fails them at once). Meanwhile the
	// group and the writes queued behind it wait in memory, at most
	// MaxBatch per writer, and new writes wait for room.
	RetryFor time.Duration
	// Writers is the number of writer goroutines, each committing its
	// groups on a connection of its own while the others' commits are in
	// flight; a session's writes all go to one, in order (default
	// DefaultWriters, at most PoolSize - 1).
	Writers int
	// NodeName, NodeAddr and Version describe this node in the node
	// registry (agentd nodes): default the host's name, "" and "".
	NodeName, NodeAddr, Version string
	// LeaseTTL is how long a session's lease lasts unless renewed: a
	// dead node's sessions are taken over by another that long after its
	// last heartbeat (default DefaultLeaseTTL). Leases are renewed every
	// LeaseTTL/3, with the heartbeat if that is sooner.
	LeaseTTL time.Duration
	// Heartbeat is how often the node writes its heartbeat (default
	// DefaultHeartbeat).
	Heartbeat time.Duration
	// Succeeds, when set, is the id of a node this one replaces and knows
	// dead (the previous process on the same data directory, whose lock
	// is free): Open gives its leases up and removes it from the
	// registry, so that its sessions resume at once rather than after
	// the lease TTL.
	Succeeds string
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
	// nodeID is this node's id in the registry (agentd_nodes), random per
	// Open; ttl its leases' TTL. stopBeat ends the heartbeat, beats.
	nodeID   string
	ttl      time.Duration
	stopBeat chan struct{}
	beatOnce sync.Once
	beats    sync.WaitGroup

	connCfg  *pgx.ConnConfig // for connections of its own (the listener)
	own      *pids           // the pool's connections, to tell this node's notifications
	fan      *fanout         // what the listener follows (listen.go)
	extWatch extWatchers     // told of extension changes by the listener

	leads       leads         // TryLead's, released at Close
	retryFor    time.Duration // Options.RetryFor
	unreachable atomic.Bool   // a writer cannot reach the database (reach.go)

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
	if o.RetryFor == 0 {
		o.RetryFor = DefaultRetryFor
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.NodeName == "" {
		o.NodeName = hostName()
	}
	name := Redact(connString)
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		// pgx's parse errors redact the password themselves.
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	cfg.MaxConns = int32(min(o.PoolSize, 1<<20))
	configure(cfg.ConnConfig, &o)
	own := newPIDs()
	cfg.AfterConnect, cfg.BeforeClose = own.connected, own.closed
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open %s: %w", name, err)
	}
	s := &Store{log: o.Logger, pool: pool, name: name, connCfg: cfg.ConnConfig.Copy(), own: own, fan: newFanout(o.Writers),
		retryFor: o.RetryFor, nodeID: newNodeID(), ttl: o.LeaseTTL, stopBeat: make(chan struct{})}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open %s: %w", name, err)
	}
	if err := migrate(ctx, pool, migrations(), s.log); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open %s: %w", name, err)
	}
	if err := s.register(ctx, &o); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open %s: %w", name, err)
	}
	if o.Succeeds != "" {
		if err := s.forget(ctx, o.Succeeds); err != nil {
			pool.Close()
			return nil, fmt.Errorf("postgres: open %s: %w", name, err)
		}
	}
	s.beats.Go(func() { s.beat(s.stopBeat, min(o.Heartbeat, o.LeaseTTL/3)) })
	s.reqs = make([]chan *request, o.Writers)
	for i := range s.reqs {
		s.reqs[i] = make(chan *request, o.MaxBatch)
		w := &writer{s: s, i: i}
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

// configure applies o's password and statement timeout to cfg, bounds a
// connection attempt (DefaultConnectTimeout) unless the connection string
// does, and names agentd as the application unless the connection string
// does.
func configure(cfg *pgx.ConnConfig, o *Options) {
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
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

// Close finishes the writes already queued, stops the writer, gives up
// the node's leases (other nodes take its sessions at once) and leaves the
// registry, and closes the connections. Calls after Close return
// store.ErrClosed; Close itself may be called more than once.
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
	s.leads.releaseAll()
	s.wg.Wait()
	s.stopHeartbeat()
	if err := s.leave(); err != nil {
		// The leases expire by themselves: other nodes take the sessions
		// after the TTL rather than at once.
		s.log.Warn("could not give up the node's leases", "err", err)
	}
	s.pool.Close()
	return nil
}

// stopHeartbeat ends the heartbeat and waits for it.
func (s *Store) stopHeartbeat() {
	s.beatOnce.Do(func() { close(s.stopBeat) })
	s.beats.Wait()
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
	if errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrFull) || errors.Is(err, store.ErrUnavailable) {
		return err
	}
	if !errors.As(err, &pe) {
		if lost(err) {
			return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
		}
		return err
	}
	switch {
	case strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03":
		// connection exception; the server shutting down or starting
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	case pe.Code == "53100" || pe.Code == "53400": // disk_full, configuration_limit_exceeded
		return fmt.Errorf("%w: %w", store.ErrFull, err)
	case strings.HasPrefix(pe.Code, "22"): // data exception: a bad byte, a value out of range
		return fmt.Errorf("%w: %w", store.ErrInvalid, err)
	case pe.Code == "23503": // foreign_key_violation: a session that does not exist
		return fmt.Errorf("%w: %w", store.ErrNotFound, err)
	}
	return err
}
