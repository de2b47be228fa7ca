package app

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"

	"agentd/internal/action"
	"agentd/internal/agent"
	"agentd/internal/command"
	"agentd/internal/control"
	"agentd/internal/event"
	"agentd/internal/extension"
	"agentd/internal/mcp"
	"agentd/internal/secret"
	"agentd/internal/store"
	"agentd/internal/tool"
	"agentd/internal/webext"
)

// extensionTypes are the extension types this node knows, each built by
// the package that owns it.
func (a *App) extensionTypes() []extension.Type {
	return []extension.Type{
		a.Agents.ExtensionType(),
		a.Agents.CapabilityType(),
		a.integrationType(),
		a.Controls.Type(),
		action.Type(a.Tools, &action.Options{AllowNetworks: prefixes(a.Config.Actions.AllowNetworks),
			Secrets: secret.NewResolver(a.Dir, nil), Logger: a.Logger}),
		webext.ThemeType(),
		webext.RendererType(),
		webext.WidgetType(a.Ext),
		webext.ArtifactType(),
		webext.AppType(a.apps),
		command.Type(a.Commands, a.Agents),
		a.Contexts.Type(),
		a.Jobs.Type(),
		a.Outputs.Type(),
	}
}

// prefixes parses CIDR ranges the configuration's checks already accepted.
func prefixes(cidrs []string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(cidrs))
	for _, c := range cidrs {
		if p, err := netip.ParsePrefix(c); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// controlLayer builds the controls, before the runtime that asks them
// whether an agent is paused.
func (a *App) controlLayer() {
	a.Controls = control.New(&control.Options{
		Agents: agentIDs{a.Agents},
		Paused: func(agent string, paused bool) {
			if !paused && a.Runtime != nil {
				a.Runtime.Resume(agent)
			}
		},
		Deny: a.Agents.SetDeny,
	})
	a.integrations = mcp.NewIntegrations(func(ctx context.Context) {
		if a.mcpLive.Load() {
			a.syncServers(ctx)
		}
	})
}

// extensionLayer builds the extension manager, registers the types and
// the agents' extensions tool.
func (a *App) extensionLayer() error {
	a.apps = webext.NewApps()
	a.Ext = extension.New(a.Store, &extension.Options{Logger: a.Logger, Dir: a.Dir, Seeders: []extension.Seeder{a.Agents},
		Written: a.written, Shared: a.storeKind == StorePostgres})
	for _, t := range a.extensionTypes() {
		if err := a.Ext.Register(t); err != nil {
			return fmt.Errorf("app: %w", err)
		}
	}
	a.Ext.Subscribe(func(s extension.Status) {
		a.Bus.Publish(event.New(0, 0, event.Extension, event.ExtensionData{Type: s.Type, Name: s.Name,
			Version: s.Version, Enabled: s.Enabled, Active: s.Active, Error: s.Error}))
	})
	ext := extension.Tool(a.Ext, func(id string) (bool, bool) {
		d, ok := a.Agents.Get(id)
		return ok && d.Extensions.Any, ok && d.Extensions.Machine
	})
	for _, t := range []tool.Tool{ext, webext.ArtifactTool(a.Ext, a.Ext)} {
		if err := a.Tools.Register(t); err != nil {
			return fmt.Errorf("app: register tool: %w", err)
		}
	}
	if w, ok := a.Store.(store.ExtensionWatcher); ok {
		a.extChanges = newChangeQueue()
		w.WatchExtensions(a.extChanges.add)
	}
	return nil
}

// startExtensions migrates the MCP servers a former version kept in
// mcp-servers.json to integration rows, reseeds, and activates every
// enabled row; on a shared store it then follows other nodes' changes.
func (a *App) startExtensions(ctx context.Context) error {
	a.migrateMCPState(ctx)
	if err := a.Ext.Start(ctx); err != nil {
		return err
	}
	return nil
}

// reseedAgent brings agent id's row in step with its file once the file
// changed (or went): the row reaches the other nodes and the console.
func (a *App) reseedAgent(id string) {
	if a.Agents.Row(id) {
		return // a person's or an agent's row defines it; the file waits for a reseed
	}
	seed, err := a.Agents.Seed(id)
	if err == nil {
		err = a.Ext.ReseedOne(context.Background(), "agent", id, seed)
	}
	if err != nil {
		a.Logger.Warn("agent file not synced to its row", "agent", id, "err", err)
	}
}

// followExtensions applies the changes other nodes make, and brings the
// rows of agent files that changed in step, until ctx ends.
func (a *App) followExtensions(ctx context.Context) {
	a.wg.Go(func() {
		for {
			keys, ok := a.agentFiles.take(ctx)
			if !ok {
				return
			}
			for _, k := range keys {
				a.reseedAgent(k[1])
			}
		}
	})
	if a.extChanges == nil {
		return
	}
	a.wg.Go(func() {
		for {
			keys, ok := a.extChanges.take(ctx)
			if !ok {
				return
			}
			for _, k := range keys {
				a.Ext.Changed(ctx, k[0], k[1])
			}
		}
	})
}

// migrateMCPState turns the servers of mcp-servers.json (where MCP servers
// added at run time were kept) into integration rows, then renames the
// file, so that it is read once.
func (a *App) migrateMCPState(ctx context.Context) {
	path := filepath.Join(a.Dir, MCPStateFile)
	defs, err := mcp.LoadState(path)
	if err != nil {
		a.Logger.Warn("mcp-servers.json not migrated", "err", err)
		return
	}
	if defs == nil {
		return
	}
	for _, d := range defs {
		doc := extension.Doc{Type: "integration", Name: d.Name, Spec: mcp.IntegrationSpec(d.Config, d.Agents)}
		_, err := a.Ext.Put(ctx, doc, extension.Who{Provenance: store.ProvenanceUser, By: "user:" + MCPStateFile})
		if err != nil && !errors.Is(err, store.ErrConflict) {
			a.Logger.Warn("mcp server of mcp-servers.json not migrated", "server", d.Name, "err", err)
			return // the file stays, to try again
		}
	}
	if err := os.Rename(path, path+".migrated"); err != nil {
		a.Logger.Warn("mcp-servers.json migrated but not renamed", "err", err)
		return
	}
	a.Logger.Info("mcp servers added at run time are now integration rows", "servers", len(defs), "file", MCPStateFile+".migrated")
}

// written logs, on the node that wrote it, a control's change of value in
// the session <agent>/controls of the agent it applies to: once per
// change, whichever nodes activate it.
func (a *App) written(ctx context.Context, old, cur *store.Extension) {
	agentID, d, ok := control.Change(old, cur)
	if !ok || a.Runtime == nil {
		return
	}
	if err := a.Runtime.Record(ctx, agentID+"/controls", event.New(0, 0, event.Control, d)); err != nil {
		a.Logger.Warn("control change not logged", "control", cur.Name, "agent", agentID, "err", err)
	}
}

// agentIDs says which agents exist.
type agentIDs struct{ r *agent.Registry }

func (x agentIDs) Has(id string) bool { _, ok := x.r.Get(id); return ok }

// changeQueue holds the rows other nodes changed until the follower takes
// them; ("", "") means every row (notifications may have been missed).
type changeQueue struct {
	mu   sync.Mutex
	keys map[[2]string]bool
	wake chan struct{}
}

func newChangeQueue() *changeQueue {
	return &changeQueue{keys: map[[2]string]bool{}, wake: make(chan struct{}, 1)}
}

func (q *changeQueue) add(typ, name string) {
	q.mu.Lock()
	q.keys[[2]string{typ, name}] = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *changeQueue) take(ctx context.Context) ([][2]string, bool) {
	select {
	case <-q.wake:
	case <-ctx.Done():
		return nil, false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.keys[[2]string{"", ""}] {
		clear(q.keys)
		return [][2]string{{"", ""}}, true
	}
	out := make([][2]string, 0, len(q.keys))
	for k := range q.keys {
		out = append(out, k)
	}
	clear(q.keys)
	return out, true
}
