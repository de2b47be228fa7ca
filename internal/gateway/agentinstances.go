package gateway

// The routes that act on dynamic agents: a person starts a background
// agent, reaches a user or swarm agent through a connector, or stops an
// agent and the agents below it.

import (
	"net/http"
	"strings"
	"unicode"

	"agentd/internal/agent"
	"agentd/internal/agentsys"
	"agentd/internal/runtime"
)

// StartAgentRequest is the body of POST /v1/agents/{template}/start.
type StartAgentRequest struct {
	Prompt string `json:"prompt"` // its first message (its task)
	Name   string `json:"name,omitempty"`
	// ReportTo is a session address its end is reported to ("" none).
	ReportTo string `json:"report_to,omitempty"`
	// Budgets tighten its first turn's budgets; they never loosen the
	// template's.
	Budgets *agent.Budgets `json:"budgets,omitempty"`
}

// StartAgentResponse answers a start (202): the new agent, its main
// session and its first turn (0 until known).
type StartAgentResponse struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	Turn    int64  `json:"turn"`
}

// ContactRequest is the body of POST /v1/agents/{template}/contact: a
// person's message through a connector.
type ContactRequest struct {
	Connector string `json:"connector"`
	Channel   string `json:"channel"`
	User      string `json:"user"`
	Text      string `json:"text"`
}

// ContactResponse answers a contact (202): the person's agent and the
// message's receipt.
type ContactResponse struct {
	ID string `json:"id"`
	runtime.Receipt
}

// StopAgentRequest is the body of POST /v1/agents/{id}/stop.
type StopAgentRequest struct {
	Reason string `json:"reason,omitempty"`
}

// StopAgentResponse answers a stop: the agents stopped, deepest first.
type StopAgentResponse struct {
	Stopped []string `json:"stopped"`
}

// MaxIdempotencyKey bounds an Idempotency-Key header, in bytes.
const MaxIdempotencyKey = 256

// stoppedBy is whom the agent system is told stopped an agent through the
// API.
const stoppedBy = "api"

// idempotencyKey returns r's Idempotency-Key ("" none), or why it is
// refused.
func idempotencyKey(r *http.Request) (string, error) {
	k := r.Header.Get("Idempotency-Key")
	switch {
	case len(k) > MaxIdempotencyKey:
		return "", badRequest("Idempotency-Key: longer than %d bytes", MaxIdempotencyKey)
	case strings.IndexFunc(k, func(c rune) bool { return !unicode.IsPrint(c) || c == ' ' }) >= 0:
		return "", badRequest("Idempotency-Key: want printable characters and no spaces")
	}
	return k, nil
}

func (s *Server) agentStart(w http.ResponseWriter, r *http.Request) {
	if s.o.DynamicAgents == nil {
		s.unavailable(w, "starting agents")
		return
	}
	key, err := idempotencyKey(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	var req StartAgentRequest
	if !s.decode(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.Prompt) == "" {
		s.fail(w, badRequest("prompt: want the agent's task"))
		return
	}
	if req.ReportTo != "" {
		if _, _, err := runtime.ParseAddress(req.ReportTo); err != nil {
			s.fail(w, badRequest("report_to: %v", err))
			return
		}
	}
	inst, err := s.o.DynamicAgents.Start(r.Context(), agentsys.StartRequest{Template: r.PathValue("template"), Prompt: req.Prompt,
		Name: req.Name, Detached: true, Key: key, ReportTo: req.ReportTo, Budgets: req.Budgets})
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, StartAgentResponse{ID: inst.ID, Session: mainSession(inst.Agent), Turn: inst.Turn})
}

// mainSession is the address of an agent's main session.
func mainSession(agentID string) string { return agentID + "/main" }

func (s *Server) agentContact(w http.ResponseWriter, r *http.Request) {
	if s.o.DynamicAgents == nil {
		s.unavailable(w, "contacting agents")
		return
	}
	key, err := idempotencyKey(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	var req ContactRequest
	if !s.decode(w, r, &req) {
		return
	}
	for _, f := range [...]struct{ name, v string }{{"connector", req.Connector}, {"channel", req.Channel}, {"user", req.User}, {"text", req.Text}} {
		if strings.TrimSpace(f.v) == "" {
			s.fail(w, badRequest("%s: empty", f.name))
			return
		}
	}
	inst, rc, err := s.o.DynamicAgents.Contact(r.Context(), agentsys.Contact{Template: r.PathValue("template"), Connector: req.Connector,
		Channel: req.Channel, User: req.User, Text: req.Text, IdempotencyKey: key})
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, ContactResponse{ID: inst.ID, Receipt: rc})
}

func (s *Server) agentStop(w http.ResponseWriter, r *http.Request) {
	if s.o.DynamicAgents == nil {
		s.unavailable(w, "stopping agents")
		return
	}
	var req StopAgentRequest
	if r.ContentLength != 0 && !s.decode(w, r, &req) {
		return
	}
	stopped, err := s.o.DynamicAgents.Stop(r.Context(), r.PathValue("id"), req.Reason, stoppedBy)
	if err != nil {
		s.fail(w, err)
		return
	}
	if stopped == nil {
		stopped = []string{}
	}
	writeJSON(w, 200, StopAgentResponse{Stopped: stopped})
}
