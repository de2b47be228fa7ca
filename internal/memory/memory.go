// Package memory is agentd's long-term memory: what an agent keeps between
// sessions, and how it finds it again.
//
// Memories follow the knowledge-graph model of the MCP memory server:
// entities (a person, a project, a place; unique by name within a scope)
// carry observations (short facts about them) and are linked by typed,
// directed relations. Free-form insights (a lesson, a preference, a
// summary) stand on their own, with optional tags. Every memory records its
// provenance, the session and turn that wrote it, and when.
//
// A scope is an agent's id; the scope Shared holds memories several agents
// may read and write. Recall searches one scope, and Shared as well when
// asked.
//
// Recall is hybrid. The query runs against an FTS5 index (BM25) and, when an
// embedder is configured, against an in-memory flat index of the memories'
// embeddings (cosine similarity of unit vectors). The two rankings (top 50
// each) are fused by reciprocal rank fusion, weighted by a recency decay
// (half-life Options.HalfLife), and re-ranked by maximal marginal relevance
// so that near-duplicates give way to different memories.
//
// Embedding happens in the background: Remember writes the memory and marks
// it pending in the same transaction, and the loop in Run embeds pending
// memories in batches, so a turn never waits for an embedder. When there is
// no embedder, it fails, or most memories are still waiting for one, recall
// uses BM25 alone and says so (Recall.Degraded, Options.OnStatus).
//
// The memories live in their own SQLite database file (WAL mode, one
// writer connection and a pool of readers). Its write-ahead log and index
// stay, emptied, when it closes, so that it opens on a full disk. A Store
// made by New opens its database when first used: a node that never
// recalls or remembers anything holds none of it, and until the first
// memory is written no file exists and recall finds nothing.
package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sqlitedrv "modernc.org/sqlite" // also registers the "sqlite" database/sql driver

	"agentd/internal/vector"
)

// Shared is the scope of memories shared between agents.
const Shared = "shared"

// Kinds of recalled item.
const (
	KindEntity      = "entity"
	KindObservation = "observation"
	KindInsight     = "insight"
)

// Defaults.
const (
	DefaultHalfLife     = 30 * 24 * time.Hour
	DefaultK            = 10
	MaxK                = 100
	DefaultQueryTimeout = 3 * time.Second

	DefaultMinSimilarity = 0.2
)

// Errors returned by the Store.
var (
	ErrClosed   = errors.New("memory: store closed")
	ErrNotFound = errors.New("not found")
	ErrInvalid  = errors.New("invalid input")
	// ErrUnavailable: the database could not be opened (Options.OnUnavailable
	// was told why); the Store stays so until it is made again.
	ErrUnavailable = errors.New("long-term memory is unavailable: its database could not be opened")
)

// errEmpty: a read found no database file, so nothing to read.
var errEmpty = errors.New("no memories")

// Embedder turns texts into unit-length vectors, one per text, in order.
// agentd's embedders (package embed) satisfy it.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Dim() int
	Name() string
}

// Options configure a Store. nil gives the defaults.
type Options struct {
	// Logger receives background failures; nil discards them.
	Logger *slog.Logger
	// Embedder embeds memories and queries; nil means recall is BM25 only.
	Embedder Embedder
	// HalfLife is the age at which a memory's recency weight halves;
	// default DefaultHalfLife.
	HalfLife time.Duration
	// OnStatus is called when recall switches between hybrid and BM25 only
	// (degraded), with the reason. It is called from the goroutine that
	// noticed the change and must not call back into the Store.
	OnStatus func(degraded bool, reason string)
	// Now is the clock that stamps new memories and ages them for recall;
	// nil means time.Now.
	Now func() time.Time
	// QueryTimeout bounds embedding a recall query; default
	// DefaultQueryTimeout. Past it, recall falls back to BM25.
	QueryTimeout time.Duration
	// MinSimilarity is the cosine similarity below which a memory is not
	// a vector match for a query; default DefaultMinSimilarity, negative
	// for none.
	MinSimilarity float64
	// BatchSize is how many memories the embedding loop embeds per call;
	// default 64.
	BatchSize int
	// OnUnavailable is called once, with the reason, if a Store made by
	// New fails to open its database; nil: only the logger is told.
	OnUnavailable func(error)
}

// Store is a long-term memory database. It is safe for concurrent use.
type Store struct {
	log      *slog.Logger
	emb      Embedder
	model    string
	halfLife time.Duration
	onStatus func(bool, string)
	now      func() time.Time
	qTimeout time.Duration
	batch    int
	minSim   float64

	path, uri     string
	onUnavailable func(error)

	// omu serialises opening the databases, which happens once: opened
	// is closed then, or openErr set. Lock order: omu, then wmu.
	omu     sync.Mutex
	opened  chan struct{}
	openErr error

	wdb *sql.DB // one connection: all writes; set once opened
	rdb *sql.DB // read-only pool; set once opened
	idx index   // the keyword index of the database

	// stmts are recall's statements, prepared on first use (recall.go):
	// an FTS5 query costs more to prepare than to run. Closed by Close.
	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt
	empty  emptyScopes // scopes recall found empty (recall.go)

	// wmu serialises writes with the in-memory index updates that follow
	// them, so a vector added by the embedding loop and a Forget of the
	// same item cannot interleave.
	wmu sync.Mutex

	imu   sync.RWMutex
	index map[string]*vector.Index // by scope

	backlog atomic.Int64 // items waiting for an embedding
	wake    chan struct{}
	done    chan struct{} // closed by Close
	closing atomic.Bool
	once    sync.Once

	smu      sync.Mutex
	degraded bool
	reason   string
	down     error // the embedder's last failure, nil when it works
}

// Open opens (creating if needed) the memory database at path, applies
// pending migrations and loads the stored vectors into memory. ctx bounds
// the opening only; the embedding loop runs in Run.
func Open(ctx context.Context, path string, o *Options) (*Store, error) {
	s, err := New(path, o)
	if err != nil {
		return nil, err
	}
	if err := s.openNow(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// New returns a Store of the memory database at path that opens it (as
// Open does) when first used: a write creates it, a read opens it if the
// file exists and otherwise finds nothing. If opening fails, every call
// returns an error wrapping ErrUnavailable; Options.OnUnavailable is told
// why, once. New itself does no I/O.
func New(path string, o *Options) (*Store, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("memory: open: %q: want a file path", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("memory: open: %w", err)
	}
	s := build(o)
	s.path = abs
	s.uri = "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(abs))
	s.refreshStatus()
	return s, nil
}

// build makes a Store with o's settings (nil: the defaults), its
// database still to open.
func build(o *Options) *Store {
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.HalfLife <= 0 {
		opt.HalfLife = DefaultHalfLife
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.QueryTimeout <= 0 {
		opt.QueryTimeout = DefaultQueryTimeout
	}
	switch {
	case opt.MinSimilarity == 0:
		opt.MinSimilarity = DefaultMinSimilarity
	case opt.MinSimilarity < 0:
		opt.MinSimilarity = -1
	}
	if opt.BatchSize <= 0 {
		opt.BatchSize = 64
	}
	s := &Store{
		log: opt.Logger, emb: opt.Embedder, halfLife: opt.HalfLife, onStatus: opt.OnStatus,
		now: opt.Now, qTimeout: opt.QueryTimeout, batch: opt.BatchSize, minSim: opt.MinSimilarity,
		onUnavailable: opt.OnUnavailable,
		index:         make(map[string]*vector.Index), idx: ftsIndex{},
		opened: make(chan struct{}),
		wake:   make(chan struct{}, 1), done: make(chan struct{}),
	}
	if s.emb != nil {
		s.model = s.emb.Name()
	}
	return s
}

// use opens the databases if they are not open yet. A read (create false)
// of a database that does not exist gets errEmpty and creates nothing.
func (s *Store) use(ctx context.Context, create bool) error {
	select {
	case <-s.opened:
		return s.check()
	default:
	}
	s.omu.Lock()
	defer s.omu.Unlock()
	select {
	case <-s.opened:
		return s.check()
	default:
	}
	if err := s.check(); err != nil {
		return err
	}
	if s.openErr != nil {
		return ErrUnavailable
	}
	if !create {
		if _, err := os.Stat(s.path); errors.Is(err, fs.ErrNotExist) {
			return errEmpty
		}
	}
	// Opening is not the caller's alone (others wait for it): it ends
	// whether or not the caller goes away.
	if err := s.openLocked(context.WithoutCancel(ctx)); err != nil {
		s.openErr = err
		if s.onUnavailable != nil {
			s.onUnavailable(err)
		}
		return ErrUnavailable
	}
	return nil
}

// openNow opens the databases at once, returning why it failed.
func (s *Store) openNow(ctx context.Context) error {
	s.omu.Lock()
	defer s.omu.Unlock()
	return s.openLocked(ctx)
}

// openLocked opens the databases; omu is held.
func (s *Store) openLocked(ctx context.Context) error {
	// Memories are private: only the owner may read the database. SQLite
	// gives the -wal and -shm files the database file's mode.
	f, err := os.OpenFile(s.path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("memory: open: %w", err)
	}
	f.Close()
	if err := s.open(ctx, s.uri); err != nil {
		s.closeDBs()
		s.wdb, s.rdb = nil, nil
		return err
	}
	s.refreshStatus()
	close(s.opened)
	return nil
}

func (s *Store) open(ctx context.Context, uri string) error {
	wdb, err := sql.Open("sqlite", uri+"?_pragma=busy_timeout(5000)"+
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(on)"+
		"&_pragma=journal_size_limit(67108864)&_pragma=temp_store(memory)&_txlock=immediate")
	if err != nil {
		return fmt.Errorf("memory: open: %w", err)
	}
	s.wdb = wdb
	wdb.SetMaxOpenConns(1)
	wdb.SetMaxIdleConns(1)
	wdb.SetConnMaxLifetime(0)
	wdb.SetConnMaxIdleTime(0)
	var mode string
	if err := wdb.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("memory: open: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("memory: open: journal mode is %q, not wal", mode)
	}
	if err := keepWAL(ctx, wdb); err != nil {
		return fmt.Errorf("memory: open: keep the write-ahead log: %w", err)
	}
	if err := migrate(ctx, wdb, migrations()); err != nil {
		return fmt.Errorf("memory: open: %w", err)
	}
	// Readers as the main store keeps them (see its readerPragmas): each
	// caches at most 2 MiB of pages (~4 MB of memory), at most four of
	// them, closed (and their caches freed) after a minute unused.
	rdb, err := sql.Open("sqlite", uri+"?_pragma=busy_timeout(5000)&_pragma=query_only(1)&_pragma=cache_size(-2048)")
	if err != nil {
		return fmt.Errorf("memory: open: %w", err)
	}
	s.rdb = rdb
	n := min(max(2, runtime.NumCPU()), 4)
	rdb.SetMaxOpenConns(n)
	rdb.SetMaxIdleConns(n)
	rdb.SetConnMaxIdleTime(time.Minute)
	if err := rdb.PingContext(ctx); err != nil {
		return fmt.Errorf("memory: open: %w", err)
	}
	if err := s.load(ctx); err != nil {
		return fmt.Errorf("memory: open: %w", err)
	}
	return nil
}

// load brings an opened database's vectors into memory (redoing those of
// another embedder) and counts what waits for one.
func (s *Store) load(ctx context.Context) error {
	if s.emb != nil {
		if err := s.requeueOtherModels(ctx); err != nil {
			return err
		}
		if err := s.loadVectors(ctx); err != nil {
			return err
		}
	}
	var pending int64
	if err := s.rdb.QueryRowContext(ctx, "SELECT count(*) FROM pending").Scan(&pending); err != nil {
		return err
	}
	s.backlog.Store(pending)
	return nil
}

// keepWAL has the write-ahead log and its shared-memory index kept (the
// log emptied) when the database closes, rather than deleted and made
// again at the next open, as the main store does: opening then needs no
// space, so that agentd on a full disk starts with its long-term memory.
// It is the setting of the writer's one connection, which stays open
// (wdb keeps it idle, never closing it) and closes last (closeDBs).
func keepWAL(ctx context.Context, wdb *sql.DB) error {
	conn, err := wdb.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		fc, ok := dc.(sqlitedrv.FileControl)
		if !ok {
			return errors.New("the driver cannot keep the write-ahead log")
		}
		_, err := fc.FileControlPersistWAL("main", 1)
		return err
	})
}

// requeueOtherModels drops vectors made by another embedder than the
// configured one and marks their items pending again.
func (s *Store) requeueOtherModels(ctx context.Context) error {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO pending (key) SELECT key FROM vectors WHERE model <> ? ON CONFLICT DO NOTHING`, s.model); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM vectors WHERE model <> ?`, s.model); err != nil {
		return err
	}
	return tx.Commit()
}

// itemScope joins an item key (column k) to its row's scope and
// embeddable text.
const itemJoin = `
	LEFT JOIN entities e ON (k & 3) = 1 AND e.id = (k >> 2)
	LEFT JOIN observations o ON (k & 3) = 2 AND o.id = (k >> 2)
	LEFT JOIN entities oe ON oe.id = o.entity_id
	LEFT JOIN insights i ON (k & 3) = 3 AND i.id = (k >> 2)`

const itemScope = `coalesce(e.scope, oe.scope, i.scope)`

const itemText = `CASE k & 3
	WHEN 1 THEN e.name || CASE WHEN e.type <> '' THEN ' (' || e.type || ')' ELSE '' END
	WHEN 2 THEN oe.name || ': ' || o.text
	ELSE i.text || CASE WHEN i.tags <> '' THEN ' [' || i.tags || ']' ELSE '' END END`

func (s *Store) loadVectors(ctx context.Context) error {
	rows, err := s.rdb.QueryContext(ctx, `SELECT k, `+itemScope+`, v.vec FROM (SELECT key AS k, vec FROM vectors) v `+itemJoin)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var key int64
		var scope sql.NullString
		var blob []byte
		if err := rows.Scan(&key, &scope, &blob); err != nil {
			return err
		}
		if !scope.Valid {
			continue
		}
		v, err := vector.Decode(blob)
		if err != nil {
			s.log.Warn("memory: skipping a stored vector", "key", key, "err", err)
			continue
		}
		s.addVector(scope.String, key, v)
	}
	return rows.Err()
}

// addVector puts v into the scope's index.
func (s *Store) addVector(scope string, key int64, v []float32) {
	s.imu.Lock()
	x := s.index[scope]
	if x == nil {
		x = vector.NewIndex(len(v))
		s.index[scope] = x
	}
	s.imu.Unlock()
	if err := x.Add(key, v); err != nil {
		s.log.Warn("memory: vector not indexed", "key", key, "err", err)
	}
}

func (s *Store) removeVectors(scope string, keys []int64) {
	s.imu.RLock()
	x := s.index[scope]
	s.imu.RUnlock()
	if x == nil {
		return
	}
	for _, k := range keys {
		x.Remove(k)
	}
}

func (s *Store) indexed() int {
	s.imu.RLock()
	defer s.imu.RUnlock()
	n := 0
	for _, x := range s.index {
		n += x.Len()
	}
	return n
}

// Close closes the database; Run returns. Calls after Close return
// ErrClosed. Close may be called more than once.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		s.closing.Store(true)
		close(s.done)
		s.omu.Lock() // let an opening finish
		defer s.omu.Unlock()
		s.wmu.Lock() // let a write in progress finish
		defer s.wmu.Unlock()
		err = s.closeDBs()
	})
	return err
}

func (s *Store) closeDBs() error {
	var errs []error
	s.stmtMu.Lock()
	for _, st := range s.stmts {
		errs = append(errs, st.Close())
	}
	s.stmts = nil
	s.stmtMu.Unlock()
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close())
	}
	if s.wdb != nil {
		errs = append(errs, s.wdb.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("memory: close: %w", err)
	}
	return nil
}

func (s *Store) check() error {
	if s.closing.Load() {
		return ErrClosed
	}
	return nil
}

// dbErr wraps err with op, reporting ErrClosed if the store was closed
// underneath.
func (s *Store) dbErr(op string, err error) error {
	if s.closing.Load() {
		return fmt.Errorf("memory: %s: %w", op, ErrClosed)
	}
	return fmt.Errorf("memory: %s: %w", op, err)
}

func (s *Store) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Status reports whether recall is degraded to BM25 only, and why.
func (s *Store) Status() (degraded bool, reason string) {
	s.smu.Lock()
	defer s.smu.Unlock()
	return s.degraded, s.reason
}

// health decides whether recall may use the vector index: there is an
// embedder, it is not known to be failing, and the memories waiting for an
// embedding are no more than one batch or than those already embedded.
func (s *Store) health() (degraded bool, reason string) {
	if s.emb == nil {
		return true, "no embedder configured: recall uses keyword search only"
	}
	s.smu.Lock()
	down := s.down
	s.smu.Unlock()
	if down != nil {
		return true, "embedder unavailable: " + down.Error()
	}
	if b, n := s.backlog.Load(), int64(s.indexed()); b > int64(s.batch) && b > n {
		return true, fmt.Sprintf("embeddings catching up: %d of %d memories pending", b, b+n)
	}
	return false, ""
}

// refreshStatus recomputes the status and calls OnStatus on a transition.
func (s *Store) refreshStatus() {
	d, r := s.health()
	s.smu.Lock()
	defer s.smu.Unlock()
	changed := d != s.degraded
	s.degraded, s.reason = d, r
	if changed && s.onStatus != nil {
		s.onStatus(d, r)
	}
	if changed {
		if d {
			s.log.Warn("memory: recall degraded to keyword search", "reason", r)
		} else {
			s.log.Info("memory: hybrid recall available")
		}
	}
}

func (s *Store) setDown(err error) {
	s.smu.Lock()
	s.down = err
	s.smu.Unlock()
	s.refreshStatus()
}
