package store

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
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

// MaxGrantExact bounds a grant's Exact (a command line, a URL).
const MaxGrantExact = 64 << 10

// CheckGrant reports what is wrong with a grant to store: ID, Agent and
// Tool must hold something; every field must be valid UTF-8, the short
// ones at most MaxExtensionKey bytes (a session address twice that) and
// without NUL; Exact at most MaxGrantExact bytes (it may hold NUL: an
// exec card's separates the command from its directory with one).
func CheckGrant(g *Grant) error {
	for _, f := range []struct {
		what, s  string
		required bool
		max      int
	}{{"id", g.ID, true, MaxExtensionKey}, {"agent", g.Agent, true, MaxExtensionKey}, {"tool", g.Tool, true, MaxExtensionKey},
		{"session", g.Session, false, 2*MaxExtensionKey + 1}, {"approval", g.Approval, false, MaxExtensionKey},
		{"by", g.By, false, MaxExtensionKey}} {
		switch {
		case f.required && f.s == "":
			return fmt.Errorf("grant %s is empty", f.what)
		case len(f.s) > f.max || !utf8.ValidString(f.s) || strings.ContainsRune(f.s, 0):
			return fmt.Errorf("grant %s %q: longer than %d bytes, not UTF-8 or holding NUL", f.what, f.s, f.max)
		}
	}
	if len(g.Exact) > MaxGrantExact || !utf8.ValidString(g.Exact) {
		return fmt.Errorf("grant exact: longer than %d bytes or not UTF-8", MaxGrantExact)
	}
	return nil
}
