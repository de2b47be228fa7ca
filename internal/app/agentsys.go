package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"agentd/internal/agent"
	"agentd/internal/agentsys"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/job"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// agentSystem builds the agent system (dynamic agents: their life cycle,
// reports, guards, ledger) over the store and the runtime, and hooks it
// into the registry (an instance id resolves to its derived definition).
// The runtime's options, built before it, reach it through runtimeHooks.
// A store without instances (AgentStore) has no agent system.
func (a *App) agentSystem() {
	st, ok := a.Store.(agentsys.Store)
	if !ok {
		a.degrade("agents", "the store keeps no dynamic agents")
		return
	}
	a.AgentSys = agentsys.New(st, a.Runtime, &agentsys.Options{
		Config:   a.Config.Agents,
		Agents:   a.Agents,
		Recorder: agentEvents{a.Store, a.Bus},
		Tags:     a.Commands,
		Jobs:     jobAgents{a.Jobs},
		Logger:   a.Logger,
		Shared:   a.storeKind == StorePostgres,
		Lead:     a.Store,
	})
	a.Agents.SetInstances(a.AgentSys.Definition)
	a.Agents.SetTaken(func(ctx context.Context, name string) (bool, error) {
		_, err := a.AgentSys.InstanceByAgent(ctx, name)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	})
}

// agentTools registers the agent tools (start_background_agent, …), off
// unless an agent's policy allows them by name.
func (a *App) agentTools() error {
	a.Agents.SetTools(a.Tools.Specs) // an agent row an agent writes is held to its writer on each
	if a.AgentSys == nil {
		return nil
	}
	perm := agentsys.NewPermanents(a.AgentSys, a.Ext, a.Agents, a.Tools, &agentsys.PermanentOptions{Log: a.Runtime})
	for _, t := range agentsys.Tools(a.AgentSys, &agentsys.ToolOptions{Permanents: perm}) {
		if err := a.Tools.Register(t); err != nil {
			return fmt.Errorf("app: register tool: %w", err)
		}
	}
	return nil
}

// runtimeHooks sets the runtime's options that reach the agent system,
// which is made after the runtime: every turn's end, and every turn's
// spending account. Both are asked only once turns run (after Start), when
// the agent system exists.
func (a *App) runtimeHooks(ro *runtime.Options) {
	ro.Ended = func(s store.Session, it store.InboxItem, end event.TurnEndData) {
		if a.AgentSys != nil {
			a.AgentSys.Ended(s, it, end)
		}
		if a.Connectors != nil {
			a.Connectors.Ended(s, it, end)
		}
		a.identityEnded(s, it)
	}
	ro.Accounts = ledgerOf{a}
	ro.Cleared = a.sessionCleared
}

// startAgents closes what a crash left open, then runs the supervisor
// until Close (after the runtime has started, before the API serves). On
// a store other nodes share, the node that leads "agents" recovers, in
// its supervisor's first sweep.
func (a *App) startAgents(ctx, wctx context.Context) {
	if a.AgentSys == nil {
		return
	}
	if a.storeKind != StorePostgres {
		if err := a.AgentSys.Recover(ctx); err != nil {
			a.Logger.Warn("recover dynamic agents", "err", err)
		}
	}
	a.wg.Go(func() {
		if err := a.AgentSys.Run(wctx); err != nil && wctx.Err() == nil {
			a.Logger.Error("agent supervisor stopped", "err", err)
		}
	})
}

// ledgerOf is the agent system's ledger, or no account without it.
type ledgerOf struct{ a *App }

func (l ledgerOf) For(ctx context.Context, sess store.Session, turn int64, def *agent.Definition, b agent.Budgets) (engine.Account, string, error) {
	if l.a.AgentSys == nil {
		return nil, "", nil
	}
	return l.a.AgentSys.Ledger().For(ctx, sess, turn, def, b)
}

// agentEvents logs an agent event (a guard's refusal) in a session whose
// turn is running, as the turn's tools write working memory: committed
// under the turn's epoch, which the tool's ctx carries, then published.
type agentEvents struct {
	st  Store
	bus *event.Bus
}

func (r agentEvents) RecordAgent(ctx context.Context, session string, turn int64, d event.AgentData) error {
	agentID, key, _ := strings.Cut(session, "/")
	sess, err := r.st.SessionByAddress(ctx, agentID, key)
	if err != nil {
		return fmt.Errorf("agent event in %s: %w", session, err)
	}
	b := &store.Batch{Session: sess.ID, Events: []event.Event{event.New(sess.ID, turn, event.Agent, d)}, Epoch: store.EpochFrom(ctx, sess.ID)}
	if err := r.st.Commit(ctx, b); err != nil {
		return fmt.Errorf("agent event in %s: %w", session, err)
	}
	r.bus.Publish(b.Events...)
	return nil
}

// jobAgents names the agent each job runs on.
type jobAgents struct{ r *job.Runner }

func (j jobAgents) JobAgents() map[string]string {
	out := map[string]string{}
	if j.r == nil {
		return out
	}
	for name, spec := range j.r.Jobs() {
		out[name] = spec.Agent
	}
	return out
}
