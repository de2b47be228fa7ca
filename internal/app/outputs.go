package app

import (
	"context"
	"errors"
	"fmt"

	"agentd/internal/output"
)

// outputLayer builds the output types, before the engine that offers
// them, and registers the output tool.
func (a *App) outputLayer() error {
	a.Outputs = output.New(a.Agents, a.Tools, &output.Options{Notifier: notifier{a}})
	if err := a.Tools.Register(a.Outputs.Tool()); err != nil {
		return fmt.Errorf("app: register tool: %w", err)
	}
	return nil
}

// notifier hands message outputs to the connectors, built after the
// engine (none: a message output is an error).
type notifier struct{ a *App }

var errNoConnectors = errors.New("this agentd runs no connectors")

func (n notifier) Notify(ctx context.Context, integration, chat, text string) error {
	if n.a.Connectors == nil {
		return errNoConnectors
	}
	return n.a.Connectors.Notify(ctx, integration, chat, text)
}

func (n notifier) Agent(integration string) (string, bool) {
	if n.a.Connectors == nil {
		return "", false
	}
	return n.a.Connectors.Agent(integration)
}
