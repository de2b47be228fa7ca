package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"agentd/internal/store"
)

var _ store.ExtensionStore = (*Store)(nil)

// schemaExtensions holds the extension rows and every change of them.
//
// agentd_extensions is a row per (type, name), its spec compact JSON
// text. agentd_extension_history is a row per change, keyed by the row's
// version: a row's history stays when the row is deleted, and a row made
// again goes on from its last version. A change writes both tables in one
// transaction, so the history always ends at the row's version.
// Times are unix nanoseconds, as everywhere else.
const schemaExtensions = `
CREATE TABLE agentd_extensions (
	type       TEXT NOT NULL,
	name       TEXT NOT NULL,
	spec       TEXT NOT NULL,
	enabled    INTEGER NOT NULL,
	version    INTEGER NOT NULL,
	provenance TEXT NOT NULL,
	seed_hash  TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	created_by TEXT NOT NULL,
	updated_at INTEGER NOT NULL,
	updated_by TEXT NOT NULL,
	PRIMARY KEY (type, name)
);

CREATE TABLE agentd_extension_history (
	type       TEXT NOT NULL,
	name       TEXT NOT NULL,
	version    INTEGER NOT NULL,
	op         TEXT NOT NULL,
	spec       TEXT NOT NULL,
	enabled    INTEGER NOT NULL,
	provenance TEXT NOT NULL,
	changed_by TEXT NOT NULL,
	changed_at INTEGER NOT NULL,
	PRIMARY KEY (type, name, version)
);`

const (
	extCols = `type, name, spec, enabled, version, provenance, seed_hash, created_at, created_by, updated_at, updated_by`
	qExts   = `SELECT ` + extCols + ` FROM agentd_extensions ORDER BY type, name`
	qExtsOf = `SELECT ` + extCols + ` FROM agentd_extensions WHERE type = ? ORDER BY name`
	qExt    = `SELECT ` + extCols + ` FROM agentd_extensions WHERE type = ? AND name = ?`
	// qExtHead is what a write of a row needs to know: the row (its
	// version 0 when there is none) and the last version in its history.
	qExtHead = `SELECT coalesce(e.version, 0), coalesce(e.spec, ''), coalesce(e.enabled, 0), coalesce(e.provenance, ''),
		coalesce(e.created_at, 0), coalesce(e.created_by, ''),
		coalesce((SELECT max(version) FROM agentd_extension_history WHERE type = ?1 AND name = ?2), 0)
	FROM (SELECT 1) LEFT JOIN agentd_extensions e ON e.type = ?1 AND e.name = ?2`
	qExtUpsert = `INSERT INTO agentd_extensions (` + extCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (type, name) DO UPDATE SET spec = excluded.spec, enabled = excluded.enabled, version = excluded.version,
		provenance = excluded.provenance, seed_hash = excluded.seed_hash, updated_at = excluded.updated_at,
		updated_by = excluded.updated_by`
	qExtDelete  = `DELETE FROM agentd_extensions WHERE type = ? AND name = ?`
	qExtHistIns = `INSERT INTO agentd_extension_history (type, name, version, op, spec, enabled, provenance, changed_by, changed_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qExtHistory = `SELECT version, op, spec, enabled, provenance, changed_by, changed_at FROM agentd_extension_history
	WHERE type = ? AND name = ? ORDER BY version`
)

// Extensions lists the extension rows of a type ("" for every type),
// ordered by type, then name.
func (s *Store) Extensions(ctx context.Context, typ string) ([]store.Extension, error) {
	if s.isDown.Load() {
		return nil, store.ErrClosed
	}
	var rows *sql.Rows
	var err error
	if typ == "" {
		rows, err = s.rdb.QueryContext(ctx, qExts)
	} else {
		rows, err = s.rdb.QueryContext(ctx, qExtsOf, typ)
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
	e, err := scanExtension(s.rdb.QueryRowContext(ctx, qExt, typ, name))
	if errors.Is(err, sql.ErrNoRows) {
		return e, fmt.Errorf("sqlite: extension %s/%s: %w", typ, name, store.ErrNotFound)
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
	rows, err := s.rdb.QueryContext(ctx, qExtHistory, typ, name)
	if err != nil {
		return nil, s.readErr("extension history", err)
	}
	defer rows.Close()
	var out []store.ExtensionChange
	for rows.Next() {
		var c store.ExtensionChange
		var at int64
		if err := rows.Scan(&c.Version, &c.Op, (*[]byte)(&c.Spec), &c.Enabled, &c.Provenance, &c.By, &at); err != nil {
			return nil, s.readErr("extension history", err)
		}
		c.At = time.Unix(0, at).UTC()
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("extension history", err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("sqlite: extension history %s/%s: %w", typ, name, store.ErrNotFound)
	}
	return out, nil
}

// PutExtension writes e as its row's next version and appends the change
// to its history, in one transaction of the writer (see
// store.ExtensionStore). A bad row is ErrInvalid; a row not at ifVersion
// is store.ErrConflict, and nothing is written.
func (s *Store) PutExtension(ctx context.Context, e store.Extension, op string, ifVersion int64) (store.Extension, error) {
	e, err := store.ExtensionWrite(e, op, ifVersion)
	if err != nil {
		return store.Extension{}, fmt.Errorf("sqlite: put extension: %w: %v", ErrInvalid, err)
	}
	r := s.getRequest(ctx, opExtPut)
	r.ext, r.extOp, r.ifVersion = e, op, ifVersion
	if err := s.send(ctx, r); err != nil {
		return store.Extension{}, err
	}
	out, err := r.ext, r.err
	s.putRequest(r)
	return out, err
}

// DeleteExtension removes a row and appends an ExtDelete change by by to
// its history, in one transaction of the writer. The change records the
// row as it was (its spec, enabled state and provenance) at the version
// after the row's last, which a row made again goes on from.
func (s *Store) DeleteExtension(ctx context.Context, typ, name, by string, ifVersion int64) error {
	if err := store.CheckExtensionKey(typ, name); err != nil {
		return fmt.Errorf("sqlite: delete extension: %w: %v", ErrInvalid, err)
	}
	if ifVersion < store.AnyVersion || by == "" {
		return fmt.Errorf("sqlite: delete extension %s/%s: %w: expected version %d by %q", typ, name, ErrInvalid, ifVersion, by)
	}
	r := s.getRequest(ctx, opExtDelete)
	r.ext, r.ifVersion = store.Extension{Type: typ, Name: name, UpdatedBy: by}, ifVersion
	if err := s.send(ctx, r); err != nil {
		return err
	}
	err := r.err
	s.putRequest(r)
	return err
}

// extHead is a row as a write finds it.
type extHead struct {
	version, last    int64 // the row's version (0: none), its history's last
	spec, provenance string
	enabled          bool
	createdAt        int64
	createdBy        string
}

func (w *writer) extHead(typ, name string) (extHead, error) {
	var h extHead
	err := w.extHeadQ.QueryRow(typ, name).Scan(&h.version, &h.spec, &h.enabled, &h.provenance, &h.createdAt, &h.createdBy, &h.last)
	return h, err
}

func (w *writer) applyExtPut(r *request, now int64) error {
	e := &r.ext
	h, err := w.extHead(e.Type, e.Name)
	if err != nil {
		return fmt.Errorf("sqlite: put extension %s/%s: %w", e.Type, e.Name, err)
	}
	v, err := store.ExtensionVersion(h.version, h.last, r.ifVersion)
	if err != nil {
		return fmt.Errorf("sqlite: put extension %s/%s: %w", e.Type, e.Name, err)
	}
	created, createdBy := now, e.UpdatedBy
	if h.version > 0 {
		created, createdBy = h.createdAt, h.createdBy
	}
	if _, err := w.extUpsert.Exec(e.Type, e.Name, string(e.Spec), e.Enabled, v, e.Provenance, e.SeedHash,
		created, createdBy, now, e.UpdatedBy); err != nil {
		return fmt.Errorf("sqlite: put extension %s/%s: %w", e.Type, e.Name, err)
	}
	if _, err := w.extHistIns.Exec(e.Type, e.Name, v, r.extOp, string(e.Spec), e.Enabled, e.Provenance, e.UpdatedBy, now); err != nil {
		return fmt.Errorf("sqlite: put extension %s/%s: history: %w", e.Type, e.Name, err)
	}
	e.Version, e.CreatedAt, e.CreatedBy, e.UpdatedAt = v, time.Unix(0, created).UTC(), createdBy, time.Unix(0, now).UTC()
	return nil
}

func (w *writer) applyExtDelete(r *request, now int64) error {
	e := &r.ext
	h, err := w.extHead(e.Type, e.Name)
	if err != nil {
		return fmt.Errorf("sqlite: delete extension %s/%s: %w", e.Type, e.Name, err)
	}
	if h.version == 0 {
		return fmt.Errorf("sqlite: delete extension %s/%s: %w", e.Type, e.Name, store.ErrNotFound)
	}
	v, err := store.ExtensionVersion(h.version, h.last, r.ifVersion)
	if err != nil {
		return fmt.Errorf("sqlite: delete extension %s/%s: %w", e.Type, e.Name, err)
	}
	if _, err := w.extDelete.Exec(e.Type, e.Name); err != nil {
		return fmt.Errorf("sqlite: delete extension %s/%s: %w", e.Type, e.Name, err)
	}
	if _, err := w.extHistIns.Exec(e.Type, e.Name, v, store.ExtDelete, h.spec, h.enabled, h.provenance, e.UpdatedBy, now); err != nil {
		return fmt.Errorf("sqlite: delete extension %s/%s: history: %w", e.Type, e.Name, err)
	}
	return nil
}

func scanExtension(row scanner) (store.Extension, error) {
	var e store.Extension
	var created, updated int64
	err := row.Scan(&e.Type, &e.Name, (*[]byte)(&e.Spec), &e.Enabled, &e.Version, &e.Provenance, &e.SeedHash,
		&created, &e.CreatedBy, &updated, &e.UpdatedBy)
	if err != nil {
		return store.Extension{}, err
	}
	e.CreatedAt, e.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	return e, nil
}
