package app

import (
	"context"

	"agentd/internal/store/postgres"
)

// listener is the ability of a store several nodes share to follow the
// other nodes' commits (store/postgres): their events are published on
// this node's bus, so that whoever watches a session here sees its turns
// wherever they run.
type listener interface {
	Listen(ctx context.Context, pub postgres.Publisher, o *postgres.ListenOptions) error
	Listening() bool
}

// relay is the ability of a store several nodes share to send this
// node's live-only events (text deltas, …) to the other nodes.
type relay interface {
	Relay(ctx context.Context, src postgres.LiveSource) error
}

// listen runs the store's listener and relay, if it has them, until ctx
// is done.
func (a *App) listen(ctx context.Context) {
	if l, ok := a.Store.(listener); ok {
		a.wg.Go(func() {
			if err := l.Listen(ctx, a.Bus, &postgres.ListenOptions{
				Cancel: a.Runtime.CancelRunning, Inbox: a.Runtime.EndGrace, Release: a.Runtime.EndGrace}); err != nil {
				a.Logger.Error("store listener stopped: other nodes' events are not shown here", "err", err)
			}
		})
	}
	if r, ok := a.Store.(relay); ok {
		a.wg.Go(func() {
			if err := r.Relay(ctx, a.Bus); err != nil {
				a.Logger.Error("live event relay stopped: this node's text deltas are not shown on others", "err", err)
			}
		})
	}
}
