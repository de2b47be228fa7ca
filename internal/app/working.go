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
type workingMemory struct {
	Store
	bus *event.Bus
}

func (w workingMemory) SetWorking(ctx context.Context, session int64, key string, value json.RawMessage) (event.Event, error) {
	return w.published(w.Store.SetWorking(ctx, session, key, value))
}

func (w workingMemory) DeleteWorking(ctx context.Context, session int64, key string) (event.Event, error) {
	return w.published(w.Store.DeleteWorking(ctx, session, key))
}

func (w workingMemory) published(ev event.Event, err error) (event.Event, error) {
	if err == nil {
		w.bus.Publish(ev)
	}
	return ev, err
}
