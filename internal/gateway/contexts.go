package gateway

import (
	"encoding/json"
	"net/http"

	"agentd/internal/contexts"
	"agentd/internal/engine"
	"agentd/internal/runtime"
)

// Contexts are the active context types (package contexts): a send to
// one resolves its args to the instance's session.
type Contexts interface {
	Resolve(typ string, args json.RawMessage) (*contexts.Instance, error)
	List() []contexts.Summary
}

// ContextSendRequest is the body of POST /v1/contexts/{type}/send, the
// seed's agent.send(context, args, input).
type ContextSendRequest struct {
	// Args name the instance; they must match the type's args schema.
	Args json.RawMessage `json:"args,omitempty"`
	// Input is the message: a string, or {"type": "text", "data": "…"}.
	Input          json.RawMessage `json:"input"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
}

// text returns the input's text.
func (req *ContextSendRequest) text() (string, error) {
	var s string
	if json.Unmarshal(req.Input, &s) == nil {
		return s, nil
	}
	var in struct {
		Type string `json:"type"`
		Data string `json:"data"`
	}
	if json.Unmarshal(req.Input, &in) != nil || in.Type != "text" {
		return "", badRequest(`input: want a string or {"type": "text", "data": "…"}`)
	}
	return in.Data, nil
}

// ContextList is the body of GET /v1/contexts.
type ContextList struct {
	Contexts []contexts.Summary `json:"contexts"`
}

func (s *Server) contextList(w http.ResponseWriter, r *http.Request) {
	out := ContextList{Contexts: []contexts.Summary{}}
	if s.o.Contexts != nil {
		out.Contexts = s.o.Contexts.List()
	}
	writeJSON(w, 200, out)
}

// contextSend sends a message to a context instance: the message goes to
// the instance's session with the instance in its lifecycle options
// (and the type's budget), and is answered as a message to a session is
// (?stream, ?wait); the receipt names the session.
func (s *Server) contextSend(w http.ResponseWriter, r *http.Request) {
	var req ContextSendRequest
	if !s.decode(w, r, &req) {
		return
	}
	if s.o.Contexts == nil {
		s.fail(w, notFound("no context type %q", r.PathValue("type")))
		return
	}
	text, err := req.text()
	if err != nil {
		s.fail(w, err)
		return
	}
	in, err := s.o.Contexts.Resolve(r.PathValue("type"), req.Args)
	if err != nil {
		s.fail(w, err)
		return
	}
	opts, err := json.Marshal(engine.LifecycleOptions{ContextRef: in.Ref(), Budgets: in.Budgets})
	if err != nil {
		s.fail(w, err)
		return
	}
	s.deliver(w, r, runtime.Input{Session: in.Session, Text: text, Source: "api", IdempotencyKey: req.IdempotencyKey, Options: opts})
}
