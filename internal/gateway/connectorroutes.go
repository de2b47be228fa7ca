package gateway

// The chat connectors' routes: their states, one connector's undelivered
// replies, a person's retry or dismissal of one, and a platform's webhook.
// Without Options.Connectors the list is empty and a connector is not
// found: agentd simply has none.

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"agentd/internal/store"
)

// ConnectorOutbox is the optional ability of Connectors to list outbox
// rows (store.ConnectorStore's): GET /v1/connectors/{name} shows the
// failed replies no person has seen yet, with the ids retry takes.
type ConnectorOutbox interface {
	Outbox(ctx context.Context, f store.OutboxFilter) ([]store.OutboxItem, error)
}

// ConnectorList answers GET /v1/connectors.
type ConnectorList struct {
	Connectors []ConnectorState `json:"connectors"`
}

// ConnectorDetail answers GET /v1/connectors/{name}: the connector's
// state and the replies it finally failed to deliver that no person has
// retried or dismissed yet (newest first, at most MaxUndeliveredShown).
type ConnectorDetail struct {
	ConnectorState
	Undelivered []OutboxInfo `json:"undelivered"`
}

// MaxUndeliveredShown bounds ConnectorDetail.Undelivered.
const MaxUndeliveredShown = 50

// OutboxInfo is one reply (or notice) of a connector's outbox as the API
// shows it; its text is in the session's log (turn_end), not here.
type OutboxInfo struct {
	ID         int64     `json:"id"`
	Connector  string    `json:"connector"`
	Chat       string    `json:"chat"`
	SessionID  int64     `json:"session_id"`
	Turn       int64     `json:"turn"`
	Kind       string    `json:"kind"`  // reply or notice
	State      string    `json:"state"` // streaming, pending, sending, sent, failed, skipped
	Parts      int       `json:"parts"`
	MessageIDs []string  `json:"message_ids,omitempty"`
	Tries      int       `json:"tries"`
	NextAt     time.Time `json:"next_at,omitzero"`
	Error      string    `json:"error,omitempty"` // redacted
	InDoubt    bool      `json:"in_doubt,omitempty"`
	Acked      bool      `json:"acked,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	SentAt     time.Time `json:"sent_at,omitzero"`
}

func outboxInfo(it store.OutboxItem) OutboxInfo {
	return OutboxInfo{ID: it.ID, Connector: it.Connector, Chat: it.Chat, SessionID: it.SessionID, Turn: it.Turn, Kind: it.Kind,
		State: it.State, Parts: it.Parts, MessageIDs: it.MessageIDs, Tries: it.Tries, NextAt: it.NextAt, Error: it.Error,
		InDoubt: it.InDoubt, Acked: it.Acked, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt, SentAt: it.SentAt}
}

func (s *Server) connectorList(w http.ResponseWriter, r *http.Request) {
	out := ConnectorList{Connectors: []ConnectorState{}}
	if s.o.Connectors != nil {
		out.Connectors = append(out.Connectors, s.o.Connectors.List(r.Context())...)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) connectorGet(w http.ResponseWriter, r *http.Request) {
	st, ok := s.connector(w, r)
	if !ok {
		return
	}
	out := ConnectorDetail{ConnectorState: st, Undelivered: []OutboxInfo{}}
	if ob, ok := s.o.Connectors.(ConnectorOutbox); ok {
		items, err := ob.Outbox(r.Context(), store.OutboxFilter{Connector: st.Name, State: store.OutFailed, Limit: MaxUndeliveredShown})
		if err != nil {
			s.fail(w, err)
			return
		}
		for _, it := range items {
			if !it.Acked {
				out.Undelivered = append(out.Undelivered, outboxInfo(it))
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// connector returns the connector the path names, or answers 404.
func (s *Server) connector(w http.ResponseWriter, r *http.Request) (ConnectorState, bool) {
	name := r.PathValue("name")
	if s.o.Connectors != nil {
		if st, ok := s.o.Connectors.Get(r.Context(), name); ok {
			return st, true
		}
	}
	s.fail(w, notFound("no connector %s", name))
	return ConnectorState{}, false
}

// outboxRetry and outboxDismiss are a person's decision on a reply that
// failed: deliver it again (from its first undelivered part), or leave it
// undelivered and stop showing it. Either writes a delivery event.
func (s *Server) outboxRetry(w http.ResponseWriter, r *http.Request)   { s.outboxDecide(w, r, false) }
func (s *Server) outboxDismiss(w http.ResponseWriter, r *http.Request) { s.outboxDecide(w, r, true) }

func (s *Server) outboxDecide(w http.ResponseWriter, r *http.Request, dismiss bool) {
	d, ok := s.o.Connectors.(OutboxDecider)
	if !ok {
		s.unavailable(w, "retrying a connector's delivery")
		return
	}
	name, idText := r.PathValue("name"), r.PathValue("id")
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id <= 0 {
		s.fail(w, badRequest("outbox id: want a positive integer, got %.40q", idText))
		return
	}
	it, err := d.Retry(r.Context(), name, id, dismiss)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			err = notFound("connector %s has no failed delivery %d", name, id)
		}
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, outboxInfo(it))
}

// connectorWebhook hands a platform's request to the connector receiving
// over HTTP under that name, which verifies it (its secret header or
// signature) before anything else. Unknown names are answered as a
// refused request is, and every refusal is logged and limited per client
// network as a job webhook's is.
func (s *Server) connectorWebhook(w http.ResponseWriter, r *http.Request) {
	name, ip := r.PathValue("name"), clientKey(r.RemoteAddr)
	if retry, allowed := s.hookLimit.allow(ip, time.Now()); !allowed {
		s.log.Warn("connector webhook refused", "connector", name, "client", ip, "reason", "too many failed attempts")
		SetRetryAfter(w.Header(), retry)
		s.fail(w, say(errRateLimited, "too many failed attempts; try again later"))
		return
	}
	var h http.Handler
	if s.o.Connectors != nil {
		h, _ = s.o.Connectors.Webhook(name)
	}
	if h == nil {
		s.log.Warn("connector webhook refused", "connector", name, "client", ip, "reason", "no connector of that name receives over HTTP")
		s.hookLimit.fail(ip, time.Now())
		s.fail(w, notFound("no webhook here"))
		return
	}
	rec := &webhookStatus{ResponseWriter: w}
	h.ServeHTTP(rec, r)
	if rec.status == http.StatusUnauthorized || rec.status == http.StatusForbidden || rec.status == http.StatusRequestEntityTooLarge {
		s.log.Warn("connector webhook refused", "connector", name, "client", ip, "status", rec.status)
		s.hookLimit.fail(ip, time.Now())
	}
}

// webhookStatus remembers the status a connector's webhook answered.
type webhookStatus struct {
	http.ResponseWriter
	status int
}

func (ws *webhookStatus) WriteHeader(c int) {
	if ws.status == 0 {
		ws.status = c
	}
	ws.ResponseWriter.WriteHeader(c)
}

func (ws *webhookStatus) Write(b []byte) (int, error) {
	if ws.status == 0 {
		ws.status = http.StatusOK
	}
	return ws.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (ws *webhookStatus) Unwrap() http.ResponseWriter { return ws.ResponseWriter }
