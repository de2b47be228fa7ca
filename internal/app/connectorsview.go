package app

import (
	"context"
	"time"

	"agentd/internal/connector"
	"agentd/internal/gateway"
	"agentd/internal/metrics"
	"agentd/internal/store"
)

// connectorsView is the chat connectors as the gateway sees them: the
// Manager, and the store's outbox for a connector's undelivered replies.
type connectorsView struct {
	*connector.Manager
	outbox store.ConnectorStore
}

// Outbox lists outbox rows (gateway.ConnectorOutbox).
func (v connectorsView) Outbox(ctx context.Context, f store.OutboxFilter) ([]store.OutboxItem, error) {
	return v.outbox.Outbox(ctx, f)
}

// connectorsAPI sets the gateway's connectors and pairings (none without
// connectors: their routes answer empty lists and 404).
func (a *App) connectorsAPI(o *gateway.Options) {
	st, ok := a.Store.(store.ConnectorStore)
	if a.Connectors == nil || !ok {
		return
	}
	o.Connectors, o.Pairings = connectorsView{a.Connectors, st}, a.Connectors
}

// connectorFigures are the connectors' figures for the metrics, read at
// each scrape.
func (a *App) connectorFigures() []metrics.ConnectorFigures {
	if a.Connectors == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var out []metrics.ConnectorFigures
	for _, c := range a.Connectors.List(ctx) {
		out = append(out, metrics.ConnectorFigures{Name: c.Name, Platform: c.Platform, Up: c.State == connector.StateConnected,
			Queue: c.Queue, Received: c.Received, Delivered: c.Delivered, Retried: c.Retried, Failed: c.FailedTotal, Edits: c.Edits,
			Refused: c.Refused})
	}
	return out
}
