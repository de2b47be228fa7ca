package gateway

// The operator's routes: readiness, metrics and usage.

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"agentd/internal/agent"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// Readiness says whether agentd can take work: nil when it can. The text
// of its error is shown to whoever asks, so it must hold no path or secret.
type Readiness interface {
	Ready(ctx context.Context) error
}

// Degraded is an optional part of agentd that is off: agentd works without
// it. Reason is shown to whoever asks, so it holds no path or secret.
type Degraded struct {
	Part   string `json:"part"` // e.g. memory
	Reason string `json:"reason"`
}

// Degradations is the optional ability of a Readiness to list the
// optional parts that are off (nil or empty: none).
type Degradations interface {
	Degraded() []Degraded
}

// StoreReporter is the optional ability of a Readiness to name the
// node's store (sqlite, postgres): /readyz says which it is.
type StoreReporter interface {
	StoreKind() string
}

// StoreProbe is the optional ability of a Readiness to time a read of the
// node's store: /readyz reports it.
type StoreProbe interface {
	ProbeStore(ctx context.Context) StoreState
}

// StoreState is the node's store as a readiness check found it.
type StoreState struct {
	Kind      string  `json:"kind"` // sqlite or postgres
	Reachable bool    `json:"reachable"`
	LatencyMS float64 `json:"latency_ms"` // of one read, reachable or not
}

// ClusterReporter is the optional ability of a Readiness to say the
// node's part in a cluster of nodes sharing a store (nil: not in one).
type ClusterReporter interface {
	Cluster() *ClusterState
}

// ClusterState is a node's part in a cluster.
type ClusterState struct {
	// Node is the node's id in the store's registry ("" until it has one).
	Node string `json:"node,omitempty"`
	// Listener is connected while the node follows the other nodes'
	// commits (their events reach its clients), else disconnected.
	Listener string `json:"listener"`
}

// Metrics writes agentd's metrics in the Prometheus text format 0.0.4.
type Metrics interface {
	WriteMetrics(ctx context.Context, w io.Writer) error
}

// Usage reports recorded usage.
type Usage interface {
	UsageReport(ctx context.Context, q store.UsageQuery) (store.UsageReport, error)
}

// MetricsContentType is the content type of GET /metrics.
const MetricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// readyTimeout bounds a readiness check.
const readyTimeout = 2 * time.Second

// ReadyResponse answers GET /readyz.
type ReadyResponse struct {
	Ready bool   `json:"ready"`
	Error string `json:"error,omitempty"` // why not
	Code  string `json:"code,omitempty"`  // not_ready
	// Store is the node's store: sqlite or postgres.
	Store string `json:"store,omitempty"`
	// Degraded lists the optional parts that are off; absent when none
	// is. They do not make agentd unready.
	Degraded []Degraded `json:"degraded,omitempty"`
	// StoreState is the store as this check found it.
	StoreState *StoreState `json:"store_state,omitempty"`
	// Cluster is the node's part in a cluster; absent on a store of one
	// node.
	Cluster *ClusterState `json:"cluster,omitempty"`
	// Connectors are the chat connectors and their states; absent when
	// there is none. A connector that is down is a degradation
	// (connector:<name>), never unreadiness: a chat platform's outage
	// must not make a load balancer take the node out.
	Connectors []ConnectorBrief `json:"connectors,omitempty"`
}

// ConnectorBrief is a connector as /readyz shows it.
type ConnectorBrief struct {
	Name      string `json:"name"`
	Platform  string `json:"platform"`
	State     string `json:"state"`
	Queue     int    `json:"queue"`
	LastError string `json:"last_error,omitempty"` // redacted
}

// connectorsReady returns the connectors' briefs and a degradation for
// each that is down.
func (s *Server) connectorsReady(ctx context.Context) ([]ConnectorBrief, []Degraded) {
	if s.o.Connectors == nil {
		return nil, nil
	}
	var briefs []ConnectorBrief
	var down []Degraded
	for _, c := range s.o.Connectors.List(ctx) {
		briefs = append(briefs, ConnectorBrief{Name: c.Name, Platform: c.Platform, State: c.State, Queue: c.Queue, LastError: c.LastError})
		if c.State == connectorDown {
			why := c.LastError
			if why == "" {
				why = "not connected"
			}
			down = append(down, Degraded{Part: "connector:" + c.Name, Reason: why})
		}
	}
	return briefs, down
}

// connectorDown is connector.StateDown (the gateway imports no connector).
const connectorDown = "down"

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.o.Ready == nil {
		s.notReady(w, "readiness is not reported by this agentd", ReadyResponse{})
		return
	}
	var degraded []Degraded
	if d, ok := s.o.Ready.(Degradations); ok {
		degraded = d.Degraded()
	}
	kind := ""
	if sr, ok := s.o.Ready.(StoreReporter); ok {
		kind = sr.StoreKind()
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	resp := ReadyResponse{Store: kind, Degraded: degraded}
	if p, ok := s.o.Ready.(StoreProbe); ok {
		st := p.ProbeStore(ctx)
		resp.StoreState = &st
	}
	if c, ok := s.o.Ready.(ClusterReporter); ok {
		resp.Cluster = c.Cluster()
	}
	var down []Degraded
	resp.Connectors, down = s.connectorsReady(ctx)
	resp.Degraded = slices.Concat(resp.Degraded, down)
	if err := s.o.Ready.Ready(ctx); err != nil {
		s.notReady(w, err.Error(), resp)
		return
	}
	resp.Ready = true
	writeJSON(w, 200, resp)
}

// notReady answers that agentd is not ready, and why: the Readiness's
// error says it as it is; resp holds what else readiness reports.
func (s *Server) notReady(w http.ResponseWriter, why string, resp ReadyResponse) {
	f := s.describe(say(errNotReady, "%s", why))
	resp.Error, resp.Code = f.Body.Error, f.Body.Code
	writeJSON(w, f.Status, resp)
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.o.Metrics == nil {
		s.unavailable(w, "metrics")
		return
	}
	var b bytes.Buffer
	if err := s.o.Metrics.WriteMetrics(r.Context(), &b); err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("Content-Type", MetricsContentType)
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(200)
	w.Write(b.Bytes())
}

// UsageTotals are summed usage.
type UsageTotals struct {
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
	Calls        int64   `json:"calls"` // model calls
}

// UsageRow is the usage of one group: Key is the day (2006-01-02, UTC),
// the agent, the session's address or the model.
type UsageRow struct {
	Key string `json:"key"`
	UsageTotals
}

// UsagePage answers GET /v1/usage.
type UsagePage struct {
	Group string     `json:"group"`
	Since *time.Time `json:"since,omitempty"`
	Until *time.Time `json:"until,omitempty"`
	Rows  []UsageRow `json:"rows"`
	// Total sums every selected row, those past the limit too.
	Total     UsageTotals `json:"total"`
	Truncated bool        `json:"truncated,omitempty"` // more rows than limit
}

func (s *Server) usage(w http.ResponseWriter, r *http.Request) {
	if s.o.Usage == nil {
		s.unavailable(w, "usage")
		return
	}
	q := r.URL.Query()
	group, err := enumParam(q, "group", store.UsageGroups())
	if err != nil {
		s.fail(w, err)
		return
	}
	if group == "" {
		group = store.UsageGroups()[0]
	}
	uq := store.UsageQuery{Group: group, Agent: q.Get("agent"), Session: q.Get("session")}
	if uq.Agent != "" && !agent.ValidID(uq.Agent) {
		s.fail(w, badRequest("agent: %q is not an agent id", uq.Agent))
		return
	}
	if uq.Session != "" {
		a, _, err := runtime.ParseAddress(uq.Session)
		if err != nil {
			s.fail(w, badRequest("session: %v", err))
			return
		}
		if uq.Agent != "" && uq.Agent != a {
			s.fail(w, badRequest("session: %s is not agent %s's", uq.Session, uq.Agent))
			return
		}
	}
	for _, p := range []struct {
		name string
		dst  *time.Time
	}{{"since", &uq.Since}, {"until", &uq.Until}} {
		v := q.Get(p.name)
		if strings.HasPrefix(v, "-") {
			s.fail(w, badRequest("%s: want an RFC 3339 time or a duration back from now such as 72h, got %q", p.name, v))
			return
		}
		t, err := timeParam(v)
		if err != nil {
			s.fail(w, badRequest("%s: want an RFC 3339 time or a duration back from now such as 72h, got %q", p.name, v))
			return
		}
		*p.dst = t
	}
	if !uq.Since.IsZero() && !uq.Until.IsZero() && !uq.Until.After(uq.Since) {
		s.fail(w, badRequest("until must be after since"))
		return
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxUsageLimit {
			s.fail(w, badRequest("limit: want 1 to %d, got %q", store.MaxUsageLimit, v))
			return
		}
		uq.Limit = n
	}
	rep, err := s.o.Usage.UsageReport(r.Context(), uq)
	if err != nil {
		s.fail(w, err)
		return
	}
	page := UsagePage{Group: uq.Group, Rows: make([]UsageRow, 0, len(rep.Rows)), Truncated: rep.Truncated,
		Total: totals(rep.Total)}
	if !uq.Since.IsZero() {
		page.Since = &uq.Since
	}
	if !uq.Until.IsZero() {
		page.Until = &uq.Until
	}
	for _, row := range rep.Rows {
		page.Rows = append(page.Rows, UsageRow{Key: row.Key, UsageTotals: totals(row)})
	}
	writeJSON(w, 200, page)
}

func totals(r store.UsageRow) UsageTotals {
	return UsageTotals{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CostUSD: r.CostUSD, Calls: r.Calls}
}
