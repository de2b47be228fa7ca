package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/gateway/console"
	"agentd/internal/gateway/openaiapi"
	"agentd/internal/gateway/stream"
	"agentd/internal/mcpserver"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/webext"
)

// API returns the local API with every part of this node behind it,
// agentd as an MCP server (streamable HTTP) at /mcp among them; that one
// is made when /mcp is first asked (most nodes, and every command run in
// process, never are).
func (a *App) API(ctx context.Context) (*gateway.Server, error) { return a.api(true), nil }

// CommandAPI is the API for a command run in process, whose only client is
// the command: without the parts that only a daemon's clients use, the
// metrics (/metrics answers 501 not_available) and the WebSocket stream
// (/v1/stream is not served). Making them (their event subscriptions,
// their goroutines) was a fifth of the API's cost at every command.
func (a *App) CommandAPI(ctx context.Context) (*gateway.Server, error) { return a.api(false), nil }

func (a *App) api(daemon bool) *gateway.Server {
	var mem gateway.Memory // a nil *memory.Store is no memory, not a broken one
	if a.Memory != nil {
		mem = a.Memory
	}
	mcpFacade := &facade{a: a}
	o := &gateway.Options{Runtime: a.Runtime, Sessions: a.Store, Agents: a.Agents, Version: a.version, Logger: a.Logger,
		Lifecycle: a.Runtime, Permits: a.Permits, MCP: mcpRows{a}, Keys: a.Keys, Skills: a, History: workingMemory{a.Store, a.Bus, a.Runtime}, Memory: mem,
		MCPHandler: mcpFacade,
		OpenAI:     openaiapi.New(a.Runtime, a.Agents, &openaiapi.Options{Logger: a.Logger}),
		Ready:      readiness{a},
		Usage:      a.Store,
		Nodes:      a.Store,
		AgentFiles: a.Agents,
		Extensions: a.Ext,
		Console:    console.Handler(&console.Options{Logger: a.Logger}),
		Commands:   a.Commands,
		Contexts:   a.Contexts,
		Jobs:       a.Jobs,
		JobRuns:    a.Store,
		JobTimes:   a.Scheduler,
		Grants:     a.Store,
	}
	if a.AgentSys != nil { // a nil *agentsys.System in the interface would not be nil
		o.DynamicAgents = a.AgentSys
	}
	a.connectorsAPI(o)
	wo := &webext.WidgetOptions{Usage: a.Store, Sessions: a.Store, Tools: a.Tools, Logger: a.Logger}
	if a.Memory != nil {
		wo.Memory = a.Memory
	}
	o.Widgets, o.Artifacts, o.Apps = webext.NewWidgets(a.Ext, wo), webext.NewArtifacts(a.Ext, a.Ext), a.apps
	var st *stream.Handler
	if daemon {
		// Upgraded WebSocket connections outlive http.Server.Shutdown; the
		// stream ends them when the node stops.
		st = stream.New(stream.Join(a.Runtime, a.Store), &stream.Options{Logger: a.Logger})
		o.Stream, o.Metrics = st, a.startMetrics()
	}
	gw := gateway.New(o)
	mcpFacade.gw = gw
	a.mcpf.Store(mcpFacade)
	a.wg.Go(func() {
		<-a.done
		if st != nil {
			st.Close()
		}
		mcpFacade.stopPipe()
	})
	return gw
}

// facade serves /mcp: agentd as an MCP server, made at the first request
// (a request that finds it cannot be made gets a 503, the next tries
// again). It talks to agentd through the local API, in process.
type facade struct {
	a  *App
	gw *gateway.Server

	mu      sync.Mutex
	h       http.Handler      // nil until made
	srv     *mcpserver.Server // nil until made
	stopped bool              // closed: none is made any more
	pipe    func()            // ends the pipe to the API
}

func (f *facade) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, err := f.handler(r.Context())
	if err != nil {
		f.a.Logger.Warn("mcp facade not made", "err", err)
		gateway.WriteError(w, fmt.Errorf("%w: %w", errFacade, err))
		return
	}
	h.ServeHTTP(w, r)
}

// errFacade: the MCP facade could not be made.
var errFacade = errors.New("agentd's MCP server is not available")

func (f *facade) handler(ctx context.Context) (http.Handler, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.h != nil {
		return f.h, nil
	}
	if f.stopped {
		return nil, runtime.ErrClosed
	}
	c, stop := gateway.Pipe(f.gw)
	srv := mcpserver.New(FacadeBackend{C: c}, &mcpserver.Options{Name: "agentd", Version: f.a.version, Logger: f.a.Logger})
	if err := srv.Sync(ctx); err != nil {
		stop()
		return nil, err
	}
	f.a.facade.Store(srv)
	f.srv, f.pipe = srv, stop
	// Over the unix socket, clients name the host "agentd"; over TCP, by
	// the names the gateway accepts (its auth layer has checked the Host
	// and the token before /mcp is reached).
	hosts := []string{"localhost", "127.0.0.1", "[::1]", "agentd"}
	hosts = append(hosts, f.a.Config.Gateway.AllowedHosts...)
	if h, _, err := net.SplitHostPort(f.a.Config.Gateway.Listen); err == nil && h != "" && h != "0.0.0.0" && h != "::" {
		hosts = append(hosts, h)
	}
	f.h = srv.Handler(&mcpserver.HandlerOptions{AllowedHosts: hosts})
	return f.h, nil
}

// close closes the MCP server if it was made (its sessions end), and
// keeps one from being made.
func (f *facade) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	if f.srv != nil {
		f.srv.Close()
	}
}

// stopPipe ends the pipe of a facade made, once the node has stopped.
func (f *facade) stopPipe() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pipe != nil {
		f.pipe()
	}
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
