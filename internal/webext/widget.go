package webext

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"

	"agentd/internal/extension"
	"agentd/internal/schema"
	"agentd/internal/store"
)

//go:embed widget.schema.json
var widgetSchema []byte

// WidgetType is the `widget` type: a tile of the console's home page, a
// query over agentd's data (usage, recent sessions, a job's last runs, a
// memory search, a read-only action's output) shown by a renderer.
// Widgets evaluates the enabled rows. rows, when not nil, checks that the
// renderer and the action a widget names exist.
func WidgetType(rows Rows) extension.Type {
	return extension.Type{Name: "widget", Summary: "a tile of the console's home page: a query over agentd's data shown by a renderer",
		Schema: widgetSchema, Handler: checker(func(ctx context.Context, d *extension.Doc) []schema.Error {
			return checkWidget(ctx, rows, d)
		})}
}

// Widget is a widget row's spec.
type Widget struct {
	Title    string `json:"title"`
	Size     string `json:"size,omitempty"`
	Renderer string `json:"renderer,omitempty"`
	Order    int    `json:"order,omitempty"`
	Query    Query  `json:"query"`
}

// Query kinds.
const (
	QueryUsage        = "usage"
	QuerySessions     = "sessions"
	QueryJob          = "job"
	QueryMemorySearch = "memory_search"
	QueryAction       = "action"
)

// Query is what a widget shows; which fields count depends on Kind (the
// schema allows each kind only its own).
type Query struct {
	Kind string `json:"kind"`
	// usage, sessions, memory_search: the agent ("" for all; required
	// for a memory search: the memory's owner).
	Agent string `json:"agent,omitempty"`
	// usage: its grouping (day when ""), and how far back (a duration).
	Group string `json:"group,omitempty"`
	Since string `json:"since,omitempty"`
	// sessions: only those in this state.
	State string `json:"state,omitempty"`
	// job: the job whose runs are shown.
	Job string `json:"job,omitempty"`
	// memory_search: what to look for, and whether shared memories count.
	Text   string `json:"text,omitempty"`
	Shared bool   `json:"shared,omitempty"`
	// action: the action called and its arguments.
	Action    string          `json:"action,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Limit bounds the rows (each kind has its default).
	Limit int `json:"limit,omitempty"`
}

// checkWidget checks that what a widget names exists: its renderer, and
// the action it calls.
func checkWidget(ctx context.Context, rows Rows, d *extension.Doc) []schema.Error {
	var w Widget
	if rows == nil || !decodeSpec(d, &w) {
		return nil
	}
	var errs []schema.Error
	if w.Renderer != "" {
		if msg := missing(ctx, rows, "renderer", w.Renderer); msg != "" {
			errs = append(errs, problem("/renderer", "%s", msg))
		}
	}
	if w.Query.Kind == QueryAction && w.Query.Action != "" {
		if msg := missing(ctx, rows, "action", w.Query.Action); msg != "" {
			errs = append(errs, problem("/query/action", "%s", msg))
		}
	}
	return errs
}

// missing says that no row typ/name exists ("" when one does, or when
// the store could not say: the write then fails on its own).
func missing(ctx context.Context, rows Rows, typ, name string) string {
	_, err := rows.Get(ctx, typ, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "there is no " + typ + " named " + name
	case errors.Is(err, extension.ErrUnknownType):
		return "this agentd has no " + typ + " type"
	}
	return ""
}
