package gateway

// The pairing routes: the codes strangers were given to talk to a
// connector's agent, and a person's decision on one. Deciding lets
// someone new reach an agent (and spend its budget): admin.

import (
	"errors"
	"net/http"
	"time"

	"agentd/internal/store"
)

// PairingInfo is a pairing as the API shows it.
type PairingInfo struct {
	Connector string    `json:"connector"`
	UserID    string    `json:"user_id"` // the platform's user id
	Name      string    `json:"name,omitempty"`
	Code      string    `json:"code"`  // XXXXXXXX; shown XXXX-XXXX
	State     string    `json:"state"` // pending, approved, denied, expired
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	DecidedAt time.Time `json:"decided_at,omitzero"`
	DecidedBy string    `json:"decided_by,omitempty"`
}

// PairingList answers GET /v1/pairings.
type PairingList struct {
	Pairings []PairingInfo `json:"pairings"`
}

func pairingInfo(p store.Pairing) PairingInfo {
	return PairingInfo{Connector: p.Connector, UserID: p.UserID, Name: p.Name, Code: p.Code, State: p.State,
		CreatedAt: p.CreatedAt, ExpiresAt: p.ExpiresAt, DecidedAt: p.DecidedAt, DecidedBy: p.DecidedBy}
}

// pairingList lists the pending pairings (all=1: every state), of one
// connector or all.
func (s *Server) pairingList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	all, err := boolParam(q, "all")
	if err != nil {
		s.fail(w, err)
		return
	}
	out := PairingList{Pairings: []PairingInfo{}}
	if s.o.Pairings == nil {
		writeJSON(w, http.StatusOK, out)
		return
	}
	state := store.PairPending
	if all {
		state = ""
	}
	list, err := s.o.Pairings.ListPairings(r.Context(), q.Get("connector"), state)
	if err != nil {
		s.fail(w, err)
		return
	}
	for _, p := range list {
		out.Pairings = append(out.Pairings, pairingInfo(p))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) pairingApprove(w http.ResponseWriter, r *http.Request) { s.pairingDecide(w, r, true) }
func (s *Server) pairingDeny(w http.ResponseWriter, r *http.Request)    { s.pairingDecide(w, r, false) }

func (s *Server) pairingDecide(w http.ResponseWriter, r *http.Request, approve bool) {
	if s.o.Pairings == nil {
		s.unavailable(w, "pairing")
		return
	}
	code := r.PathValue("code")
	p, err := s.o.Pairings.DecidePairing(r.Context(), code, approve, who(r).By)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			err = notFound("no pending pairing code %.20q (codes expire after an hour: agentd pairing list shows the pending ones)", code)
		}
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, pairingInfo(p))
}

// pairingRevoke removes a user's pairing: they pair again to talk.
func (s *Server) pairingRevoke(w http.ResponseWriter, r *http.Request) {
	if s.o.Pairings == nil {
		s.unavailable(w, "pairing")
		return
	}
	conn, user := r.PathValue("connector"), r.PathValue("user")
	if err := s.o.Pairings.RevokePairing(r.Context(), conn, user); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			err = notFound("connector %s has no pairing of user %s", conn, user)
		}
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"revoked": true})
}
