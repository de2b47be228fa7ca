package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/tool"
)

// A message may name a context instance (LifecycleOptions.ContextRef,
// Daydreams' agent.send(context, args, input)): the turn prepares it at
// its start and again before each step, shows the model its instructions
// and renders (working.go), offers its actions besides the agent's own
// tools, and after the run calls its onRun hooks (a turn that ended well)
// or its onError hooks (one that failed) as lifecycle calls.

// ErrNoContexts is the error of a turn whose message names a context
// instance when agentd has no context types (Options.Contexts is nil).
var ErrNoContexts = errors.New("this agentd has no context types")

// prepareContext prepares the turn's context instance, if its message
// names one, and offers its actions. A view that comes back with an error
// is kept, so that its onError hooks run.
func (r *run) prepareContext(ctx context.Context) error {
	ref := r.lc.opts.ContextRef
	if ref == nil {
		return nil
	}
	if r.e.o.Contexts == nil {
		return fmt.Errorf("engine: context %q: %w", ref.Type, ErrNoContexts)
	}
	v, err := r.e.o.Contexts.Prepare(ctx, r.def, r.t.Session.Address(), ref)
	if v != nil {
		r.ctxView = v
		r.offerActions(v.Actions)
		if len(v.OnRun) > 0 {
			r.lc.after = true // the answer does not end the turn: the hooks come first
		}
	}
	if err != nil {
		return fmt.Errorf("engine: prepare context %q: %w", ref.Type, err)
	}
	r.ctxFresh = true
	return nil
}

// refreshContext prepares the context instance again before a step, but
// for the first: a tool of the step before may have changed its state.
func (r *run) refreshContext(ctx context.Context) error {
	if r.ctxFresh || r.lc.opts.ContextRef == nil {
		r.ctxFresh = false
		return nil
	}
	return r.prepareContext(ctx)
}

// offerActions offers the context's actions (tool names or globs) for the
// rest of the turn, as the policy's grants: the agent's deny and ask
// rules still apply. It runs between steps, when no tool runs.
func (r *run) offerActions(actions []string) {
	grant := append(r.def.Tools.Grant[:len(r.def.Tools.Grant):len(r.def.Tools.Grant)], actions...)
	r.policy.Grant = grant
	r.ctxActions = actions
	r.offered.mu.Lock()
	r.offered.ok = false // what is offered changed
	r.offered.mu.Unlock()
}

// inContext reports whether name is one of the context instance's actions,
// which the agent sees wherever the tool comes from.
func (r *run) inContext(name string) bool {
	for _, pat := range r.ctxActions {
		if ok, _ := path.Match(pat, name); ok {
			return true
		}
	}
	return false
}

// contextHooks runs the context instance's hooks for how the turn ended:
// onRun on a done end, onError on an error end. A hook that fails is
// logged and changes nothing; only a failure to write the log is
// returned.
func (r *run) contextHooks(ctx context.Context, end *event.TurnEndData) error {
	v := r.ctxView
	if v == nil {
		return nil
	}
	var calls []agent.BootstrapCall
	var phase string
	switch end.Status {
	case event.StatusDone:
		calls, phase = v.OnRun, event.PhaseContextRun
	case event.StatusError:
		calls, phase = v.OnError, event.PhaseContextError
	}
	if len(calls) == 0 {
		return nil
	}
	jobs := make([]job, len(calls))
	for i, c := range calls {
		name := c.Tool
		if len(calls) > 1 {
			name = fmt.Sprintf("%s#%d", c.Tool, i+1)
		}
		t, found := r.e.o.Tools.Get(c.Tool)
		rerunnable := !found || t.Spec().ReadOnly || t.Spec().Idempotent
		jobs[i] = job{name: name, rerunnable: rerunnable, run: func(ctx context.Context) event.LifecycleData {
			return r.contextHook(ctx, phase, name, c)
		}}
	}
	if _, err := r.runJobs(ctx, phase, jobs); err != nil && errors.Is(err, errStore) {
		return err
	}
	return nil
}

// contextHook makes one hook's call: the tool it names, under the agent's
// policy (a denied tool is not called; one that needs approval is
// skipped, as lifecycle phases do not wait for a person).
func (r *run) contextHook(ctx context.Context, phase, name string, c agent.BootstrapCall) event.LifecycleData {
	args := json.RawMessage("{}")
	if len(c.Args) > 0 {
		args, _ = json.Marshal(c.Args)
	}
	d := event.LifecycleData{Phase: phase, Tool: name, Args: args}
	t, found := r.e.o.Tools.Get(c.Tool)
	if !found {
		d.Output, d.IsError = fmt.Sprintf("unknown tool %q", c.Tool), true
		return d
	}
	spec := t.Spec()
	switch dec := r.policy.Decide(spec); dec.Verdict {
	case tool.Deny:
		d.Output, d.IsError = dec.Reason, true
		return d
	case tool.Ask:
		d.Output, d.IsError = dec.Reason+"; lifecycle phases do not wait for approval, so it was skipped (allow it by name to run it)", true
		return d
	}
	call := r.call(fmt.Sprintf("%d.%s.%s", r.t.ID, phase, name), c.Tool, args)
	if spec.Server != "" {
		call.Approval = r.approver()
	}
	out := r.e.o.Tools.Run(ctx, call, &tool.RunOptions{Timeout: r.def.Tools.Timeout.D(), MaxOutputBytes: r.def.Tools.MaxOutputBytes})
	d.Output, d.IsError, d.DurationMS = out.Result.Output, out.Result.IsError, ms(out.Duration)
	return d
}
