package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrConflict is returned (wrapped) by PutExtension and DeleteExtension
// when the row is not at the version the caller said it expected (someone
// changed it meanwhile, or it exists where it was expected not to).
// Nothing was written.
var ErrConflict = errors.New("changed meanwhile")

// Extension provenances: who last wrote a row. An agent's is
// ProvenanceAgent + its id ("agent:researcher").
const (
	ProvenanceBuiltin = "builtin" // embedded in the binary, synced by a reseed
	ProvenanceFile    = "file"    // extensions/<type>/<name>.yaml or an agent file, synced by a reseed
	ProvenanceUser    = "user"    // a person, through the API, the CLI or the console
	ProvenanceAgent   = "agent:"  // prefix: an agent, through its extensions tool
)

// Extension operations, as the history records them.
const (
	ExtPut     = "put"     // created or its spec changed
	ExtEnable  = "enable"  // enabled
	ExtDisable = "disable" // disabled
	ExtRevert  = "revert"  // its spec set back to an earlier version's
	ExtDelete  = "delete"  // removed (the history stays)
)

// Version expectations of PutExtension and DeleteExtension.
const (
	AnyVersion = -1 // write whatever the row's version
	NoVersion  = 0  // the row must not exist
)

// Extension is one row of the extension substrate: a typed JSON document
// (an agent, an HTTP action, a command, a job, …) that agentd activates
// while it is enabled. Type and Name identify it.
type Extension struct {
	Type string
	Name string
	// Spec is the document, compact JSON, already valid against its type's
	// schema when it was written.
	Spec    json.RawMessage
	Enabled bool
	// Version is 1 when the row is made and grows by one with every
	// change (spec, enabled, revert). A row made again after a delete
	// goes on from the deleted row's last version, so that its history
	// reads in one sequence.
	Version int64
	// Provenance is who last wrote it: ProvenanceBuiltin, ProvenanceFile,
	// ProvenanceUser or ProvenanceAgent+id.
	Provenance string
	// SeedHash is the hash (hex SHA-256 of the compact spec) of the
	// built-in or file document the row was last synced from, "" for a
	// row no reseed wrote. A reseed compares it with the document's
	// hash now to see drift.
	SeedHash  string
	CreatedAt time.Time
	CreatedBy string // ProvenanceUser, "user:<token name>", ProvenanceAgent+id, …
	UpdatedAt time.Time
	UpdatedBy string
}

// ExtensionChange is one entry of a row's history: the row as a change
// left it.
type ExtensionChange struct {
	Version    int64
	Op         string // ExtPut, ExtEnable, ExtDisable, ExtRevert, ExtDelete
	Spec       json.RawMessage
	Enabled    bool
	Provenance string
	By         string
	At         time.Time
}

// ExtensionStore holds the extension rows and their history. Both stores
// implement it; on PostgreSQL every change is announced to every node
// (ExtensionWatcher).
type ExtensionStore interface {
	// Extensions lists the rows of a type ("" for every type), ordered by
	// type, then name.
	Extensions(ctx context.Context, typ string) ([]Extension, error)
	// Extension returns one row, or ErrNotFound.
	Extension(ctx context.Context, typ, name string) (Extension, error)
	// PutExtension writes e as its row's next version and appends the
	// change (op) to its history, in one transaction, and returns the row
	// as written (Version, CreatedAt/By kept from the row it replaces,
	// UpdatedAt set; e's own are ignored). ifVersion is the version the
	// caller expects the row to be at now: AnyVersion, NoVersion (it must
	// not exist) or a version; otherwise ErrConflict and nothing written.
	PutExtension(ctx context.Context, e Extension, op string, ifVersion int64) (Extension, error)
	// DeleteExtension removes a row (ErrNotFound if there is none),
	// appending an ExtDelete change by `by` to its history, which stays.
	DeleteExtension(ctx context.Context, typ, name, by string, ifVersion int64) error
	// ExtensionHistory returns a row's changes, oldest first (a deleted
	// row's too); ErrNotFound if it never existed.
	ExtensionHistory(ctx context.Context, typ, name string) ([]ExtensionChange, error)
}

// ExtensionWatcher is what a store shared by several nodes offers: f is
// called with a row's type and name after another node (or this one)
// changed it, so that every node activates the same rows. Call it before
// the store's listener starts; f must return quickly.
type ExtensionWatcher interface {
	WatchExtensions(f func(typ, name string))
}
