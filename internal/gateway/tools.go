package gateway

// The routes of the tool layer: the message lifecycle, agents' keys,
// approvals waiting for a person, MCP servers, compaction on request and
// skills.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"time"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/identity"
	"agentd/internal/mcp"
	"agentd/internal/permit"
	"agentd/internal/runtime"
	"agentd/internal/skill"
	"agentd/internal/tool"
)

// Lifecycle runs the Daemon message lifecycle as one call.
type Lifecycle interface {
	Message(ctx context.Context, in runtime.Input) (runtime.Receipt, *engine.Object, error)
}

// Approvals lists and answers the calls waiting for a person.
type Permits interface {
	List() []permit.Request
	Resolve(id string, d permit.Decision) error
}

// MCPServers manages the MCP servers agentd connects to.
type MCPServers interface {
	List() []mcp.Status
	Add(ctx context.Context, d mcp.Def) (mcp.Status, error)
	Remove(ctx context.Context, name string) error
	Tools(name string) ([]tool.Spec, error)
}

// Keys are the agents' identity keys.
type Keys interface {
	Public(agentID string) (string, bool, error)
	Generate(agentID string, force bool) (string, error)
	Import(agentID string, r io.Reader, force bool) (string, error)
}

// Compacter compacts a session's context on request.
type Compacter interface {
	Compact(ctx context.Context, addr, focus string) (runtime.Receipt, event.TurnEndData, error)
}

// CompactRequest is the body of POST .../compact.
type CompactRequest struct {
	Focus string `json:"focus,omitempty"` // what the summary must keep in particular
}

func (s *Server) compact(w http.ResponseWriter, r *http.Request) {
	c, ok := s.o.Runtime.(Compacter)
	if !ok {
		s.unavailable(w, "compaction")
		return
	}
	var req CompactRequest
	if r.ContentLength != 0 && !s.decode(w, r, &req) {
		return
	}
	rc, end, err := c.Compact(r.Context(), addr(r), req.Focus)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, MessageResponse{Receipt: rc, End: &end})
}

// Skills gives the current skills.
type Skills interface {
	Skills() *skill.Set
}

// unavailable answers for a part agentd was built without.
func (s *Server) unavailable(w http.ResponseWriter, what string) {
	s.fail(w, say(errNotAvailable, "%s is not available here", what))
}

// LifecycleRequest is the body of POST /v1/agents/{id}/message.
type LifecycleRequest struct {
	Message string `json:"message"`
	// Session is the session key (default: the channel id, else "lifecycle").
	Session        string                   `json:"session,omitempty"`
	Opts           *engine.LifecycleOptions `json:"opts,omitempty"`
	IdempotencyKey string                   `json:"idempotency_key,omitempty"`
}

// LifecycleResponse answers it.
type LifecycleResponse struct {
	runtime.Receipt
	Lifecycle *engine.Object `json:"lifecycle"`
}

func (s *Server) lifecycle(w http.ResponseWriter, r *http.Request) {
	if s.o.Lifecycle == nil {
		s.unavailable(w, "the message lifecycle")
		return
	}
	var req LifecycleRequest
	if !s.decode(w, r, &req) {
		return
	}
	key := req.Session
	var opts json.RawMessage
	if req.Opts != nil {
		if key == "" && agent.ValidID(req.Opts.ChannelID) {
			key = req.Opts.ChannelID
		}
		opts, _ = json.Marshal(req.Opts)
	}
	if key == "" {
		key = "lifecycle"
	}
	rc, obj, err := s.o.Lifecycle.Message(r.Context(), runtime.Input{Session: r.PathValue("id") + "/" + key, Text: req.Message,
		Source: "api", IdempotencyKey: req.IdempotencyKey, Options: opts})
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, LifecycleResponse{Receipt: rc, Lifecycle: obj})
}

// KeyInfo is an agent's public key.
type KeyInfo struct {
	Agent  string `json:"agent"`
	Pubkey string `json:"pubkey,omitempty"` // base58 (Solana format)
	Exists bool   `json:"exists"`
}

// KeyRequest is the body of POST and PUT /v1/agents/{id}/key.
type KeyRequest struct {
	Force   bool            `json:"force,omitempty"`
	Keypair json.RawMessage `json:"keypair,omitempty"` // PUT: a Solana keypair file's content
}

func (s *Server) keyShow(w http.ResponseWriter, r *http.Request) {
	if s.o.Keys == nil {
		s.unavailable(w, "identity")
		return
	}
	id := r.PathValue("id")
	pub, ok, err := s.o.Keys.Public(id)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, KeyInfo{Agent: id, Pubkey: pub, Exists: ok})
}

func (s *Server) keyGenerate(w http.ResponseWriter, r *http.Request) { s.keyWrite(w, r, false) }
func (s *Server) keyImport(w http.ResponseWriter, r *http.Request)   { s.keyWrite(w, r, true) }

func (s *Server) keyWrite(w http.ResponseWriter, r *http.Request, imp bool) {
	if s.o.Keys == nil {
		s.unavailable(w, "identity")
		return
	}
	var req KeyRequest
	if r.ContentLength != 0 && !s.decode(w, r, &req) {
		return
	}
	id := r.PathValue("id")
	var pub string
	var err error
	if imp {
		if len(req.Keypair) == 0 {
			s.fail(w, badRequest("keypair: required (the content of a Solana keypair file)"))
			return
		}
		pub, err = s.o.Keys.Import(id, bytes.NewReader(req.Keypair), req.Force)
	} else {
		pub, err = s.o.Keys.Generate(id, req.Force)
	}
	switch {
	case errors.Is(err, identity.ErrExists):
		err = say(errConflict, "agent %s already has a key; force replaces it", id)
	case imp && errors.Is(err, identity.ErrKeyFile):
		// The keypair sent is not one. (A key file of agentd's own that
		// does not load is agentd's trouble, not the request's.)
		err = &also{kind: ErrBadRequest, err: err}
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, KeyInfo{Agent: id, Pubkey: pub, Exists: true})
}

func (s *Server) approvals(w http.ResponseWriter, r *http.Request) {
	if s.o.Permits == nil {
		writeJSON(w, 200, []permit.Request{})
		return
	}
	writeJSON(w, 200, s.o.Permits.List())
}

// ResolveRequest is the body of POST /v1/approvals/{id}/grant and /deny.
// Scope, on a grant only, widens it into a standing grant: "session"
// (every call of the tool in the session) or "always" (this exact call in
// every session of the agent; refused when the card has no exact call).
type ResolveRequest struct {
	Reason string `json:"reason,omitempty"`
	By     string `json:"by,omitempty"`
	Scope  string `json:"scope,omitempty"`
}

func (s *Server) grant(w http.ResponseWriter, r *http.Request) { s.resolve(w, r, true) }
func (s *Server) deny(w http.ResponseWriter, r *http.Request)  { s.resolve(w, r, false) }

func (s *Server) resolve(w http.ResponseWriter, r *http.Request, grant bool) {
	if s.o.Permits == nil {
		s.fail(w, notFound("approval %s", r.PathValue("id")))
		return
	}
	var req ResolveRequest
	if r.ContentLength != 0 && !s.decode(w, r, &req) {
		return
	}
	if req.By == "" {
		req.By = "api"
	}
	if err := s.checkScope(r.PathValue("id"), grant, req.Scope); err != nil {
		s.fail(w, err)
		return
	}
	if req.Scope == permit.ScopeAlways && !adminAccess(r) {
		// A standing change of the agent's policy, as an admin route is.
		s.fail(w, say(ErrForbidden, "an \"always\" grant changes what runs on the machine: use the local socket (agentd on that host), or set gateway.remote_admin: true; or allow the call once or for the session"))
		return
	}
	d := permit.Decision{Granted: grant, Reason: req.Reason, By: req.By, Scope: req.Scope}
	if err := s.o.Permits.Resolve(r.PathValue("id"), d); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, d)
}

// ServerInfo is an MCP server as the API shows it.
type ServerInfo struct {
	Name          string    `json:"name"`
	Transport     string    `json:"transport"`
	Source        string    `json:"source"`
	State         string    `json:"state"`
	Agents        []string  `json:"agents,omitempty"`
	Tools         int       `json:"tools"`
	Restarts      int       `json:"restarts"`
	LastError     string    `json:"last_error,omitempty"`
	PID           int       `json:"pid,omitempty"`
	ServerName    string    `json:"server_name,omitempty"`
	ServerVersion string    `json:"server_version,omitempty"`
	Since         time.Time `json:"since"`
}

func serverInfo(st mcp.Status) ServerInfo {
	return ServerInfo{Name: st.Name, Transport: st.Transport, Source: st.Source, State: st.State, Agents: st.Agents,
		Tools: st.Tools, Restarts: st.Restarts, LastError: st.LastError, PID: st.PID, ServerName: st.ServerName,
		ServerVersion: st.ServerVersion, Since: st.Since}
}

// AddServerRequest is the body of POST /v1/mcp/servers.
type AddServerRequest struct {
	Name   string          `json:"name"`
	Server agent.MCPServer `json:"server"`
	// Agent, if set, makes the server that agent's alone.
	Agent string `json:"agent,omitempty"`
}

func (s *Server) mcpList(w http.ResponseWriter, r *http.Request) {
	out := []ServerInfo{}
	if s.o.MCP != nil {
		for _, st := range s.o.MCP.List() {
			out = append(out, serverInfo(st))
		}
	}
	writeJSON(w, 200, out)
}

func (s *Server) mcpAdd(w http.ResponseWriter, r *http.Request) {
	if s.o.MCP == nil {
		s.unavailable(w, "MCP")
		return
	}
	var req AddServerRequest
	if !s.decode(w, r, &req) {
		return
	}
	d := mcp.Def{Name: req.Name, Config: req.Server, Source: "runtime"}
	if req.Agent != "" {
		d.Agents = []string{req.Agent}
	}
	st, err := s.o.MCP.Add(r.Context(), d)
	if err != nil {
		// Unless the manager refused it, the server did not start or
		// answer (errConnect).
		s.fail(w, &also{kind: errConnect, err: err})
		return
	}
	writeJSON(w, 201, serverInfo(st))
}

func (s *Server) mcpRemove(w http.ResponseWriter, r *http.Request) {
	if s.o.MCP == nil {
		s.unavailable(w, "MCP")
		return
	}
	if err := s.o.MCP.Remove(r.Context(), r.PathValue("name")); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, map[string]bool{"removed": true})
}

// ToolInfo is a tool as the API shows it.
type ToolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Kind        string          `json:"kind"`
	ReadOnly    bool            `json:"read_only,omitempty"`
	Idempotent  bool            `json:"idempotent,omitempty"`
	Destructive bool            `json:"destructive,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

func (s *Server) mcpTools(w http.ResponseWriter, r *http.Request) {
	if s.o.MCP == nil {
		s.unavailable(w, "MCP")
		return
	}
	specs, err := s.o.MCP.Tools(r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	out := make([]ToolInfo, 0, len(specs))
	for _, sp := range specs {
		kind := sp.Kind
		if kind == "" {
			kind = tool.KindModel
		}
		out = append(out, ToolInfo{Name: sp.Name, Description: sp.Description, Kind: kind, ReadOnly: sp.ReadOnly,
			Idempotent: sp.Idempotent, Destructive: sp.Destructive, InputSchema: sp.InputSchema})
	}
	writeJSON(w, 200, out)
}

// SkillInfo is a skill as the API lists it.
type SkillInfo struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Dir         string   `json:"dir"`
	Available   bool     `json:"available"`
	Missing     []string `json:"missing,omitempty"`
	Error       string   `json:"error,omitempty"`
	Servers     []string `json:"mcp_servers,omitempty"`
}

// SkillDetail is one skill with its instructions.
type SkillDetail struct {
	SkillInfo
	Body string `json:"body"`
}

func skillInfo(sk skill.Skill) SkillInfo {
	in := SkillInfo{Name: sk.Name, Description: sk.Description, Dir: sk.Dir, Available: sk.Available, Missing: sk.Missing}
	if sk.Err != nil {
		in.Error = sk.Err.Error()
	}
	for name := range sk.MCPServers {
		in.Servers = append(in.Servers, name)
	}
	slices.Sort(in.Servers)
	return in
}

func (s *Server) skillList(w http.ResponseWriter, r *http.Request) {
	out := []SkillInfo{}
	if s.o.Skills != nil {
		for _, sk := range s.o.Skills.Skills().List() {
			out = append(out, skillInfo(sk))
		}
	}
	writeJSON(w, 200, out)
}

func (s *Server) skillShow(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if s.o.Skills == nil {
		s.fail(w, notFound("skill %s", name))
		return
	}
	set := s.o.Skills.Skills()
	sk, ok := set.Get(name)
	if !ok {
		s.fail(w, notFound("skill %s", name))
		return
	}
	d := SkillDetail{SkillInfo: skillInfo(sk)}
	if sk.Err == nil {
		body, err := set.Body(name)
		if err != nil && !errors.Is(err, skill.ErrInvalid) {
			s.fail(w, err)
			return
		}
		d.Body = body
	}
	writeJSON(w, 200, d)
}
