package webext

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"agentd/internal/memory"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// Content types of the data a widget's query gives, for the console to
// pick a renderer by when the widget names none.
const (
	UsageContentType    = "application/vnd.agentd.usage+json"
	SessionsContentType = "application/vnd.agentd.sessions+json"
	MemoryContentType   = "application/vnd.agentd.memory+json"
)

// The sources widgets query; each is optional (a widget over a missing one
// shows an error).
type (
	// Usage gives the usage figures (the store's OpsStore).
	Usage interface {
		UsageReport(ctx context.Context, q store.UsageQuery) (store.UsageReport, error)
	}
	// Sessions lists sessions, most recently updated first (the store).
	Sessions interface {
		Sessions(ctx context.Context, f store.SessionFilter) ([]store.Session, error)
	}
	// Recaller searches long-term memory (memory.Store).
	Recaller interface {
		Recall(ctx context.Context, q memory.Query) (memory.Recall, error)
	}
	// Tools finds and runs tools (tool.Registry): an action's tool has
	// the action's name.
	Tools interface {
		Get(name string) (tool.Tool, bool)
		Run(ctx context.Context, c *tool.Call, o *tool.RunOptions) tool.Outcome
	}
)

// WidgetOptions configure Widgets.
type WidgetOptions struct {
	Usage    Usage
	Sessions Sessions
	Memory   Recaller
	Tools    Tools
	// Timeout bounds one widget's query (default 5s): a slow one shows
	// its error, the others their data.
	Timeout time.Duration
	// Parallel is how many widgets are evaluated at once (default 4).
	Parallel int
	// Now is the clock of "since" (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Widgets evaluates the enabled widget rows for GET /v1/widgets.
type Widgets struct {
	rows Rows
	o    WidgetOptions
}

// NewWidgets returns the evaluator over rows. o may be nil.
func NewWidgets(rows Rows, o *WidgetOptions) *Widgets {
	w := &Widgets{rows: rows}
	if o != nil {
		w.o = *o
	}
	if w.o.Timeout <= 0 {
		w.o.Timeout = 5 * time.Second
	}
	if w.o.Parallel <= 0 {
		w.o.Parallel = 4
	}
	if w.o.Now == nil {
		w.o.Now = time.Now
	}
	if w.o.Logger == nil {
		w.o.Logger = slog.New(slog.DiscardHandler)
	}
	return w
}

// WidgetView is a widget evaluated: its row's presentation and its query's
// data, or the error that stopped the query (then Data is null).
type WidgetView struct {
	Name        string `json:"name"`
	Title       string `json:"title"`
	Renderer    string `json:"renderer"`
	Size        string `json:"size"`
	Order       int    `json:"order"`
	ContentType string `json:"content_type"`
	Data        any    `json:"data"`
	Error       string `json:"error"`
}

// Widgets evaluates every enabled widget, in order then name, each with
// its own deadline; a widget whose query fails carries its error.
func (w *Widgets) Widgets(ctx context.Context) ([]WidgetView, error) {
	rows, err := w.rows.List(ctx, "widget")
	if err != nil {
		return nil, fmt.Errorf("widgets: %w", err)
	}
	var specs []named
	for _, r := range rows {
		if r.Enabled {
			specs = append(specs, decodeWidget(r.Name, r.Spec))
		}
	}
	slices.SortFunc(specs, func(a, b named) int {
		return cmp.Or(cmp.Compare(a.w.Order, b.w.Order), cmp.Compare(a.name, b.name))
	})
	out := make([]WidgetView, len(specs))
	sem := make(chan struct{}, w.o.Parallel)
	var wg sync.WaitGroup
	for i := range specs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i] = w.eval(ctx, specs[i])
		})
	}
	wg.Wait()
	return out, nil
}

// Widget evaluates one enabled widget; ErrNotFound when there is none.
func (w *Widgets) Widget(ctx context.Context, name string) (WidgetView, error) {
	st, err := w.rows.Get(ctx, "widget", name)
	switch {
	case err != nil && !isNotFound(err):
		return WidgetView{}, fmt.Errorf("widget %s: %w", name, err)
	case err != nil || !st.Enabled:
		return WidgetView{}, fmt.Errorf("widget %s: %w", name, ErrNotFound)
	}
	return w.eval(ctx, decodeWidget(name, st.Spec)), nil
}

// named is a widget row's spec with its name; err when it did not decode.
type named struct {
	name string
	w    Widget
	err  error
}

func decodeWidget(name string, spec json.RawMessage) named {
	n := named{name: name}
	n.err = json.Unmarshal(spec, &n.w)
	return n
}

// eval runs a widget's query under its deadline.
func (w *Widgets) eval(ctx context.Context, n named) WidgetView {
	v := WidgetView{Name: n.name, Title: n.w.Title, Renderer: n.w.Renderer, Size: cmp.Or(n.w.Size, "medium"), Order: n.w.Order}
	if n.err != nil {
		v.Error = "the widget's spec does not read: " + n.err.Error()
		return v
	}
	ctx, cancel := context.WithTimeout(ctx, w.o.Timeout)
	defer cancel()
	data, ctype, err := w.query(ctx, n.w.Query)
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("no answer within %s", w.o.Timeout)
		}
		w.o.Logger.Debug("widget query failed", "widget", n.name, "err", err)
		v.Error = err.Error()
		return v
	}
	v.Data, v.ContentType = data, ctype
	return v
}

// query runs q, returning its data and the data's content type.
func (w *Widgets) query(ctx context.Context, q Query) (any, string, error) {
	switch q.Kind {
	case QueryUsage:
		d, err := w.usage(ctx, q)
		return d, UsageContentType, err
	case QuerySessions:
		d, err := w.sessions(ctx, q)
		return d, SessionsContentType, err
	case QueryJob:
		d, err := w.job(ctx, q)
		return d, SessionsContentType, err
	case QueryMemorySearch:
		d, err := w.memory(ctx, q)
		return d, MemoryContentType, err
	case QueryAction:
		return w.action(ctx, q)
	}
	return nil, "", fmt.Errorf("unknown query kind %q", q.Kind)
}

// unavailable is the error of a query over a source this agentd lacks.
func unavailable(what string) error { return fmt.Errorf("%s is not available on this agentd", what) }

// limit is q's limit, or def.
func limit(q Query, def int) int {
	if q.Limit > 0 {
		return min(q.Limit, 100)
	}
	return def
}

// isNotFound reports a missing row.
func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

// UsageData is a usage widget's data.
type UsageData struct {
	Group string     `json:"group"`
	Rows  []UsageRow `json:"rows"`
	Total UsageRow   `json:"total"`
}

// UsageRow is one group's usage.
type UsageRow struct {
	Key          string  `json:"key"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	Calls        int64   `json:"calls"`
}

func usageRow(r store.UsageRow) UsageRow {
	return UsageRow{Key: r.Key, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CostUSD: r.CostUSD, Calls: r.Calls}
}

func (w *Widgets) usage(ctx context.Context, q Query) (any, error) {
	if w.o.Usage == nil {
		return nil, unavailable("usage")
	}
	uq := store.UsageQuery{Group: cmp.Or(q.Group, store.UsageByDay), Agent: q.Agent, Limit: limit(q, 31)}
	if q.Since != "" {
		d, err := time.ParseDuration(q.Since)
		if err != nil {
			return nil, fmt.Errorf("since: %w", err)
		}
		uq.Since = w.o.Now().Add(-d)
	}
	rep, err := w.o.Usage.UsageReport(ctx, uq)
	if err != nil {
		return nil, err
	}
	d := UsageData{Group: uq.Group, Rows: make([]UsageRow, 0, len(rep.Rows)), Total: usageRow(rep.Total)}
	for _, r := range rep.Rows {
		d.Rows = append(d.Rows, usageRow(r))
	}
	return d, nil
}

// SessionRow is a session as a sessions or job widget shows it.
type SessionRow struct {
	Address   string    `json:"address"`
	Agent     string    `json:"agent"`
	Key       string    `json:"key"`
	Title     string    `json:"title"`
	State     string    `json:"state"`
	UpdatedAt time.Time `json:"updated_at"`
}

func sessionRow(s store.Session) SessionRow {
	return SessionRow{Address: s.Agent + "/" + s.Key, Agent: s.Agent, Key: s.Key, Title: s.Title, State: s.State, UpdatedAt: s.UpdatedAt}
}

func (w *Widgets) sessions(ctx context.Context, q Query) (any, error) {
	if w.o.Sessions == nil {
		return nil, unavailable("the session list")
	}
	ss, err := w.o.Sessions.Sessions(ctx, store.SessionFilter{Agent: q.Agent, State: q.State, Limit: limit(q, 10)})
	if err != nil {
		return nil, err
	}
	out := make([]SessionRow, 0, len(ss))
	for _, s := range ss {
		out = append(out, sessionRow(s))
	}
	return out, nil
}

// jobScan is how many of the most recent sessions a job widget looks
// through for its runs: the session list has no filter by key, so a job
// whose last run is older than this many sessions shows none.
const jobScan = 1000

func (w *Widgets) job(ctx context.Context, q Query) (any, error) {
	if w.o.Sessions == nil {
		return nil, unavailable("the session list")
	}
	ss, err := w.o.Sessions.Sessions(ctx, store.SessionFilter{Limit: jobScan})
	if err != nil {
		return nil, err
	}
	prefix, n := "job:"+q.Job+":", limit(q, 5)
	out := []SessionRow{}
	for _, s := range ss {
		if strings.HasPrefix(s.Key, prefix) && len(out) < n {
			out = append(out, sessionRow(s))
		}
	}
	return out, nil
}

// MemoryRow is a memory as a memory_search widget shows it.
type MemoryRow struct {
	Kind    string    `json:"kind"`
	Entity  string    `json:"entity,omitempty"`
	Text    string    `json:"text"`
	Snippet string    `json:"snippet,omitempty"`
	Score   float64   `json:"score"`
	Created time.Time `json:"created"`
}

func (w *Widgets) memory(ctx context.Context, q Query) (any, error) {
	if w.o.Memory == nil {
		return nil, unavailable("long-term memory")
	}
	rec, err := w.o.Memory.Recall(ctx, memory.Query{Scope: q.Agent, Text: q.Text, K: limit(q, 10), Shared: q.Shared})
	if err != nil {
		return nil, err
	}
	out := make([]MemoryRow, 0, len(rec.Items))
	for _, it := range rec.Items {
		out = append(out, MemoryRow{Kind: it.Kind, Entity: it.Entity, Text: it.Text, Snippet: it.Snippet, Score: it.Score, Created: it.Created})
	}
	return out, nil
}

// maxActionOutput bounds what an action widget shows.
const maxActionOutput = 64 << 10

// action calls an enabled, read-only action with the widget's arguments.
// A widget runs with nobody's approval, on every load of the home page,
// so an action that may change anything is never called.
func (w *Widgets) action(ctx context.Context, q Query) (any, string, error) {
	if w.o.Tools == nil {
		return nil, "", unavailable("the tool registry")
	}
	st, err := w.rows.Get(ctx, "action", q.Action)
	switch {
	case err != nil && !isNotFound(err):
		return nil, "", err
	case err != nil || !st.Enabled:
		return nil, "", fmt.Errorf("there is no enabled action named %s", q.Action)
	case strings.HasPrefix(st.Provenance, store.ProvenanceAgent):
		// Nobody approves a widget's call: what an agent wrote (its URL,
		// its read_only claim) is not run on a person's page load.
		return nil, "", fmt.Errorf("the action %s was written by an agent (%s); a widget calls only actions people wrote", q.Action, st.Provenance)
	}
	t, ok := w.o.Tools.Get(q.Action)
	if !ok {
		return nil, "", fmt.Errorf("the action %s is not active", q.Action)
	}
	if !t.Spec().ReadOnly {
		return nil, "", fmt.Errorf("the action %s is not read-only: a widget calls only read-only actions", q.Action)
	}
	out := w.o.Tools.Run(ctx, &tool.Call{ID: "widget-" + q.Action, Name: q.Action, Args: q.Arguments},
		&tool.RunOptions{Timeout: w.o.Timeout, MaxOutputBytes: maxActionOutput})
	if out.Result.IsError {
		return nil, "", fmt.Errorf("%s", out.Result.Output)
	}
	if json.Valid([]byte(out.Result.Output)) {
		return json.RawMessage(out.Result.Output), "application/json", nil
	}
	return out.Result.Output, "text/plain", nil
}
