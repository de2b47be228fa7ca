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

// listen runs the store's listener, if it has one, until ctx is done.
func (a *App) listen(ctx context.Context) {
	l, ok := a.Store.(listener)
	if !ok {
		return
	}
	a.wg.Go(func() {
		if err := l.Listen(ctx, a.Bus, &postgres.ListenOptions{}); err != nil {
			a.Logger.Error("store listener stopped: other nodes' events are not shown here", "err", err)
		}
	})
}
