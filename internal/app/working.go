package app

import (
	"context"
	"encoding/json"

	"agentd/internal/event"
)

// workingMemory is the store's history side as the history tools and the
// API use it: the working_memory events the store logs when working memory
// changes are published on the bus once durable, as the runtime publishes
// what it commits, so that the event stream and long polls show them live.
// With turns set (the API's, whose writes come outside turns), a write is
// made under the session's lease, which the node takes for it if it does
// not run the session's turns; a turn's tools write under the turn's
// (their ctx carries its epoch).
type workingMemory struct {
	Store
	bus   *event.Bus
	turns outsideTurns
}

// outsideTurns runs a write of a session's log outside its turns under
// the session's lease: the runtime.
type outsideTurns interface {
	OutsideTurn(ctx context.Context, session int64, write func(ctx context.Context) error) error
}

func (w workingMemory) SetWorking(ctx context.Context, session int64, key string, value json.RawMessage) (event.Event, error) {
	return w.published(w.fenced(ctx, session, func(ctx context.Context) (event.Event, error) {
		return w.Store.SetWorking(ctx, session, key, value)
	}))
}

func (w workingMemory) DeleteWorking(ctx context.Context, session int64, key string) (event.Event, error) {
	return w.published(w.fenced(ctx, session, func(ctx context.Context) (event.Event, error) {
		return w.Store.DeleteWorking(ctx, session, key)
	}))
}

// fenced runs write under the session's lease if w has turns.
func (w workingMemory) fenced(ctx context.Context, session int64, write func(ctx context.Context) (event.Event, error)) (ev event.Event, err error) {
	if w.turns == nil {
		return write(ctx)
	}
	err = w.turns.OutsideTurn(ctx, session, func(ctx context.Context) error {
		ev, err = write(ctx)
		return err
	})
	return ev, err
}

func (w workingMemory) published(ev event.Event, err error) (event.Event, error) {
	if err == nil {
		w.bus.Publish(ev)
	}
	return ev, err
}
