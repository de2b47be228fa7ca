package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"agentd/internal/extension"
	"agentd/internal/mcp"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// mcpRows is what the API's MCP routes manage: the servers added at run
// time are integration rows, so they reach every node and keep a history;
// the rest is the MCP manager's.
type mcpRows struct{ a *App }

func (m mcpRows) List() []mcp.Status                     { return m.a.MCP.List() }
func (m mcpRows) Tools(name string) ([]tool.Spec, error) { return m.a.MCP.Tools(name) }

// Add writes the server's integration row, then waits for its first
// connection as adding a server always did: a server that does not answer
// is not kept (its row is removed) and the error says why.
func (m mcpRows) Add(ctx context.Context, d mcp.Def) (mcp.Status, error) {
	if st, ok := m.a.MCP.Status(d.Name); ok && st.Source != mcp.SourceIntegration {
		return mcp.Status{}, fmt.Errorf("mcp: add %q: %w: it is defined by %s", d.Name, mcp.ErrConflict, st.Source)
	}
	doc := extension.Doc{Type: "integration", Name: d.Name, Spec: mcp.IntegrationSpec(d.Config, d.Agents)}
	who := extension.Who{Provenance: store.ProvenanceUser, By: "user:api"}
	if _, err := m.a.Ext.Put(ctx, doc, who); err != nil {
		return mcp.Status{}, err
	}
	if d.Config.Disabled {
		st, _ := m.a.MCP.Status(d.Name)
		return st, nil
	}
	timeout := d.Config.Timeout.D()
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		st, ok := m.a.MCP.Status(d.Name)
		switch {
		case ok && st.State == mcp.StateConnected:
			return st, nil
		case ok && st.State == mcp.StateDown && st.LastError != "", wctx.Err() != nil:
			reason := st.LastError
			if reason == "" {
				reason = "it did not connect in time"
			}
			if err := m.a.Ext.Delete(context.WithoutCancel(ctx), "integration", d.Name, who); err != nil && !errors.Is(err, store.ErrNotFound) {
				m.a.Logger.Warn("integration of a server that did not connect not removed", "server", d.Name, "err", err)
			}
			return mcp.Status{}, fmt.Errorf("mcp: add %q: %s", d.Name, reason)
		}
		select {
		case <-wctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Remove removes the server's integration row; a server another file
// defines is refused as the MCP manager refuses it.
func (m mcpRows) Remove(ctx context.Context, name string) error {
	err := m.a.Ext.Delete(ctx, "integration", name, extension.Who{Provenance: store.ProvenanceUser, By: "user:api"})
	if errors.Is(err, store.ErrNotFound) {
		return m.a.MCP.Remove(ctx, name)
	}
	return err
}
