package app

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"agentd/internal/agent"
	"agentd/internal/store"
)

// saveAgent records an agent's definition in the store.
func (a *App) saveAgent(ctx context.Context, d *agent.Definition) error {
	rec, err := agentRecord(d)
	if err != nil {
		return err
	}
	return a.Store.SaveAgent(ctx, rec)
}

// agentRecord is the store's record of d.
func agentRecord(d *agent.Definition) (store.AgentRecord, error) {
	def, err := json.Marshal(d)
	if err != nil {
		return store.AgentRecord{}, err
	}
	return store.AgentRecord{ID: d.ID, Name: d.Name, Type: d.Type, Definition: def, UpdatedAt: time.Now().UTC()}, nil
}

// recordAgents brings the store's record of the agents up to date at
// start, writing only the agents that changed: a start with nothing new
// writes nothing (so agentd starts on a full disk). The record is for
// reading only, so a failure to write it is logged, not fatal; it is
// written again when the agent's file changes.
func (a *App) recordAgents(ctx context.Context) {
	stored := map[string]store.AgentRecord{}
	recs, err := a.Store.Agents(ctx)
	if err != nil {
		a.Logger.Warn("read the recorded agents", "err", err)
	}
	for _, r := range recs {
		stored[r.ID] = r
	}
	for _, d := range a.Agents.List() {
		rec, err := agentRecord(d)
		if err == nil {
			if old, ok := stored[d.ID]; ok && old.Name == rec.Name && old.Type == rec.Type && bytes.Equal(old.Definition, rec.Definition) {
				continue
			}
			err = a.Store.SaveAgent(ctx, rec)
		}
		if err != nil {
			a.Logger.Warn("record agent", "agent", d.ID, "err", err)
		}
	}
}

// addressable are the agents a chat line may address (@id, #tag): the
// registry's, and those whose row is disabled, so that "@id" names a
// disabled agent too and the runtime refuses it as it does a direct post
// (rather than the line going, as prose, to the caller's agent).
type addressable struct {
	*agent.Registry
	rows interface {
		Extension(ctx context.Context, typ, name string) (store.Extension, error)
	}
}

// Disabled reports whether agent id's row is disabled.
func (x addressable) Disabled(ctx context.Context, id string) bool {
	e, err := x.rows.Extension(ctx, "agent", id)
	return err == nil && !e.Enabled
}
