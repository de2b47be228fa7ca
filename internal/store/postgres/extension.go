package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"agentd/internal/store"
)

var (
	_ store.ExtensionStore   = (*Store)(nil)
	_ store.ExtensionWatcher = (*Store)(nil)
)

// ExtensionsChannel carries "<type>/<name>" from every change of an
// extension row, sent in the change's transaction: the listeners of every
// node (this one's too) tell their ExtensionWatcher.
const ExtensionsChannel = "agentd_extensions"

// schemaExtensions holds the extension rows and every change of them, as
// in SQLite: a row per (type, name), its spec compact JSON text, and a
// history row per change keyed by the row's version, which stays when the
// row is deleted. Types and names are ordered byte by byte (COLLATE "C"),
// as SQLite orders them, whatever the database's collation; the primary
// key's index serves a listing in that order. Times are unix nanoseconds.
const schemaExtensions = `
CREATE TABLE agentd_extensions (
	type       text COLLATE "C" NOT NULL,
	name       text COLLATE "C" NOT NULL,
	spec       text NOT NULL,
	enabled    boolean NOT NULL,
	version    bigint NOT NULL,
	provenance text NOT NULL,
	seed_hash  text NOT NULL DEFAULT '',
	created_at bigint NOT NULL,
	created_by text NOT NULL,
	updated_at bigint NOT NULL,
	updated_by text NOT NULL,
	PRIMARY KEY (type, name)
);

CREATE TABLE agentd_extension_history (
	type       text COLLATE "C" NOT NULL,
	name       text COLLATE "C" NOT NULL,
	version    bigint NOT NULL,
	op         text NOT NULL,
	spec       text NOT NULL,
	enabled    boolean NOT NULL,
	provenance text NOT NULL,
	changed_by text NOT NULL,
	changed_at bigint NOT NULL,
	PRIMARY KEY (type, name, version)
);
`

// extLock is the first key of the advisory locks (the two-key form, whose
// keys never meet the one-key form's of migrations and leaders) under
// which a row is changed: its second key is hashtext("type/name"). The
// lock orders the changes of a row that does not exist yet, which no row
// lock can; two rows whose hashes collide only wait for each other.
const extLock = 0x65787431 // "ext1"

const (
	extCols  = `type, name, spec, enabled, version, provenance, seed_hash, created_at, created_by, updated_at, updated_by`
	qExts    = `SELECT ` + extCols + ` FROM agentd_extensions ORDER BY type, name`
	qExtsOf  = `SELECT ` + extCols + ` FROM agentd_extensions WHERE type = $1 ORDER BY name`
	qExt     = `SELECT ` + extCols + ` FROM agentd_extensions WHERE type = $1 AND name = $2`
	qExtLock = `SELECT pg_advisory_xact_lock($1::int4, hashtext($2))`
	// qExtHead is what a change of a row needs to know, read after the
	// row's lock (a statement of its own, so that it reads what the lock's
	// previous holder committed): the row (version 0 when there is none)
	// and the last version in its history.
	qExtHead = `SELECT coalesce(e.version, 0), coalesce(e.spec, ''), coalesce(e.enabled, false), coalesce(e.provenance, ''),
		coalesce(e.created_at, 0), coalesce(e.created_by, ''),
		coalesce((SELECT max(version) FROM agentd_extension_history WHERE type = $1 AND name = $2), 0)
	FROM (SELECT 1) one LEFT JOIN agentd_extensions e ON e.type = $1 AND e.name = $2`
	qExtUpsert = `INSERT INTO agentd_extensions (` + extCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
	ON CONFLICT (type, name) DO UPDATE SET spec = excluded.spec, enabled = excluded.enabled, version = excluded.version,
		provenance = excluded.provenance, seed_hash = excluded.seed_hash, updated_at = excluded.updated_at,
		updated_by = excluded.updated_by`
	qExtDelete  = `DELETE FROM agentd_extensions WHERE type = $1 AND name = $2`
	qExtHistIns = `INSERT INTO agentd_extension_history (type, name, version, op, spec, enabled, provenance, changed_by, changed_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`
	qExtHistory = `SELECT version, op, spec, enabled, provenance, changed_by, changed_at FROM agentd_extension_history
	WHERE type = $1 AND name = $2 ORDER BY version`
	qNotifyExt = `SELECT pg_notify('agentd_extensions', $1)`
)

// Extensions lists the extension rows of a type ("" for every type),
// ordered by type, then name.
func (s *Store) Extensions(ctx context.Context, typ string) ([]store.Extension, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	var rows pgx.Rows
	var err error
	if typ == "" {
		rows, err = s.pool.Query(ctx, qExts)
	} else {
		rows, err = s.pool.Query(ctx, qExtsOf, typ)
	}
	if err != nil {
		return nil, s.readErr("extensions", err)
	}
	defer rows.Close()
	out, err := store.Collect(rows, func(r store.Rows) (store.Extension, error) { return scanExtension(r) })
	if err != nil {
		return nil, s.readErr("extensions", err)
	}
	return out, nil
}

// Extension returns one extension row, or store.ErrNotFound.
func (s *Store) Extension(ctx context.Context, typ, name string) (store.Extension, error) {
	if s.isDown.Load() {
		return store.Extension{}, store.ErrClosed
	}
	e, err := scanExtension(s.pool.QueryRow(ctx, qExt, typ, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return e, fmt.Errorf("postgres: extension %s/%s: %w", typ, name, store.ErrNotFound)
	}
	if err != nil {
		return e, s.readErr("extension", err)
	}
	return e, nil
}

// ExtensionHistory returns a row's changes, oldest first, or
// store.ErrNotFound if the row never existed.
func (s *Store) ExtensionHistory(ctx context.Context, typ, name string) ([]store.ExtensionChange, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	rows, err := s.pool.Query(ctx, qExtHistory, typ, name)
	if err != nil {
		return nil, s.readErr("extension history", err)
	}
	defer rows.Close()
	var out []store.ExtensionChange
	for rows.Next() {
		var c store.ExtensionChange
		var at int64
		if err := rows.Scan(&c.Version, &c.Op, &c.Spec, &c.Enabled, &c.Provenance, &c.By, &at); err != nil {
			return nil, s.readErr("extension history", err)
		}
		c.At = time.Unix(0, at).UTC()
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("extension history", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("postgres: extension history %s/%s: %w", typ, name, store.ErrNotFound)
	}
	return out, nil
}

// PutExtension writes e as its row's next version, appends the change to
// its history and notifies every node (ExtensionsChannel), in one
// transaction under the row's lock (see store.ExtensionStore). A bad row
// is ErrInvalid; a row not at ifVersion is store.ErrConflict, and nothing
// is written.
func (s *Store) PutExtension(ctx context.Context, e store.Extension, op string, ifVersion int64) (store.Extension, error) {
	e, err := store.ExtensionWrite(e, op, ifVersion)
	if err != nil {
		return store.Extension{}, fmt.Errorf("postgres: put extension: %w: %v", ErrInvalid, err)
	}
	var out store.Extension
	err = s.changeExtension(ctx, e.Type, e.Name, func(b *pgx.Batch, h extHead, now int64) error {
		v, err := store.ExtensionVersion(h.version, h.last, ifVersion)
		if err != nil {
			return err
		}
		created, createdBy := now, e.UpdatedBy
		if h.version > 0 {
			created, createdBy = h.createdAt, h.createdBy
		}
		b.Queue(qExtUpsert, e.Type, e.Name, string(e.Spec), e.Enabled, v, e.Provenance, e.SeedHash, created, createdBy, now, e.UpdatedBy)
		b.Queue(qExtHistIns, e.Type, e.Name, v, op, string(e.Spec), e.Enabled, e.Provenance, e.UpdatedBy, now)
		b.Queue(qNotifyExt, e.Type+"/"+e.Name)
		out = e
		out.Version, out.CreatedAt, out.CreatedBy, out.UpdatedAt = v, time.Unix(0, created).UTC(), createdBy, time.Unix(0, now).UTC()
		return nil
	})
	if err != nil {
		return store.Extension{}, fmt.Errorf("postgres: put extension %s/%s: %w", e.Type, e.Name, err)
	}
	return out, nil
}

// DeleteExtension removes a row, appends an ExtDelete change by by to its
// history and notifies every node, in one transaction under the row's
// lock. The change records the row as it was (its spec, enabled state and
// provenance) at the version after the row's last, which a row made again
// goes on from.
func (s *Store) DeleteExtension(ctx context.Context, typ, name, by string, ifVersion int64) error {
	if err := store.CheckExtensionKey(typ, name); err != nil {
		return fmt.Errorf("postgres: delete extension: %w: %v", ErrInvalid, err)
	}
	if ifVersion < store.AnyVersion || by == "" {
		return fmt.Errorf("postgres: delete extension %s/%s: %w: expected version %d by %q", typ, name, ErrInvalid, ifVersion, by)
	}
	err := s.changeExtension(ctx, typ, name, func(b *pgx.Batch, h extHead, now int64) error {
		if h.version == 0 {
			return store.ErrNotFound
		}
		v, err := store.ExtensionVersion(h.version, h.last, ifVersion)
		if err != nil {
			return err
		}
		b.Queue(qExtDelete, typ, name)
		b.Queue(qExtHistIns, typ, name, v, store.ExtDelete, h.spec, h.enabled, h.provenance, by, now)
		b.Queue(qNotifyExt, typ+"/"+name)
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: delete extension %s/%s: %w", typ, name, err)
	}
	return nil
}

// extHead is a row as a change finds it.
type extHead struct {
	version, last    int64 // the row's version (0: none), its history's last
	spec, provenance string
	enabled          bool
	createdAt        int64
	createdBy        string
}

// changeExtension changes a row in a transaction that holds the row's
// lock, in two round trips: the first begins it, takes the lock and reads
// the row as it is under the lock; change then queues the statements of
// the change on b (or returns why not), and the second sends them and
// commits. Anything else rolls the transaction back.
func (s *Store) changeExtension(ctx context.Context, typ, name string, change func(b *pgx.Batch, h extHead, now int64) error) error {
	if s.isDown.Load() {
		return store.ErrClosed
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.changeErr(err)
	}
	// A connection left inside a transaction (a round trip cut short) is
	// closed by the pool rather than reused.
	defer conn.Release()
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(qExtLock, int32(extLock), typ+"/"+name)
	b.Queue(qExtHead, typ, name)
	br := conn.SendBatch(ctx, b)
	var h extHead
	_, err = br.Exec()
	if err == nil {
		_, err = br.Exec()
	}
	if err == nil {
		err = br.QueryRow().Scan(&h.version, &h.spec, &h.enabled, &h.provenance, &h.createdAt, &h.createdBy, &h.last)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		err = s.changeErr(err)
	} else {
		b = &pgx.Batch{}
		if err = change(b, h, time.Now().UnixNano()); err == nil {
			b.Queue("COMMIT")
			if err = conn.SendBatch(ctx, b).Close(); err != nil {
				err = s.changeErr(err)
			}
		}
	}
	if err != nil && !conn.Conn().PgConn().IsClosed() {
		// After a COMMIT that failed there is nothing to roll back; a
		// ROLLBACK that cannot be sent leaves the connection to the pool
		// to close.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultConnectTimeout)
		_, _ = conn.Exec(rctx, "ROLLBACK")
		cancel()
	}
	return err
}

// changeErr is the error of a change that failed in the database.
func (s *Store) changeErr(err error) error {
	if s.isDown.Load() {
		return store.ErrClosed
	}
	return classify(err)
}

func scanExtension(row pgx.Row) (store.Extension, error) {
	var e store.Extension
	var created, updated int64
	err := row.Scan(&e.Type, &e.Name, &e.Spec, &e.Enabled, &e.Version, &e.Provenance, &e.SeedHash,
		&created, &e.CreatedBy, &updated, &e.UpdatedBy)
	if err != nil {
		return store.Extension{}, err
	}
	e.CreatedAt, e.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	return e, nil
}

// WatchExtensions registers f to be called by the store's listener
// (Listen) with a row's type and name after any node (this one included)
// changed it, and with "", "" each time the listener connects, the first
// time included: notifications sent while it was not connected are lost,
// so every row is to be read again. Call it before Listen; f is called
// from the listener's goroutine and must return quickly.
func (s *Store) WatchExtensions(f func(typ, name string)) { s.extWatch.add(f) }

// extWatchers are the functions WatchExtensions registered.
type extWatchers struct {
	mu sync.Mutex
	fs []func(typ, name string)
}

func (w *extWatchers) add(f func(typ, name string)) {
	w.mu.Lock()
	w.fs = append(w.fs, f)
	w.mu.Unlock()
}

// changed tells every watcher of a change ("", "": of any row).
func (w *extWatchers) changed(typ, name string) {
	w.mu.Lock()
	fs := w.fs
	w.mu.Unlock()
	for _, f := range fs {
		f(typ, name)
	}
}

// parseExtensionPayload reads an ExtensionsChannel payload.
func parseExtensionPayload(p string) (typ, name string, err error) {
	typ, name, ok := strings.Cut(p, "/")
	if !ok || typ == "" || name == "" {
		return "", "", fmt.Errorf("postgres: notification %q on %s: want <type>/<name>", p, ExtensionsChannel)
	}
	return typ, name, nil
}
