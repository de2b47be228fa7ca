package extension

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"sync"

	"agentd/internal/schema"
	"agentd/internal/store"
)

// Options configure a Manager. A nil *Options is valid.
type Options struct {
	// Logger receives activation failures and reseed reports (default:
	// discard).
	Logger *slog.Logger
	// Dir is the data directory: its extensions/<type>/<name>.yaml are
	// seed documents of provenance file ("": none).
	Dir string
	// Builtins are the seed documents of provenance builtin, as
	// <type>/<name>.yaml (default: those embedded in the binary,
	// Builtins()).
	Builtins fs.FS
	// Seeders give more seed documents of provenance file (the agent
	// files, as rows of type agent).
	Seeders []Seeder
	// Written, if set, is called after this node wrote a row (not for
	// rows other nodes wrote), with the row it replaced (nil: none): what
	// is recorded once per change, cluster-wide, hooks here.
	Written func(ctx context.Context, old, cur *store.Extension)
}

// Seeder gives seed documents that live elsewhere than under
// extensions/ (agent files).
type Seeder interface {
	Seeds() ([]Seed, error)
}

// Seed is a document a reseed syncs into its row.
type Seed struct {
	Doc
	Provenance string // store.ProvenanceBuiltin or store.ProvenanceFile
	Source     string // where it was read, for errors: a file's path
}

// Manager validates, stores and activates extension rows (see the
// package doc).
//
// Lock order: amu (one activation or reseed at a time) → mu (the maps).
// No lock is held across a store call except amu.
type Manager struct {
	st       store.ExtensionStore
	log      *slog.Logger
	dir      string
	builtins fs.FS
	seeders  []Seeder
	written  func(ctx context.Context, old, cur *store.Extension)

	amu sync.Mutex // serializes activations and reseeds

	mu     sync.Mutex
	types  map[string]*compiled
	active map[string]int64  // "type/name" → the version active here
	errs   map[string]string // "type/name" → why its version is not active
	seeds  map[string]seedMark
	subs   []func(Status)
}

type compiled struct {
	Type
	schema *schema.Schema
}

// seedMark is what the last reseed saw of a row's seed document.
type seedMark struct {
	prov    string
	hash    string
	spec    []byte // canonical
	enabled bool
}

// New returns a Manager over st; Register the types, then Start.
func New(st store.ExtensionStore, opts *Options) *Manager {
	if opts == nil {
		opts = &Options{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := opts.Builtins
	if b == nil {
		b = Builtins()
	}
	return &Manager{st: st, log: log, dir: opts.Dir, builtins: b, seeders: opts.Seeders, written: opts.Written,
		types: map[string]*compiled{}, active: map[string]int64{}, errs: map[string]string{}, seeds: map[string]seedMark{}}
}

// Register adds a type; its schema must compile.
func (m *Manager) Register(t Type) error {
	s, err := schema.Compile(t.Schema)
	if err != nil {
		return fmt.Errorf("extension: type %s: %w", t.Name, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.types[t.Name]; dup {
		return fmt.Errorf("extension: type %s registered twice", t.Name)
	}
	m.types[t.Name] = &compiled{Type: t, schema: s}
	return nil
}

// Types returns the registered types, sorted by name.
func (m *Manager) Types() []Type {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Type, 0, len(m.types))
	for _, c := range m.types {
		out = append(out, c.Type)
	}
	slices.SortFunc(out, func(a, b Type) int { return cmpString(a.Name, b.Name) })
	return out
}

// Schema returns a type's JSON Schema.
func (m *Manager) Schema(typ string) (json.RawMessage, bool) {
	c, ok := m.typ(typ)
	if !ok {
		return nil, false
	}
	return c.Schema, true
}

// Subscribe calls f after a row's activation changed on this node (a new
// version active, an activation failed, a row disabled or removed). f is
// called with no lock held and must return quickly.
func (m *Manager) Subscribe(f func(Status)) {
	m.mu.Lock()
	m.subs = append(m.subs, f)
	m.mu.Unlock()
}

func (m *Manager) typ(name string) (*compiled, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.types[name]
	return c, ok
}

// Start reseeds (keeping rows people or agents changed), then activates
// every enabled row. A row that fails to activate is reported by its
// Status and logged; Start fails only if the store cannot be read.
func (m *Manager) Start(ctx context.Context) error {
	if _, err := m.Reseed(ctx, false); err != nil {
		return err
	}
	return m.resync(ctx)
}

// resync brings every row's activation in step with the store.
func (m *Manager) resync(ctx context.Context) error {
	rows, err := m.st.Extensions(ctx, "")
	if err != nil {
		return fmt.Errorf("extension: load rows: %w", err)
	}
	seen := make(map[string]bool, len(rows))
	for i := range rows {
		seen[key(rows[i].Type, rows[i].Name)] = true
		m.activate(ctx, &rows[i])
	}
	m.mu.Lock()
	var gone []string
	for k := range m.active {
		if !seen[k] {
			gone = append(gone, k)
		}
	}
	m.mu.Unlock()
	for _, k := range gone {
		typ, name := splitKey(k)
		m.deactivate(ctx, typ, name)
	}
	return nil
}

// Changed brings one row's activation in step with the store after
// another node (or this one) changed it; typ "" resyncs every row.
func (m *Manager) Changed(ctx context.Context, typ, name string) {
	if typ == "" {
		if err := m.resync(ctx); err != nil {
			m.log.Warn("extensions not resynced", "err", err)
		}
		return
	}
	e, err := m.st.Extension(ctx, typ, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		m.deactivate(ctx, typ, name)
	case err != nil:
		m.log.Warn("changed extension not read", "extension", key(typ, name), "err", err)
	default:
		m.activate(ctx, &e)
	}
}

// List returns the rows of a type ("" for all) with their state here.
func (m *Manager) List(ctx context.Context, typ string) ([]Status, error) {
	if typ != "" {
		if _, ok := m.typ(typ); !ok {
			return nil, fmt.Errorf("extension: %w: %q", ErrUnknownType, typ)
		}
	}
	rows, err := m.st.Extensions(ctx, typ)
	if err != nil {
		return nil, fmt.Errorf("extension: list: %w", err)
	}
	out := make([]Status, len(rows))
	for i := range rows {
		out[i] = m.status(&rows[i])
	}
	return out, nil
}

// Get returns one row with its state here.
func (m *Manager) Get(ctx context.Context, typ, name string) (Status, error) {
	if _, ok := m.typ(typ); !ok {
		return Status{}, fmt.Errorf("extension: %w: %q", ErrUnknownType, typ)
	}
	e, err := m.st.Extension(ctx, typ, name)
	if err != nil {
		return Status{}, fmt.Errorf("extension: %s: %w", key(typ, name), err)
	}
	return m.status(&e), nil
}

// History returns a row's changes, oldest first.
func (m *Manager) History(ctx context.Context, typ, name string) ([]store.ExtensionChange, error) {
	if _, ok := m.typ(typ); !ok {
		return nil, fmt.Errorf("extension: %w: %q", ErrUnknownType, typ)
	}
	h, err := m.st.ExtensionHistory(ctx, typ, name)
	if err != nil {
		return nil, fmt.Errorf("extension: %s: %w", key(typ, name), err)
	}
	return h, nil
}

// status is e with what this node made of it.
func (m *Manager) status(e *store.Extension) Status {
	k := key(e.Type, e.Name)
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Status{Extension: *e, Active: m.active[k], Error: m.errs[k]}
	if sm, ok := m.seeds[k]; ok {
		s.Seed = sm.prov
		s.Drift = sm.hash != specHash(e.Spec)
	}
	return s
}

// key is a row's "type/name".
func key(typ, name string) string { return typ + "/" + name }

func splitKey(k string) (typ, name string) {
	for i := 0; i < len(k); i++ {
		if k[i] == '/' {
			return k[:i], k[i+1:]
		}
	}
	return k, ""
}

// specHash is the hex SHA-256 of a canonical spec.
func specHash(spec json.RawMessage) string {
	h := sha256.Sum256(spec)
	return hex.EncodeToString(h[:])
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
