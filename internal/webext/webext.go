// Package webext holds the extension types the web console shows: themes
// (its colours and fonts), renderers (how it shows a kind of content),
// widgets (the tiles of its home page, each a query over agentd's data),
// artifacts (versioned documents agents produce, with the `artifact`
// tool that writes them) and apps (small static web apps served under
// /apps/<name>/). Each type is a file with its embedded JSON Schema and a
// function returning the extension.Type the wiring registers; the gateway
// serves widgets, artifacts and apps through the small interfaces it
// defines, which Widgets, Artifacts and Apps implement.
//
// Nothing here runs script the console did not ship: renderers and
// themes are declarative data, checked beyond their schema; an app runs
// in its own page under a strict CSP, and one an agent wrote waits for a
// person to enable it.
package webext

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"agentd/internal/extension"
	"agentd/internal/schema"
	"agentd/internal/store"
)

// Sentinel errors of the readers (Widgets, Artifacts, Apps).
var (
	// ErrNotFound: no enabled row (or no version, no file) of that name.
	ErrNotFound = errors.New("not found")
	// ErrInvalid: a request's argument is malformed (a version that is
	// not a number).
	ErrInvalid = errors.New("invalid request")
)

// Rows reads extension rows (the extension.Manager does).
type Rows interface {
	List(ctx context.Context, typ string) ([]extension.Status, error)
	Get(ctx context.Context, typ, name string) (extension.Status, error)
}

// History reads a row's versions (the extension.Manager does).
type History interface {
	History(ctx context.Context, typ, name string) ([]store.ExtensionChange, error)
}

// Writer writes a row as someone (the extension.Manager does): the
// artifact tool writes as the agent that calls it.
type Writer interface {
	Put(ctx context.Context, d extension.Doc, who extension.Who) (extension.Status, error)
}

// checker is a Handler whose rows are data others read (activating one
// does nothing), with checks beyond the type's schema.
type checker func(ctx context.Context, d *extension.Doc) []schema.Error

func (checker) Activate(context.Context, *store.Extension) error { return nil }
func (checker) Deactivate(context.Context, string) error         { return nil }

func (c checker) Check(ctx context.Context, d *extension.Doc) []schema.Error { return c(ctx, d) }

// decodeSpec reads a document's spec into v. A spec that does not decode
// is its schema's to report (the Manager checks the schema first), so the
// checks that need v just skip it.
func decodeSpec(d *extension.Doc, v any) bool {
	return len(d.Spec) > 0 && json.Unmarshal(d.Spec, v) == nil
}

// problem is one error at a pointer under /spec.
func problem(ptr, format string, args ...any) schema.Error {
	return schema.Error{Pointer: "/spec" + ptr, Message: fmt.Sprintf(format, args...)}
}
