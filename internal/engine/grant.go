package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"agentd/internal/event"
	"agentd/internal/permit"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// Grants keeps the standing permissions people gave ("allow for this
// session", "always allow this exact call"): store.GrantStore as the
// engine uses it.
type Grants interface {
	PutGrant(ctx context.Context, g *store.Grant) error
	Grants(ctx context.Context, agent string) ([]store.Grant, error)
}

// errPreviewTimeout is the cause a preview is cut off with.
var errPreviewTimeout = errors.New("timed out")

// preview asks t what call c will do, for the approval card, within the
// agent's tool timeout. A tool that cannot say gives no card. An error is
// the call's result: nobody is asked about a call that cannot run.
func (r *run) preview(ctx context.Context, t tool.Tool, c *pendingCall) (json.RawMessage, error) {
	p, ok := t.(tool.Previewer)
	if !ok {
		return nil, nil
	}
	timeout := r.def.Tools.Timeout.D()
	if timeout <= 0 {
		timeout = tool.DefaultTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errPreviewTimeout)
	defer cancel()
	card, err := p.Preview(ctx, r.call(fmt.Sprintf("%d.%s", r.t.ID, c.ID), c.Name, c.Args))
	if err == nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Name, err)
	}
	return json.Marshal(card)
}

// cardExact is the Exact of a recorded card; "" without one.
func cardExact(card json.RawMessage) string {
	var c struct {
		Exact string `json:"exact"`
	}
	if len(card) > 0 {
		_ = json.Unmarshal(card, &c)
	}
	return c.Exact
}

// grantFor returns the first grant that allows a call of tool whose card
// says exact in this turn's session, or nil.
func (r *run) grantFor(ctx context.Context, tool, exact string) (*store.Grant, error) {
	if r.e.o.Grants == nil {
		return nil, nil
	}
	gs, err := r.e.o.Grants.Grants(ctx, r.def.ID)
	if err != nil {
		return nil, err
	}
	for i := range gs {
		if gs[i].Matches(r.def.ID, r.t.Session.Address(), tool, exact) {
			return &gs[i], nil
		}
	}
	return nil, nil
}

// keepGrant records the grant a person's answer with a scope makes, before
// the call runs; it returns the scope kept and the grant's id. "always"
// without an exact call to remember (the card has no Exact) is taken as
// this call only; so is a grant that cannot be stored (the log says so).
func (r *run) keepGrant(ctx context.Context, req *event.ApprovalRequestData, d *permit.Decision) (scope, id string) {
	g := store.Grant{ID: newApprovalID(), Agent: r.def.ID, Tool: req.Tool, Approval: req.ID, By: d.By,
		CreatedAt: time.Now().UTC()}
	switch {
	case !d.Granted || d.Expired || r.e.o.Grants == nil:
		return "", ""
	case d.Scope == permit.ScopeSession:
		g.Session = r.t.Session.Address()
	case d.Scope == permit.ScopeAlways && cardExact(req.Card) != "":
		g.Exact = cardExact(req.Card)
	default:
		return "", ""
	}
	if err := r.e.o.Grants.PutGrant(ctx, &g); err != nil {
		r.e.o.Logger.Error("keep grant", "agent", r.def.ID, "tool", req.Tool, "scope", d.Scope, "err", err)
		return "", ""
	}
	return d.Scope, g.ID
}

// inert reports whether a call the policy asks about only by the tool's
// own marking changes nothing, so it runs without asking (process poll).
func inert(t tool.Tool, d tool.Decision, args json.RawMessage) bool {
	in, ok := t.(tool.Inert)
	return ok && d.Default && in.Inert(args)
}
