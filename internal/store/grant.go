package store

import (
	"context"
	"time"
)

// Grant is a person's standing permission for calls that would otherwise
// wait for approval: "allow for this session" (Session set, Exact "") or
// "always allow this exact call" (Session "", Exact the card's Exact).
// A call matches when Agent and Tool are equal, Session is "" or the
// call's session, and Exact is "" or equals the call's card's Exact.
// Revoking a grant deletes its row.
type Grant struct {
	ID        string
	Agent     string
	Session   string // a session address; "" every session of the agent
	Tool      string
	Exact     string // the card's Exact; "" any call of the tool
	Approval  string // the approval whose answer made it
	By        string // who answered
	CreatedAt time.Time
}

// Matches reports whether g allows a call of tool in session whose card's
// Exact is exact.
func (g *Grant) Matches(agent, session, tool, exact string) bool {
	return g.Agent == agent && g.Tool == tool && (g.Session == "" || g.Session == session) &&
		(g.Exact == "" || g.Exact == exact)
}

// GrantStore keeps grants.
type GrantStore interface {
	// PutGrant records g (its ID unique); it is durable when PutGrant
	// returns.
	PutGrant(ctx context.Context, g *Grant) error
	// Grants lists an agent's grants ("" every agent's), oldest first.
	Grants(ctx context.Context, agent string) ([]Grant, error)
	// DeleteGrant revokes the grant id; ErrNotFound when there is none.
	DeleteGrant(ctx context.Context, id string) error
}
