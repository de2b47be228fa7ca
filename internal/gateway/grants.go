package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"agentd/internal/permit"
	"agentd/internal/store"
)

// Grants keeps the standing permissions people gave with their answers to
// approvals (store.GrantStore as the API uses it).
type Grants interface {
	Grants(ctx context.Context, agent string) ([]store.Grant, error)
	DeleteGrant(ctx context.Context, id string) error
}

// GrantInfo is a grant as the API shows it: the tool it allows, in one
// session or every session of the agent, for any call or one exact call.
type GrantInfo struct {
	ID        string    `json:"id"`
	Agent     string    `json:"agent"`
	Session   string    `json:"session,omitempty"`
	Tool      string    `json:"tool"`
	Exact     string    `json:"exact,omitempty"`
	Approval  string    `json:"approval,omitempty"`
	By        string    `json:"by,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

func (s *Server) grants(w http.ResponseWriter, r *http.Request) {
	out := []GrantInfo{}
	if s.o.Grants != nil {
		gs, err := s.o.Grants.Grants(r.Context(), r.URL.Query().Get("agent"))
		if err != nil {
			s.fail(w, err)
			return
		}
		for _, g := range gs {
			out = append(out, GrantInfo(g))
		}
	}
	writeJSON(w, 200, out)
}

func (s *Server) grantRevoke(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if s.o.Grants == nil {
		s.fail(w, notFound("grant %s", id))
		return
	}
	if err := s.o.Grants.DeleteGrant(r.Context(), id); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, map[string]bool{"revoked": true})
}

// checkScope refuses a scope an answer cannot have: an unknown one, one
// on a denial, and "always" for a call whose card has no exact call to
// remember (a change to files).
func (s *Server) checkScope(id string, grant bool, scope string) error {
	switch scope {
	case "":
		return nil
	case permit.ScopeSession, permit.ScopeAlways:
	default:
		return badRequest("scope %q: want session or always", scope)
	}
	if !grant {
		return badRequest("scope is for letting calls run, not for a denial")
	}
	if scope != permit.ScopeAlways {
		return nil
	}
	for _, req := range s.o.Permits.List() {
		if req.ID != id {
			continue
		}
		var card struct {
			Exact string `json:"exact"`
		}
		if len(req.Card) > 0 {
			_ = json.Unmarshal(req.Card, &card)
		}
		if card.Exact == "" {
			return badRequest("the call to %s offers no \"always\": there is no exact call to remember; allow it once or for the session", req.Tool)
		}
		return nil
	}
	return notFound("approval %s", id)
}
