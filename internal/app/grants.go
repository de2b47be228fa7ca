package app

import (
	"context"
	"errors"
	"time"

	"agentd/internal/store"
)

// Grants' lifetime: "allow for this session" lasts as long as the
// conversation it was given in, so a session's grants end when it is
// reset or closed; every grant of an agent ends when the agent is removed
// (its file or row deleted), so an agent made later under the same id
// starts with none. Grants are deleted after the reset, close or removal
// is durable: a crash between the two leaves the grants, which the next
// reset, close or removal (or, for an agent removed while agentd was
// stopped, the next start) deletes.

// grantsWait bounds the deletion of the grants a session or an agent
// held: the session's next input waits for it.
const grantsWait = 10 * time.Second

// endGrants deletes agent's grants for session ("" every grant of the
// agent, "always" ones too). A failure is logged: the grant stays until
// a person revokes it.
func (a *App) endGrants(agent, session string) {
	ctx, cancel := context.WithTimeout(context.Background(), grantsWait)
	defer cancel()
	gs, err := a.Store.Grants(ctx, agent)
	for _, g := range gs {
		if g.Agent != agent || session != "" && g.Session != session {
			continue
		}
		if derr := a.Store.DeleteGrant(ctx, g.ID); derr != nil && !errors.Is(derr, store.ErrNotFound) {
			err = errors.Join(err, derr)
		}
	}
	if err != nil {
		a.Logger.Warn("end grants", "agent", agent, "session", session, "err", err)
	}
}

// agentChanged ends what agent id held when it is gone: its grants. An
// agent whose file does not load (it keeps its grants for when the file
// is fixed) or whose row is disabled (until it is enabled) is not gone.
func (a *App) agentChanged(ctx context.Context, id string) {
	if a.Store == nil {
		return
	}
	if _, ok := a.Agents.Get(id); ok || a.Agents.FileError(id) != nil || a.Agents.HasFile(id) {
		return
	}
	if e, err := a.Store.Extension(ctx, "agent", id); err == nil && !e.Enabled {
		return
	}
	a.endGrants(id, "")
}

// sweepGrants deletes, at start, the grants of agents no longer defined
// (removed while agentd was stopped). A store other nodes share is left
// alone: their agents are not all defined here.
func (a *App) sweepGrants(ctx context.Context) {
	if a.storeKind == StorePostgres {
		return
	}
	gs, err := a.Store.Grants(ctx, "")
	if err != nil {
		a.Logger.Warn("read the grants", "err", err)
		return
	}
	seen := map[string]bool{}
	for _, g := range gs {
		if !seen[g.Agent] {
			seen[g.Agent] = true
			a.agentChanged(ctx, g.Agent)
		}
	}
}
