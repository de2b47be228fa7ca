package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"agentd/internal/event"
	"agentd/internal/tool"
)

// In the XML protocol an action starts as soon as its element closes,
// while the model still writes, when that is safe: the tool is read-only
// or idempotent (running it again after a crash is harmless, so it need
// not wait for its durable tool_call) and the policy allows it without
// asking. runTools adopts the result, by the call's index in the step;
// every other call waits for the step's commit, as in the native
// protocol.

// earlyCall is a call started while the model streamed.
type earlyCall struct {
	name string
	args json.RawMessage
	done chan struct{} // closed when res and ok are set
	res  event.ToolResultData
	ok   bool // runOne's ok: false when the turn was cancelled
}

// earlyStarts are the calls of one attempt at a step started early, by
// their index among the step's calls. Its goroutines end when their
// calls do; stop cancels them and waits.
type earlyStarts struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	calls  map[int]*earlyCall
}

// startsEarly reports whether a call of name may start before its
// tool_call is durable and before the step's other calls are known.
func (r *run) startsEarly(name string) bool {
	t, ok := r.e.o.Tools.Get(name)
	if !ok {
		return false
	}
	spec := t.Spec()
	return (spec.ReadOnly || spec.Idempotent) && r.sees(&spec) && (spec.Kind == "" || spec.Kind == tool.KindModel) &&
		r.policy.Decide(spec).Verdict == tool.Allow
}

// newEarlyStarts returns the early starts of an attempt at step; their
// calls run under ctx, the turn's, not the attempt's.
func (r *run) newEarlyStarts(ctx context.Context, step int) (*earlyStarts, func(i int, name string, args json.RawMessage)) {
	ctx, cancel := context.WithCancel(ctx)
	es := &earlyStarts{cancel: cancel, calls: map[int]*earlyCall{}}
	start := func(i int, name string, args json.RawMessage) {
		if i >= MaxCallsPerStep || !r.startsEarly(name) || mayRefer(args) {
			return // a call that may refer to others waits for them in runTools
		}
		ec := &earlyCall{name: name, args: args, done: make(chan struct{})}
		es.calls[i] = ec
		c := pendingCall{ToolCallData: event.ToolCallData{ID: fmt.Sprintf("call_%d_%d_%d", r.t.ID, step, i), Name: name, Args: args, Step: step}, index: i}
		es.wg.Go(func() {
			defer close(ec.done)
			ec.res, ec.ok = r.runOne(ctx, newStepRefs(r, []pendingCall{c}), 0)
		})
	}
	return es, start
}

// adopt returns the result of call i of the step if it started early as
// c: it waits for it to finish.
func (es *earlyStarts) adopt(i int, c *pendingCall) (event.ToolResultData, bool, bool) {
	if es == nil {
		return event.ToolResultData{}, false, false
	}
	ec := es.calls[i]
	if ec == nil || ec.name != c.Name || !bytes.Equal(ec.args, c.Args) {
		return event.ToolResultData{}, false, false
	}
	<-ec.done
	ec.res.ID = c.ID
	return ec.res, ec.ok, true
}

// stop cancels the calls still running and waits for them.
func (es *earlyStarts) stop() {
	if es == nil {
		return
	}
	es.cancel()
	es.wg.Wait()
}
