package gateway

// The routes of agent definitions: the list, one agent's definition with
// its secrets hidden (redact.go), writing an agent's file, and reading the
// files again.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"agentd/internal/agent"
	"agentd/internal/agentsys"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// Agent states in the list.
const (
	AgentReady   = "ready"   // a definition is in use
	AgentInvalid = "invalid" // its file does not load and never did: messages to it are refused
)

// AgentInfo is an agent as the API lists it.
type AgentInfo struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Type     string `json:"type"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	File     string `json:"file,omitempty"`
	// Description is the agent's own description.
	Description string `json:"description,omitempty"`
	// State is AgentReady or AgentInvalid.
	State string `json:"state"`
	// Problems are what is wrong with the agent's file: why an invalid
	// agent does not load, or, for a ready one, why the file's newest
	// version does not (its last good definition stays in use).
	Problems []Problem `json:"problems,omitempty"`
	// ModelHint, for an agent on the built-in echo model, says how to
	// configure a real one.
	ModelHint string `json:"model_hint,omitempty"`

	// The fields of a dynamic agent (an instance of a definition, its
	// template, made at run time); absent for a definition. Its State is
	// one of store.AgentStates.
	Dynamic    bool   `json:"dynamic,omitempty"`
	Template   string `json:"template,omitempty"`
	Descriptor string `json:"descriptor,omitempty"`
	// Parent is the agent that started it ("" none), Root the top of its
	// parent chain, Depth how far below it is.
	Parent string `json:"parent,omitempty"`
	Root   string `json:"root,omitempty"`
	Depth  int    `json:"depth,omitempty"`
	// Session is the address of its main session ("<id>/main").
	Session string `json:"session,omitempty"`
	// Children counts its live children.
	Children int `json:"children,omitempty"`
	// CostUSD is what it spent; CostTreeUSD what it and every agent below
	// it spent.
	CostUSD     float64   `json:"cost_usd,omitempty"`
	CostTreeUSD float64   `json:"cost_tree_usd,omitempty"`
	CreatedAt   time.Time `json:"created_at,omitzero"`
	EndedAt     time.Time `json:"ended_at,omitzero"`
}

// DynamicAgents are the agents made at run time (agentsys.System): the
// instances of definitions, their lineage, state and costs.
type DynamicAgents interface {
	// List lists the instances f selects (and, with no type or lineage
	// filter, the cron and system agents) and the next page's cursor.
	List(ctx context.Context, f store.AgentFilter) ([]agentsys.Info, string, error)
	// Tree returns the tree of root ("" every tree with a live member).
	Tree(ctx context.Context, root string) ([]agentsys.Node, error)
	// Status returns an agent's state: agentsys.ErrNotFound for an id that
	// is no dynamic agent.
	Status(ctx context.Context, id string) (agentsys.Status, error)
	// Start starts a background agent of req.Template.
	Start(ctx context.Context, req agentsys.StartRequest) (store.Instance, error)
	// Contact submits a person's message to their instance of a user or
	// swarm template, made on first contact.
	Contact(ctx context.Context, c agentsys.Contact) (store.Instance, runtime.Receipt, error)
	// Stop stops an agent and the agents below it, by whom, and returns
	// the ids stopped.
	Stop(ctx context.Context, id, reason, by string) ([]string, error)
}

// NextHeader names the response header of GET /v1/agents that holds the
// cursor of the next page of dynamic agents (the body stays an array).
const NextHeader = "Agentd-Next"

func (s *Server) agents(w http.ResponseWriter, r *http.Request) {
	q, err := agentListQuery(r.URL.Query())
	if err != nil {
		s.fail(w, err)
		return
	}
	var out []AgentInfo
	if q.definitions() {
		out = s.definitionInfos(q.Type, q.State)
	} else {
		out = []AgentInfo{}
	}
	if !q.instances() || s.o.DynamicAgents == nil {
		writeJSON(w, 200, out)
		return
	}
	infos, next, err := s.o.DynamicAgents.List(r.Context(), q.AgentFilter)
	if err != nil {
		s.fail(w, err)
		return
	}
	out = mergeInfos(out, infos, q.definitions())
	if next != "" {
		w.Header().Set(NextHeader, next)
	}
	writeJSON(w, 200, out)
}

// definitionInfos lists the agent definitions, of type typ and in state
// ("" any), by id.
func (s *Server) definitionInfos(typ, state string) []AgentInfo {
	defs := s.o.Agents.List()
	var errs map[string]error
	if s.o.AgentFiles != nil {
		errs = s.o.AgentFiles.Errors()
	}
	out := make([]AgentInfo, 0, len(defs)+len(errs))
	for _, d := range defs {
		a := AgentInfo{ID: d.ID, Name: d.Name, Type: d.Type, Provider: d.Model.Provider, Model: d.Model.Name, File: d.File,
			Description: d.Description, State: AgentReady}
		if d.Model.Provider == agent.ProviderEcho {
			a.ModelHint = agent.ModelHint()
			if d.File != "" {
				a.ModelHint = agent.ModelHintFor(agent.AgentsDir + "/" + filepath.Base(d.File))
			}
		}
		if err := errs[d.ID]; err != nil {
			a.Problems = problems(err, true)
			delete(errs, d.ID)
		}
		out = append(out, a)
	}
	for id, err := range errs {
		out = append(out, AgentInfo{ID: id, File: agentFile(id, err), State: AgentInvalid, Problems: problems(err, true)})
	}
	out = slices.DeleteFunc(out, func(a AgentInfo) bool {
		return (typ != "" && a.Type != typ) || (state != "" && a.State != state)
	})
	slices.SortFunc(out, func(a, b AgentInfo) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// mergeInfos appends the dynamic agents of infos to defs; an agent of
// infos that is a definition (a cron or system agent) lends its descriptor
// to defs' entry of its id, and is appended only if defs lists
// definitions and has none.
func mergeInfos(defs []AgentInfo, infos []agentsys.Info, withDefs bool) []AgentInfo {
	out := defs
	for _, in := range infos {
		if !in.Dynamic {
			if i := slices.IndexFunc(defs, func(a AgentInfo) bool { return a.ID == in.ID }); i >= 0 {
				defs[i].Descriptor = in.Descriptor
				continue
			}
			if !withDefs {
				continue
			}
		}
		out = append(out, infoOf(in))
	}
	return out
}

// infoOf is an agent of the agent system as the list shows it.
func infoOf(in agentsys.Info) AgentInfo {
	return AgentInfo{ID: in.ID, Name: in.Name, Type: in.Type, Model: in.Model, State: in.State, Dynamic: in.Dynamic,
		Template: in.Template, Descriptor: in.Descriptor, Parent: in.Parent, Root: in.Root, Depth: in.Depth,
		Session: in.Session, Children: in.LiveChildren, CostUSD: in.CostUSD, CreatedAt: in.CreatedAt, EndedAt: in.EndedAt}
}

// agentFile is the file an agent's load error names, or its usual name.
func agentFile(id string, err error) string {
	var ce *agent.ConfigError
	if errors.As(err, &ce) && len(ce.Errors) > 0 && ce.Errors[0].File != "" {
		return ce.Errors[0].File
	}
	return agent.AgentsDir + "/" + id + ".yaml"
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
	// Instance is a dynamic agent's state (Definition is then the one
	// derived from its template).
	Instance *agentsys.Status `json:"instance,omitempty"`
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
	st, dynamic, err := s.agentStatus(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	d, ok := s.agentDef(id)
	var out AgentDetail
	switch {
	case ok:
		if out, err = s.detail(d); err != nil {
			s.fail(w, err)
			return
		}
	case !dynamic:
		s.fail(w, notFound("agent %s", id))
		return
	default:
		out.ID = id
	}
	if dynamic {
		out.Instance = &st
	}
	writeJSON(w, 200, out)
}

// agentStatus returns the state of the dynamic agent id, and false if id
// is none (or there are no dynamic agents here).
func (s *Server) agentStatus(ctx context.Context, id string) (agentsys.Status, bool, error) {
	if s.o.DynamicAgents == nil {
		return agentsys.Status{}, false, nil
	}
	st, err := s.o.DynamicAgents.Status(ctx, id)
	switch {
	case errors.Is(err, agentsys.ErrNotFound) || errors.Is(err, store.ErrNotFound):
		return agentsys.Status{}, false, nil
	case err != nil:
		return agentsys.Status{}, false, err
	}
	return st, true, nil
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
			s.fail(w, say(errMediaType, "content type %q: send the agent file as YAML or JSON", ct))
			return
		}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.fail(w, say(errTooLarge, "body larger than %d bytes", MaxBody))
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
	f := s.describe(say(ErrBadRequest, "agent %s: %s", id, msg))
	writeJSON(w, f.Status, AgentError{Error: f.Body, Problems: ps})
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
