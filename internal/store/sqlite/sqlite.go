// Package sqlite is agentd's single-node store: store.Store on an embedded
// SQLite database (modernc.org/sqlite, pure Go).
//
// The database runs in WAL mode with synchronous=FULL by default, so a write
// that Commit has acknowledged survives a crash or power loss. All writes go
// through one writer goroutine that owns the only write connection and
// commits concurrent requests as a group: it takes the first waiting request,
// drains whatever else is already queued (up to Options.MaxBatch), runs them
// all in one transaction and commits once; if one fails, the transaction is
// rolled back and the group run again with each request in its own
// savepoint, so that the failing one is rolled back alone. Many sessions
// therefore share each fsync, and durability costs latency, not throughput.
// Reads use a separate pool of read-only connections and never wait for the
// writer.
//
// Cancellation: a write (Commit, Enqueue, Session creating a session,
// SaveAgent) waits for the writer. If ctx ends while it waits, the call
// returns ctx.Err(), but a request the writer has already accepted may still
// be written, durably, afterwards; the writer only skips requests whose ctx
// has ended by the time it reaches them. A caller that must know reads back
// (SessionByID, Events, InboxItem).
//
// The schema is versioned (PRAGMA user_version) and migrated on Open. The
// text of input, system_message and text events is indexed in an FTS5 table
// for BM25 search (see SearchText).
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sqlitedrv "modernc.org/sqlite" // also registers the "sqlite" database/sql driver

	"agentd/internal/store"
)

var _ store.Store = (*Store)(nil)

// Synchronous modes accepted in Options.
const (
	SyncFull   = "full"   // fsync the WAL on every commit: committed writes survive power loss
	SyncNormal = "normal" // fsync only at checkpoints: committed writes survive a process crash, not power loss
)

// DefaultMaxBatch is the default number of requests committed in one transaction.
const DefaultMaxBatch = 256

// Options configure a Store. The zero value (or nil) gives the defaults.
type Options struct {
	// Synchronous is SyncFull (the default) or SyncNormal.
	Synchronous string
	// Logger receives migration and write-failure messages; nil discards them.
	Logger *slog.Logger
	// MaxBatch caps the requests committed in one transaction (default
	// DefaultMaxBatch).
	MaxBatch int
}

// WriterStats counts the writer's work since Open.
type WriterStats struct {
	Commits      int64 // transactions committed
	Requests     int64 // requests handled (commits, enqueues, session creations, agent saves)
	LargestGroup int64 // the most requests committed in one transaction
	// Guarded counts the groups applied a second time, each request in a
	// savepoint of its own, because one of them failed; a group whose
	// requests all succeed is applied once, without savepoints.
	Guarded int64
}

// Store is a store.Store on one SQLite database file. It is safe for
// concurrent use.
type Store struct {
	log *slog.Logger

	wdb   *sql.DB   // the write connection's pool (one connection)
	wconn *sql.Conn // owned by the writer goroutine after Open
	w     *writer
	rdb   *sql.DB // read-only pool
	r     readStmts

	mu     sync.RWMutex // guards closed and sends on reqs
	closed bool
	reqs   chan *request
	done   chan struct{} // closed when the writer goroutine has ended
	isDown atomic.Bool   // set once Close starts; lets reads report ErrClosed

	pool sync.Pool // of *request

	nextInbox atomic.Int64 // the last inbox id handed out

	// syncFull: the store runs with synchronous=FULL, where a group of
	// lazy requests commits without a sync; synced is the number of the
	// last group known durable (see EnqueueLazy).
	syncFull bool
	synced   atomic.Uint64

	opened time.Time // when Open opened the store: the node's start (Nodes)

	// The disk, as writes find it (see Writable): full since a write
	// failed for lack of space and until one commits.
	dir      string // the database's directory
	full     atomic.Bool
	probeMu  sync.Mutex // guards probed and probeErr, the last failed probe
	probed   time.Time
	probeErr error

	stats struct {
		commits, requests, largest, guarded atomic.Int64
	}

	leadMu      sync.Mutex       // guards leads and leadsClosed (once.go)
	leads       map[string]*lead // by role
	leadsClosed bool
}

// Open opens (creating if needed) the database at path, applies pending
// migrations and starts the writer. ctx bounds the opening only.
func Open(ctx context.Context, path string, opts *Options) (*Store, error) {
	return open(ctx, path, opts, nil)
}

// open is Open with a hook the writer calls after taking the first request
// of each group and before draining the rest (tests use it to form groups
// deterministically).
func open(ctx context.Context, path string, opts *Options, hook func()) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	switch strings.ToLower(o.Synchronous) {
	case "", SyncFull:
		o.Synchronous = "FULL"
	case SyncNormal:
		o.Synchronous = "NORMAL"
	default:
		return nil, fmt.Errorf("sqlite: open: synchronous %q: want %q or %q", o.Synchronous, SyncFull, SyncNormal)
	}
	if o.MaxBatch < 0 {
		return nil, fmt.Errorf("sqlite: open: negative MaxBatch %d", o.MaxBatch)
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("sqlite: open: %q: want a file path", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	// The database holds every conversation: only its owner may read it.
	// SQLite gives the -wal and -shm files the database file's mode.
	f, err := os.OpenFile(abs, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	f.Close()
	uri := "file:" + uriPath(abs)

	s := &Store{log: o.Logger, dir: filepath.Dir(abs), syncFull: o.Synchronous == "FULL", opened: time.Now().UTC()}
	s.pool.New = func() any { return &request{reply: make(chan struct{}, 1), early: make(chan earlyResult, 1)} }
	if err := s.openWriter(ctx, uri, o); err != nil {
		s.closeDBs()
		return nil, err
	}
	if err := s.openReaders(ctx, uri); err != nil {
		s.closeDBs()
		return nil, err
	}
	s.reqs = make(chan *request, o.MaxBatch)
	s.done = make(chan struct{})
	go s.w.run(s.reqs, s.done, o.MaxBatch, hook)
	return s, nil
}

// uriPath escapes the characters that have a meaning in an SQLite URI.
func uriPath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(p))
}

func (s *Store) openWriter(ctx context.Context, uri string, o Options) error {
	dsn := uri + "?_pragma=busy_timeout(5000)" +
		"&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(" + o.Synchronous + ")" +
		"&_pragma=foreign_keys(on)" +
		"&_pragma=journal_size_limit(67108864)" +
		"&_pragma=cache_size(-2048)" +
		"&_pragma=temp_store(memory)" +
		"&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	s.wdb = db
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	s.wconn = conn
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("sqlite: open: journal mode is %q, not wal", mode)
	}
	// The write-ahead log and its shared-memory index are kept (the log
	// emptied) when the store closes, rather than deleted and made again
	// at the next open: opening then needs no space, so that agentd
	// starts, reads and says what is wrong on a full disk.
	if err := conn.Raw(func(dc any) error {
		fc, ok := dc.(sqlitedrv.FileControl)
		if !ok {
			return errors.New("the driver cannot keep the write-ahead log")
		}
		_, err := fc.FileControlPersistWAL("main", 1)
		return err
	}); err != nil {
		return fmt.Errorf("sqlite: open: keep the write-ahead log: %w", err)
	}
	if err := migrate(ctx, conn, migrations(), s.log); err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	w, err := newWriter(ctx, conn, s)
	if err != nil {
		return fmt.Errorf("sqlite: open: %w", err)
	}
	s.w = w
	return nil
}

func (s *Store) openReaders(ctx context.Context, uri string) error {
	db, err := sql.Open("sqlite", uri+"?"+readerPragmas)
	if err != nil {
		return fmt.Errorf("sqlite: open readers: %w", err)
	}
	s.rdb = db
	n := readers()
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxIdleTime(readerIdle)
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlite: open readers: %w", err)
	}
	s.r.prepare(db)
	return nil
}

// Close finishes the writes already queued, stops the writer and closes the
// database. Calls after Close return store.ErrClosed; Close itself may be
// called more than once.
func (s *Store) Close() error {
	s.isDown.Store(true)
	s.releaseLeads()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.reqs)
	s.mu.Unlock()
	<-s.done
	return s.closeDBs()
}

// The read pool. Every connection of it holds its own page cache, which
// grows as pages are read up to cache_size and is allocated in slots of
// twice a page's size: 2 MiB of cache is ~4 MB of memory. Beyond a few
// MiB a cache gains little (a history search over a million messages took
// 8.7-10.3 ms with 1 MiB, 8.3-10.1 ms with 8) while a busy node's caches
// all fill, so they are kept small, the pool at most four connections
// whatever the number of CPUs, and a connection idle for readerIdle is
// closed (its cache with it) and made again when needed.
const (
	readerPragmas = "_pragma=busy_timeout(5000)&_pragma=query_only(1)&_pragma=cache_size(-2048)"
	readerIdle    = time.Minute
)

// readers is the size of a read pool: the CPUs, at least two and at most
// four.
func readers() int { return min(max(2, runtime.NumCPU()), 4) }

// closeDBs closes the readers first so that the writer's connection is the
// last one and checkpoints the WAL into the database file.
func (s *Store) closeDBs() error {
	var errs []error
	s.r.close()
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.close())
	}
	if s.wconn != nil {
		errs = append(errs, s.wconn.Close())
	}
	if s.wdb != nil {
		errs = append(errs, s.wdb.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// Stats returns the writer's counters.
func (s *Store) Stats() WriterStats {
	return WriterStats{
		Commits:      s.stats.commits.Load(),
		Requests:     s.stats.requests.Load(),
		LargestGroup: s.stats.largest.Load(),
		Guarded:      s.stats.guarded.Load(),
	}
}

// IntegrityCheck runs PRAGMA integrity_check and returns its report: "ok"
// when the database is sound, otherwise the problems found, one a line.
func (s *Store) IntegrityCheck(ctx context.Context) (string, error) {
	if s.isDown.Load() {
		return "", store.ErrClosed
	}
	rows, err := s.rdb.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return "", s.readErr("integrity check", err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			return "", s.readErr("integrity check", err)
		}
		lines = append(lines, l)
	}
	if err := rows.Err(); err != nil {
		return "", s.readErr("integrity check", err)
	}
	return strings.Join(lines, "\n"), nil
}

// readErr wraps a read error, reporting store.ErrClosed if the store was
// closed underneath the read.
func (s *Store) readErr(op string, err error) error {
	if s.isDown.Load() {
		return fmt.Errorf("sqlite: %s: %w", op, store.ErrClosed)
	}
	return fmt.Errorf("sqlite: %s: %w", op, err)
}
