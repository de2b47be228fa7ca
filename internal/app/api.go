package app

import (
	"context"
	"fmt"
	"net"
	"net/http"

	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/gateway/console"
	"agentd/internal/gateway/openaiapi"
	"agentd/internal/gateway/stream"
	"agentd/internal/mcpserver"
	"agentd/internal/store"
)

// API returns the local API with every part of this node behind it,
// agentd as an MCP server (streamable HTTP) at /mcp among them.
func (a *App) API(ctx context.Context) (*gateway.Server, error) {
	var facade http.Handler
	var mem gateway.Memory // a nil *memory.Store is no memory, not a broken one
	if a.Memory != nil {
		mem = a.Memory
	}
	// Upgraded WebSocket connections outlive http.Server.Shutdown; the
	// stream ends them when the node stops.
	st := stream.New(stream.Join(a.Runtime, a.Store), &stream.Options{Logger: a.Logger})
	gw := gateway.New(&gateway.Options{Runtime: a.Runtime, Sessions: a.Store, Agents: a.Agents, Version: a.version, Logger: a.Logger,
		Lifecycle: a.Runtime, Permits: a.Permits, MCP: a.MCP, Keys: a.Keys, Skills: a, History: workingMemory{a.Store, a.Bus, a.Runtime}, Memory: mem,
		MCPHandler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { facade.ServeHTTP(w, r) }),
		OpenAI:     openaiapi.New(a.Runtime, a.Agents, &openaiapi.Options{Logger: a.Logger}),
		Stream:     st,
		Ready:      readiness{a},
		Metrics:    a.startMetrics(),
		Usage:      a.Store,
		Nodes:      a.Store,
		AgentFiles: a.Agents,
		Console:    console.Handler(&console.Options{Logger: a.Logger}),
	})
	c, stop := gateway.Pipe(gw)
	f := mcpserver.New(FacadeBackend{C: c}, &mcpserver.Options{Name: "agentd", Version: a.version, Logger: a.Logger})
	a.wg.Go(func() {
		<-a.done
		st.Close()
		stop()
	})
	if err := f.Sync(ctx); err != nil {
		return nil, err
	}
	a.facade.Store(f)
	// Over the unix socket, clients name the host "agentd"; over TCP, by
	// the names the gateway accepts (its auth layer has checked the Host
	// and the token before /mcp is reached).
	hosts := []string{"localhost", "127.0.0.1", "[::1]", "agentd"}
	hosts = append(hosts, a.Config.Gateway.AllowedHosts...)
	if h, _, err := net.SplitHostPort(a.Config.Gateway.Listen); err == nil && h != "" && h != "0.0.0.0" && h != "::" {
		hosts = append(hosts, h)
	}
	facade = f.Handler(&mcpserver.HandlerOptions{AllowedHosts: hosts})
	return gw, nil
}

// FacadeBackend gives the MCP facade agentd through the local API (the
// daemon's socket, or agentd in process).
type FacadeBackend struct{ C *gateway.Client }

func (f FacadeBackend) Agents(ctx context.Context) ([]mcpserver.Agent, error) {
	as, err := f.C.Agents(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]mcpserver.Agent, len(as))
	for i, a := range as {
		out[i] = mcpserver.Agent{ID: a.ID, Name: a.Name, Description: a.Description}
	}
	return out, nil
}

func (f FacadeBackend) Ask(ctx context.Context, agentID, key, text string) (string, string, error) {
	_, end, err := f.C.Stream(ctx, agentID+"/"+key, gateway.MessageRequest{Text: text, Source: "mcp"}, func(event.Event) error { return nil })
	if err != nil {
		return "", "", err
	}
	if end.Status != event.StatusDone && end.Reason != "" {
		return end.Reply, end.Status, fmt.Errorf("%s", end.Reason)
	}
	return end.Reply, end.Status, nil
}

func (f FacadeBackend) Sessions(ctx context.Context, agentID string, limit int) ([]mcpserver.Session, error) {
	ss, err := f.C.Sessions(ctx, store.SessionFilter{Agent: agentID, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]mcpserver.Session, len(ss))
	for i, s := range ss {
		out[i] = mcpserver.Session{Address: s.Address, State: s.State, UpdatedAt: s.UpdatedAt, LastSeq: s.LastSeq}
	}
	return out, nil
}

func (f FacadeBackend) Events(ctx context.Context, addr string, after int64, limit int) ([]event.Event, error) {
	p, err := f.C.Events(ctx, addr, after, limit, 0)
	return p.Events, err
}
