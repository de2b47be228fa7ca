// Package extension is agentd's extension substrate: everything beyond the
// kernel that people and agents add at run time — agents, HTTP actions,
// commands, jobs, capabilities, integrations, controls, renderers, themes,
// widgets, apps and artifacts — is a typed JSON document stored as a row
// (store.ExtensionStore), validated against its type's JSON Schema,
// activated by its type's Handler while it is enabled, and changed without
// a restart, on every node.
//
// The Manager owns the rows' life: it validates a document (the schema,
// then the type's own checks), writes it (the store keeps every version),
// activates it, and reports an activation that failed while the previous
// version stays active. Reseed syncs the documents embedded in the binary
// and those under <data>/extensions/<type>/<name>.yaml into rows.
//
// A crash between a row's write and its activation leaves the row written:
// Start activates every enabled row, so the next start (or another node,
// told by the store) activates it.
package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"agentd/internal/schema"
	"agentd/internal/store"
)

// Sentinel errors.
var (
	// ErrInvalid: a document failed its schema or its type's checks; the
	// error is a *ValidationError listing every problem.
	ErrInvalid = errors.New("invalid extension")
	// ErrUnknownType: no type of that name is registered.
	ErrUnknownType = errors.New("unknown extension type")
	// ErrForbidden: the caller may not change that row (an agent changing
	// a row it did not create, without the right to).
	ErrForbidden = errors.New("not allowed to change this extension")
)

// Doc is an extension document as a person or an agent writes it: the
// body of a PUT, one document of `agentd ext put`, one seed file.
type Doc struct {
	Type string          `json:"type"`
	Name string          `json:"name"`
	Spec json.RawMessage `json:"spec"`
	// Enabled, when set, says whether the row is enabled; left out, a new
	// row is enabled and a changed one keeps its state.
	Enabled *bool `json:"enabled,omitempty"`
	// Line is where the document starts in the text it was decoded from
	// (1-based; 0 when unknown), for errors.
	Line int `json:"-"`
	// IfVersion, when not 0, is the version the row must be at for the
	// write to happen (an API's If-Match); otherwise store.ErrConflict.
	IfVersion int64 `json:"-"`
}

// Key is the row's address, "type/name".
func (d Doc) Key() string { return d.Type + "/" + d.Name }

// Who says who makes a change: its provenance (store.ProvenanceUser,
// store.ProvenanceAgent+id, …) and, for the record, by whom in more
// detail ("user:cli", a token's name); By defaults to Provenance.
type Who struct {
	Provenance string
	By         string
	// Any lets an agent change rows other agents or people made (its
	// policy allows it); without it an agent may change only rows it
	// created.
	Any bool
	// Machine lets an agent write rows that change what runs on this
	// machine (Type.Machine): processes started, commands named. Without
	// it such a write by an agent is refused.
	Machine bool
}

// by is the name a change is recorded under.
func (w Who) by() string {
	if w.By != "" {
		return w.By
	}
	return w.Provenance
}

// Agent returns the agent's id when an agent makes the change.
func (w Who) Agent() (string, bool) { return strings.CutPrefix(w.Provenance, store.ProvenanceAgent) }

// Status is a row with what this node made of it.
type Status struct {
	store.Extension
	// Active is the version active on this node; 0 when none is (the row
	// is disabled, or no version of it ever activated here).
	Active int64
	// Error says why the row's version is not the active one ("" when it
	// is, or when the row is disabled).
	Error string
	// Seed is where a reseed takes the row from: store.ProvenanceBuiltin,
	// store.ProvenanceFile, or "" (no seed document has its type and
	// name).
	Seed string
	// Drift: the row's spec differs from its seed document's, because a
	// person or an agent changed the row (a reseed keeps it unless forced)
	// or the document changed and no reseed has run since.
	Drift bool
}

// Handler activates a type's rows: it makes an enabled row's version take
// effect (registers a tool, an agent, a command, …) and undoes it.
// Activate replaces the name's active version; when it fails it must leave
// the previous version in effect. Both are called one at a time per type.
type Handler interface {
	Activate(ctx context.Context, e *store.Extension) error
	Deactivate(ctx context.Context, name string) error
}

// Checker is an optional ability of a Handler: checks a spec beyond its
// schema (references to other rows or agents, size caps, blocked
// addresses). Pointers are JSON pointers into the document
// ("/spec/url"). Checks run before anything is written.
type Checker interface {
	Check(ctx context.Context, d *Doc) []schema.Error
}

// WriterChecker is an optional ability of a Handler: checks a document
// an agent writes against that agent, so that a row gives no more than
// its writer has (an agent row's tools). created says no row of that
// name exists yet. An error refuses the write as ErrForbidden.
type WriterChecker interface {
	CheckWriter(ctx context.Context, d *Doc, writer string, created bool) error
}

// Type is one extension type.
type Type struct {
	// Name is the type's name: agent, action, command, …
	Name string
	// Summary is one line about what a row of this type is.
	Summary string
	// Schema is the JSON Schema (the subset package schema supports) a
	// spec must satisfy, embedded beside the handler.
	Schema json.RawMessage
	// Handler activates rows; nil: rows of this type are data that others
	// read (the console's themes, say) and activating one does nothing.
	Handler Handler
	// PersonEnables: a row an agent writes is stored disabled, and only a
	// person enables it (an app runs in people's browsers with their
	// session).
	PersonEnables bool
	// Machine, if set, says whether a spec changes what runs on this
	// machine or reaches past agentd — a process it starts, a command it
	// names (an MCP server of an integration, of an agent), files it
	// watches or a network address it sends to (a job's). An agent writes such a row only
	// with Who.Machine, as the API writes it only as admin.
	Machine func(spec json.RawMessage) bool
	// Actor, if set, returns the agents a spec makes act or writes to (a
	// job's agent and the sessions it delivers to, a command's agent, an
	// artifact's): an agent writes such a row only for itself, unless
	// Who.Any — a job must not make a better-equipped agent work for it.
	Actor func(spec json.RawMessage) []string
	// Shared: a row changes what every agent has (a capability others
	// include, a control that pauses agents or switches tools off); an
	// agent writes one only with Who.Any.
	Shared bool
}

// ValidationError lists every problem of a document, each with its JSON
// pointer into the document ("/spec/url: must be a string").
type ValidationError struct {
	Doc    string // "type/name", or where the document was read
	Errors []schema.Error
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "extension: %s: ", e.Doc)
	for i, x := range e.Errors {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(x.String())
	}
	return b.String()
}

func (e *ValidationError) Unwrap() error { return ErrInvalid }

// nameRE is what a row's name may be: letters, digits, '-', '_' and
// inner dots, so that it is a file name under extensions/<type>/ and a
// path segment of the API, never a path.
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*(\.[A-Za-z0-9_-]+)*$`) })

// MaxName is the longest name a row may have.
const MaxName = 64

// ValidName reports whether name may name a row.
func ValidName(name string) bool { return len(name) <= MaxName && nameRE().MatchString(name) }
