package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"agentd/internal/agent"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// Routes of the operator (JSON unless noted):
//
//	GET  /readyz                      200 once the runtime has started and the store answers and can write; 503 with the reason
//	GET  /metrics                     Prometheus text format 0.0.4
//	GET  /v1/usage?group=day|agent|session|model&agent=A&session=A/K&since=T&until=T&limit=N
//	GET  /v1/agents/{id}              an agent's definition, secrets hidden
//	PUT  /v1/agents/{id}              create or replace its file from a YAML or JSON body
//	POST /v1/agents/{id}/reload       read the agent files again; this agent's state
//	POST /v1/agents/reload            read the agent files again; every problem

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

// Metrics writes agentd's metrics in the Prometheus text format 0.0.4.
type Metrics interface {
	WriteMetrics(ctx context.Context, w io.Writer) error
}

// Usage reports recorded usage.
type Usage interface {
	UsageReport(ctx context.Context, q store.UsageQuery) (store.UsageReport, error)
}

// AgentFiles writes and reloads agent files.
type AgentFiles interface {
	// PutFile validates data as an agent file and writes it (see
	// agent.Registry.PutFile).
	PutFile(id string, data []byte) (created bool, err error)
	// Reload reads the agent files again.
	Reload() error
	// Errors gives the files that do not load, by agent id.
	Errors() map[string]error
}

// MetricsContentType is the content type of GET /metrics.
const MetricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// readyTimeout bounds a readiness check.
const readyTimeout = 2 * time.Second

func (s *Server) routeOps() {
	m := s.mux
	m.HandleFunc("GET /readyz", s.readyz)
	m.HandleFunc("GET /metrics", s.metrics)
	m.HandleFunc("GET /v1/usage", s.usage)
	m.HandleFunc("GET /v1/agents/{id}", s.agentGet)
	m.HandleFunc("PUT /v1/agents/{id}", s.agentPut)
	m.HandleFunc("POST /v1/agents/{id}/reload", s.agentReload)
	m.HandleFunc("POST /v1/agents/reload", s.agentsReload)
}

// ReadyResponse answers GET /readyz.
type ReadyResponse struct {
	Ready bool   `json:"ready"`
	Error string `json:"error,omitempty"` // why not
	Code  string `json:"code,omitempty"`  // not_ready
	// Degraded lists the optional parts that are off; absent when none
	// is. They do not make agentd unready.
	Degraded []Degraded `json:"degraded,omitempty"`
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.o.Ready == nil {
		writeJSON(w, http.StatusServiceUnavailable, ReadyResponse{Error: "readiness is not reported by this agentd", Code: "not_ready"})
		return
	}
	var degraded []Degraded
	if d, ok := s.o.Ready.(Degradations); ok {
		degraded = d.Degraded()
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.o.Ready.Ready(ctx); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, ReadyResponse{Error: err.Error(), Code: "not_ready", Degraded: degraded})
		return
	}
	writeJSON(w, 200, ReadyResponse{Ready: true, Degraded: degraded})
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
		s.fail(w, badRequestIfInvalid(err))
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

// Hidden stands in for a value GET /v1/agents/{id} does not show: an MCP
// server's env and header values and the credentials and query values of
// its URL. A PUT that still holds it is refused.
const Hidden = "<hidden>"

// AgentDetail is an agent as GET /v1/agents/{id} shows it.
type AgentDetail struct {
	ID   string `json:"id"`
	File string `json:"file,omitempty"` // the agent file ("" for the built-in assistant)
	// Definition is the agent's definition with defaults applied, in the
	// shape of its file (a PUT takes it back). API keys appear only as the
	// names of the variables holding them; values that may be secrets are
	// Hidden.
	Definition map[string]any `json:"definition"`
	// Problems are what is wrong with the agent's file now; the
	// definition shown is then the last one that loaded.
	Problems []Problem `json:"problems,omitempty"`
}

// Problem is one problem with an agent file or body.
type Problem struct {
	File    string `json:"file,omitempty"` // relative to the data directory; absent for a request body
	Line    int    `json:"line,omitempty"`
	Field   string `json:"field,omitempty"` // dotted path, e.g. model.params.temperature
	Message string `json:"message"`
}

// AgentError answers a PUT /v1/agents/{id} whose body is not a valid agent
// definition.
type AgentError struct {
	Error
	Problems []Problem `json:"problems"`
}

// problems lists the problems an error holds: a *agent.ConfigError's, one
// for any other error.
func problems(err error, file bool) []Problem {
	var out []Problem
	for _, e := range unjoin(err) {
		var ce *agent.ConfigError
		if !errors.As(e, &ce) {
			out = append(out, Problem{Message: e.Error()})
			continue
		}
		for _, fe := range ce.Errors {
			p := Problem{Line: fe.Line, Field: fe.Field, Message: fe.Msg}
			if file {
				p.File = fe.File
			}
			out = append(out, p)
		}
	}
	return out
}

// unjoin lists the errors errors.Join put together, however nested.
func unjoin(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, unjoin(e)...)
	}
	return out
}

// agentDef returns the current definition of agent id.
func (s *Server) agentDef(id string) (*agent.Definition, bool) {
	if g, ok := s.o.Agents.(interface {
		Get(id string) (*agent.Definition, bool)
	}); ok {
		return g.Get(id)
	}
	for _, d := range s.o.Agents.List() {
		if d.ID == id {
			return d, true
		}
	}
	return nil, false
}

// detail is what GET shows of an agent.
func (s *Server) detail(d *agent.Definition) (AgentDetail, error) {
	view, err := definitionView(d)
	if err != nil {
		return AgentDetail{}, err
	}
	out := AgentDetail{ID: d.ID, File: d.File, Definition: view}
	if s.o.AgentFiles != nil {
		if err := s.o.AgentFiles.Errors()[d.ID]; err != nil {
			out.Problems = problems(err, true)
		}
	}
	return out, nil
}

// definitionView is d as JSON in the shape of an agent file, secrets
// hidden. An empty servers or skills list means none, where a missing one
// means all: it is kept, so that the view written back means the same.
func definitionView(d *agent.Definition) (map[string]any, error) {
	b, err := json.Marshal(redact(d))
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", d.ID, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("agent %s: %w", d.ID, err)
	}
	delete(m, "file") // not a field of the file
	if d.Servers != nil && len(d.Servers) == 0 {
		m["servers"] = []string{}
	}
	if d.Skills != nil && len(d.Skills) == 0 {
		m["skills"] = []string{}
	}
	return m, nil
}

func (s *Server) agentGet(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	d, ok := s.agentDef(id)
	if !ok {
		s.fail(w, notFound("agent %s", id))
		return
	}
	out, err := s.detail(d)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, out)
}

// redact returns a copy of d without the values that may be secrets.
func redact(d *agent.Definition) *agent.Definition {
	c := d.Clone()
	if d.MCPServers != nil {
		c.MCPServers = make(map[string]agent.MCPServer, len(d.MCPServers))
		for name, srv := range d.MCPServers {
			srv.Env = hideValues(srv.Env)
			srv.Headers = hideValues(srv.Headers)
			srv.URL = hideURL(srv.URL)
			// Arguments carry tokens as often as anything (--token X).
			srv.Args = hideList(srv.Args)
			c.MCPServers[name] = srv
		}
	}
	c.Model = redactModel(d.Model)
	if d.Bootstrap != nil {
		c.Bootstrap = make([]agent.BootstrapCall, len(d.Bootstrap))
		for i, b := range d.Bootstrap {
			b.Args = hideValues(b.Args)
			c.Bootstrap[i] = b
		}
	}
	return c
}

// redactModel hides a model's base URL credentials and query values, its
// extra provider parameters, and those of its fallbacks.
func redactModel(m agent.Model) agent.Model {
	m.BaseURL = hideURL(m.BaseURL)
	m.Params.Extra = hideValues(m.Params.Extra)
	if m.Fallbacks != nil {
		fs := make([]agent.Model, len(m.Fallbacks))
		for i, f := range m.Fallbacks {
			fs[i] = redactModel(f)
		}
		m.Fallbacks = fs
	}
	return m
}

func hideList(l []string) []string {
	if l == nil {
		return nil
	}
	out := make([]string, len(l))
	for i := range out {
		out[i] = Hidden
	}
	return out
}

func hideValues[V string | any](m map[string]V) map[string]V {
	if m == nil {
		return nil
	}
	var hidden V
	switch p := any(&hidden).(type) {
	case *string:
		*p = Hidden
	case *any:
		*p = Hidden
	}
	out := make(map[string]V, len(m))
	for k := range m {
		out[k] = hidden
	}
	return out
}

// hideURL hides a URL's user information and query values.
func hideURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Hidden
	}
	if u.User != nil {
		u.User = url.User(Hidden)
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			u.RawQuery = url.QueryEscape(Hidden)
		} else {
			for k, vs := range q {
				for i := range vs {
					vs[i] = Hidden
				}
				q[k] = vs
			}
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// hiddenFields names the places in an agent document that still hold
// Hidden, as a GET shows them: writing them back would replace the real
// values with the placeholder.
func hiddenFields(body []byte) []Problem {
	var doc struct {
		MCPServers map[string]struct {
			Env     map[string]any `yaml:"env"`
			Headers map[string]any `yaml:"headers"`
			URL     any            `yaml:"url"`
		} `yaml:"mcp_servers"`
	}
	if yaml.Unmarshal(body, &doc) != nil {
		return nil // not a document: PutFile says what is wrong
	}
	var out []Problem
	hint := "holds " + Hidden + ", which GET shows instead of the value; write the value (or name a variable in pass_env / headers_env)"
	for _, name := range slices.Sorted(maps.Keys(doc.MCPServers)) {
		srv := doc.MCPServers[name]
		for _, f := range []struct {
			field string
			m     map[string]any
		}{{"env", srv.Env}, {"headers", srv.Headers}} {
			for _, k := range slices.Sorted(maps.Keys(f.m)) {
				if v, ok := f.m[k].(string); ok && v == Hidden {
					out = append(out, Problem{Field: "mcp_servers." + name + "." + f.field + "." + k, Message: hint})
				}
			}
		}
		if raw, ok := srv.URL.(string); ok && urlHidden(raw) {
			out = append(out, Problem{Field: "mcp_servers." + name + ".url", Message: hint})
		}
	}
	// Anywhere else GET hides values (arguments, base URLs, extra
	// parameters, bootstrap arguments).
	if len(out) == 0 && (bytes.Contains(body, []byte(Hidden)) || bytes.Contains(body, []byte(url.QueryEscape(Hidden)))) {
		out = append(out, Problem{Message: "the document " + hint})
	}
	return out
}

func urlHidden(raw string) bool {
	if strings.Contains(raw, Hidden) {
		return true
	}
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	if u.User != nil && u.User.Username() == Hidden {
		return true
	}
	q, _ := url.ParseQuery(u.RawQuery)
	for _, vs := range q {
		if slices.Contains(vs, Hidden) {
			return true
		}
	}
	return false
}

// agentBodyTypes are the content types PUT /v1/agents/{id} reads as the
// file's text (none given counts too). application/x-www-form-urlencoded
// is what curl --data-binary sends unless told otherwise; the body is
// still read as it is, not as a form.
var agentBodyTypes = []string{"application/json", "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml",
	"text/plain", "application/x-www-form-urlencoded"}

func (s *Server) agentPut(w http.ResponseWriter, r *http.Request) {
	if s.o.AgentFiles == nil {
		s.unavailable(w, "writing agent files")
		return
	}
	id := r.PathValue("id")
	if !agent.ValidID(id) {
		s.fail(w, badRequest("%q is not a valid agent id: use up to 64 letters, digits, - and _, starting with a letter or digit", id))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !slices.Contains(agentBodyTypes, mt) {
			writeJSON(w, http.StatusUnsupportedMediaType, Error{Error: fmt.Sprintf("content type %q: send the agent file as YAML or JSON", ct), Code: "unsupported_media_type"})
			return
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, Error{Error: fmt.Sprintf("body larger than %d bytes", MaxBody), Code: "too_large"})
			return
		}
		s.fail(w, badRequest("body: %v", err))
		return
	}
	if len(bytes.TrimSpace(body)) == 0 {
		s.fail(w, badRequest("body: want the agent definition, in YAML or JSON"))
		return
	}
	if ps := hiddenFields(body); len(ps) > 0 {
		s.invalidAgent(w, id, ps)
		return
	}
	created, err := s.o.AgentFiles.PutFile(id, body)
	var ce *agent.ConfigError
	switch {
	case errors.As(err, &ce):
		s.invalidAgent(w, id, problems(ce, false))
		return
	case errors.Is(err, agent.ErrInvalidID):
		s.fail(w, badRequest("%v", err))
		return
	case err != nil:
		s.fail(w, err)
		return
	}
	d, ok := s.agentDef(id)
	if !ok {
		s.fail(w, fmt.Errorf("agent %s written but not loaded", id))
		return
	}
	out, err := s.detail(d)
	if err != nil {
		s.fail(w, err)
		return
	}
	status := 200
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, out)
}

// invalidAgent answers 400 with the problems of an agent body.
func (s *Server) invalidAgent(w http.ResponseWriter, id string, ps []Problem) {
	first := ps[0]
	msg := first.Message
	if first.Field != "" {
		msg = first.Field + ": " + msg
	}
	if first.Line > 0 {
		msg = fmt.Sprintf("line %d: %s", first.Line, msg)
	}
	if len(ps) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(ps)-1)
	}
	writeJSON(w, http.StatusBadRequest, AgentError{Error: Error{Error: "agent " + id + ": " + msg, Code: "bad_request"}, Problems: ps})
}

// AgentState answers POST /v1/agents/{id}/reload.
type AgentState struct {
	Agent  string `json:"agent"`
	Loaded bool   `json:"loaded"`
	// Problems are what is wrong with its file; when Loaded, the last
	// definition that loaded stays in use.
	Problems []Problem `json:"problems,omitempty"`
}

// ReloadResponse answers POST /v1/agents/reload.
type ReloadResponse struct {
	Agents   []string             `json:"agents"`             // the agents loaded, by id
	Problems map[string][]Problem `json:"problems,omitempty"` // files that do not load, by agent id
}

// reload reads the agent files again and returns the problems by agent; it
// answers the request itself (and returns false) when agents/ cannot be read.
func (s *Server) reload(w http.ResponseWriter) (map[string]error, bool) {
	if s.o.AgentFiles == nil {
		s.unavailable(w, "reloading agent files")
		return nil, false
	}
	err := s.o.AgentFiles.Reload()
	errs := s.o.AgentFiles.Errors()
	if err != nil && len(errs) == 0 {
		s.fail(w, err) // the directory, not a file
		return nil, false
	}
	return errs, true
}

func (s *Server) agentReload(w http.ResponseWriter, r *http.Request) {
	errs, ok := s.reload(w)
	if !ok {
		return
	}
	id := r.PathValue("id")
	_, loaded := s.agentDef(id)
	st := AgentState{Agent: id, Loaded: loaded}
	if err := errs[id]; err != nil {
		st.Problems = problems(err, true)
	}
	if !loaded && st.Problems == nil {
		s.fail(w, notFound("agent %s", id))
		return
	}
	writeJSON(w, 200, st)
}

func (s *Server) agentsReload(w http.ResponseWriter, r *http.Request) {
	errs, ok := s.reload(w)
	if !ok {
		return
	}
	out := ReloadResponse{Agents: []string{}}
	for _, d := range s.o.Agents.List() {
		out.Agents = append(out.Agents, d.ID)
	}
	if len(errs) > 0 {
		out.Problems = make(map[string][]Problem, len(errs))
		for id, err := range errs {
			out.Problems[id] = problems(err, true)
		}
	}
	writeJSON(w, 200, out)
}
