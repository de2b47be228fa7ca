package app

import (
	"agentd/internal/connector"
	"agentd/internal/connector/discord"
	"agentd/internal/connector/slack"
	"agentd/internal/connector/telegram"
	"agentd/internal/extension"
	"agentd/internal/netguard"
	"agentd/internal/secret"
)

// platforms are the chat platforms this agentd speaks, by the name an
// integration row's platform gives: the connector type's platform enum
// is derived from its keys.
func platforms() map[string]connector.Factory {
	return map[string]connector.Factory{"telegram": telegram.New, "discord": discord.New, "slack": slack.New}
}

// connectorLayer builds the chat connectors over the store and the agent
// system (none without either: the integration type is then MCP's alone).
// Their rows activate with the others; they run from Start on.
func (a *App) connectorLayer() {
	st, ok := a.Store.(connector.Store)
	if !ok || a.AgentSys == nil {
		a.degrade("connectors", "the store keeps no connector rows")
		return
	}
	o := &connector.Options{Commands: a.Commands, Agents: a.Agents, Logger: a.Logger,
		Secrets: secret.NewResolver(a.Dir, nil), StateDir: a.Dir,
		Guard: netguard.New(&netguard.Options{AllowPrefixes: prefixes(a.Config.Connectors.AllowNetworks)})}
	if l, ok := a.Store.(connector.Leader); ok && a.storeKind == StorePostgres {
		o.Lead = l
	}
	a.Connectors = connector.New(st, a.AgentSys, a.Runtime, a.Bus, platforms(), o)
}

// integrationType is the integration type: an MCP server, or, with the
// connectors, a chat platform's bot (a spec that names a platform).
func (a *App) integrationType() extension.Type {
	if a.Connectors == nil {
		return a.integrations.Type()
	}
	return extension.Union("integration", "a connection to an outside service with secret references: an MCP server or a chat platform",
		extension.Arm{If: connector.IfSchema, Type: a.Connectors.Type()}, extension.Arm{Type: a.integrations.Type()})
}
