// Package app is the one place that builds agentd from its parts: it opens
// the data directory, loads configuration and agents, opens the store, and
// wires the tool registry, model providers, engine and runtime together.
// The CLI, the daemon and the benchmark harness all start agentd through it;
// no other package imports it.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"agentd/internal/agent"
	"agentd/internal/agentsys"
	"agentd/internal/command"
	"agentd/internal/connector"
	"agentd/internal/contexts"
	"agentd/internal/control"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/extension"
	"agentd/internal/gateway"
	"agentd/internal/identity"
	"agentd/internal/job"
	"agentd/internal/mcp"
	"agentd/internal/mcpserver"
	"agentd/internal/memory"
	"agentd/internal/metrics"
	"agentd/internal/netguard"
	"agentd/internal/output"
	"agentd/internal/permit"
	"agentd/internal/reclaim"
	"agentd/internal/runtime"
	"agentd/internal/sandbox"
	"agentd/internal/secret"
	"agentd/internal/skill"
	"agentd/internal/store"
	"agentd/internal/title"
	"agentd/internal/tool"
	"agentd/internal/tool/builtin"
	"agentd/internal/tool/proc"
	"agentd/internal/webext"
	"agentd/internal/workspace"
)

// ErrLocked means another agentd process holds the data directory.
var ErrLocked = errors.New("data directory in use by another agentd process")

// Options configure Open.
type Options struct {
	Logger *slog.Logger
	// ExtraTools are registered beside the built-in tools.
	ExtraTools []tool.Tool
	// Engine overrides, for tests and benchmarks; nil for defaults.
	Engine *engine.Options
	// Version is agentd's version, told to MCP servers and clients.
	Version string
	// Store, when set, selects the store (sqlite, or a postgres:// URL)
	// over agentd.yaml's store.url: --store or $AGENTD_STORE.
	Store string
	// Existing makes Open refuse, with ErrNoData, a directory that holds
	// no agentd data (see HasData) instead of making one there.
	Existing bool
	// ReadOnce makes Start read the agent and skill files once, as Open
	// did, rather than watch them for changes: for a short command run in
	// process, which would end before a change mattered. Default false.
	ReadOnce bool
	// JobBeforeSubmit is the job Runner's BeforeSubmit (job.Options): a
	// test stops agentd with it between a run's record and its input.
	JobBeforeSubmit func(store.JobRun) error
	// Config is the data directory's agentd.yaml as the caller already
	// loaded it (agent.LoadConfig), so that it is not parsed twice; nil:
	// Open loads it.
	Config *agent.Config
}

// App is a running agentd node.
type App struct {
	Dir     string
	Config  *agent.Config
	Agents  *agent.Registry
	Store   Store
	Tools   *tool.Registry
	Models  *Models
	Engine  *engine.Engine
	Runtime *runtime.Runtime
	Bus     *event.Bus
	Logger  *slog.Logger
	Permits *permit.Broker
	// Workspaces are the agents' folders; Sandbox runs their commands;
	// Procs keeps their background processes (machine.go).
	Workspaces *workspace.Set
	Sandbox    *sandbox.Sandbox
	Procs      *proc.Manager
	Keys       *identity.Keyring
	MCP        *mcp.Manager
	Memory     *memory.Store // opens its database when first used (see Degraded)
	// Ext holds the extension rows and activates them; Controls are the
	// active controls.
	Ext      *extension.Manager
	Controls *control.Controls
	// Commands route a chat line that starts with "/" to a command row;
	// Jobs run job rows.
	Commands *command.Router
	Jobs     *job.Runner
	// Contexts are the active context types (package contexts).
	Contexts *contexts.Contexts
	// AgentSys runs the dynamic agents (nil: the store keeps none).
	AgentSys *agentsys.System
	// Scheduler fires the jobs' time triggers while this node leads
	// "jobs" (the daemon runs it: ScheduleJobs).
	Scheduler *job.Scheduler
	// Connectors run the chat connectors (nil: the store or the agent
	// system is missing).
	Connectors *connector.Manager
	// Outputs are the agents' output types and the output tool.
	Outputs *output.Set

	identity     atomic.Pointer[identityClients]   // the identity servers' clients, once the daemon started them (identityclient.go)
	integrations *mcp.Integrations                 // MCP servers defined by integration rows
	apps         *webext.Apps                      // the enabled app rows' files, served under /apps/
	extChanges   *changeQueue                      // rows other nodes changed (a shared store)
	agentFiles   *changeQueue                      // agents whose files changed, for their rows
	mcpLive      atomic.Bool                       // Start has handed the servers to MCP
	metrics      atomic.Pointer[metrics.Collector] // once the API has started it

	dmu       sync.Mutex
	degraded  []gateway.Degraded // optional parts that are off
	storeKind string             // StoreSQLite or StorePostgres
	openMem   memoryOpener       // makes long-term memory beside the store

	skills   atomic.Pointer[skill.Set]
	facade   atomic.Pointer[mcpserver.Server] // agentd as an MCP server, once /mcp has made it
	mcpf     atomic.Pointer[facade]           // what serves /mcp, once API has built it
	version  string
	readOnce bool // Options.ReadOnce

	lock      *os.File
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	started   atomic.Bool
	stopping  atomic.Bool     // set by Drain (and Close)
	done      chan struct{}   // closed by Close
	bctx      context.Context // ends at Close
	closeOnce sync.Once
}

// DBFile is the database's name inside the data directory.
const DBFile = "agentd.db"

// MCPStartWait bounds how long Start waits for MCP servers to connect
// before it resumes work; a server slower than that joins later.
const MCPStartWait = 15 * time.Second

// SocketFile is the local API socket's name inside the data directory.
const SocketFile = "agentd.sock"

// Open builds agentd on a data directory, taking its lock. Call Start, then Close.
func Open(ctx context.Context, dir string, o *Options) (*App, error) {
	if o == nil {
		o = &Options{}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.Existing && !HasData(dir) {
		return nil, fmt.Errorf("app: %s: %w", dir, ErrNoData)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("app: data directory: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	if err := privateDataDir(dir, log); err != nil {
		lock.Close()
		return nil, err
	}
	a := &App{Dir: dir, Logger: log, lock: lock, version: o.Version, readOnce: o.ReadOnce, done: make(chan struct{}),
		agentFiles: newChangeQueue()}
	ok := false
	defer func() {
		if !ok {
			a.closeParts()
		}
	}()
	if a.Config = o.Config; a.Config == nil {
		if a.Config, err = agent.LoadConfig(dir); err != nil {
			return nil, err
		}
	}
	onChange := func(id string) {
		// Keep the store's record of agents in step with their files.
		if d, ok := a.Agents.Get(id); ok && a.Store != nil {
			if err := a.saveAgent(context.Background(), d); err != nil {
				log.Warn("record agent", "agent", id, "err", err)
			}
			a.warnBuiltin(d)
			a.warnWorkspace(d)
		}
		a.agentChanged(context.Background(), id)
		if a.started.Load() {
			a.agentFiles.add("agent", id) // not here: this may run inside an activation
			a.syncServers(context.Background())
			if f := a.facade.Load(); f != nil {
				f.Sync(context.Background())
			}
		}
	}
	if a.Agents, err = agent.NewRegistry(dir, a.Config, &agent.RegistryOptions{Logger: log, OnChange: onChange}); err != nil {
		return nil, err
	}
	node := nodeInfo{version: o.Version}
	if !a.Config.Gateway.TCPOff() {
		node.addr = a.Config.Gateway.Listen
	}
	if a.Store, a.storeKind, a.openMem, err = openStore(ctx, dir, storeURL(o.Store, a.Config.Store), a.Config.Store, node, log); err != nil {
		return nil, err
	}
	a.Tools = tool.NewRegistry(&tool.RegistryOptions{Logger: log})
	var allow []netip.Prefix
	for _, n := range a.Config.Tools.HTTPFetch.AllowNetworks {
		allow = append(allow, netip.MustParsePrefix(n)) // validated when loaded
	}
	for _, t := range append(builtin.Tools(&builtin.Options{AllowPrefixes: allow}), o.ExtraTools...) {
		if err := a.Tools.Register(t); err != nil {
			return nil, fmt.Errorf("app: register tool: %w", err)
		}
	}
	a.Bus = event.NewBus()
	a.Contexts = contexts.New(workingMemory{a.Store, a.Bus, nil}, a.Agents, &contexts.Options{Logger: log})
	if err := a.toolLayer(o.Version); err != nil {
		return nil, err
	}
	if err := a.machineLayer(); err != nil {
		return nil, err
	}
	if err := a.openMemory(ctx); err != nil {
		return nil, err
	}
	if err := a.outputLayer(); err != nil {
		return nil, err
	}
	a.Models = NewModels(nil)
	eo := engine.Options{}
	if o.Engine != nil {
		eo = *o.Engine
	}
	eo.Models, eo.Tools, eo.Prices, eo.Logger, eo.Live = a.Models, a.Tools, a.Config.Prices, log, a.Bus
	eo.Permits, eo.Signer, eo.Servers, eo.SystemExtra = a.Permits, signer{a.Keys}, serverTools{a}, a.skillPrompt
	eo.Skills, eo.Grants, eo.Outputs, eo.Contexts = skillServers{a}, a.Store, a.Outputs, a.Contexts
	eo.Working = a.Store.Working
	if a.Memory != nil {
		eo.Recall = recaller{a.Memory}
	}
	a.Engine = engine.New(&eo)
	a.controlLayer()
	ro := &runtime.Options{Store: a.Store, Agents: a.Agents, Engine: a.Engine, Bus: a.Bus,
		Logger: log, MaxConcurrentTurns: a.Config.MaxConcurrentTurns, Paused: a.Controls.Paused}
	if a.storeKind == StorePostgres {
		ro.ClaimEvery = claimEvery // other nodes may share the store
	}
	a.runtimeHooks(ro)
	a.Runtime = runtime.New(ro)
	a.Commands = command.NewRouterWith(addressable{a.Agents, a.Store})
	a.Jobs = job.New(a.Runtime, a.Store, a.Agents, &job.Options{Logger: log, Guard: netguard.New(&netguard.Options{AllowPrefixes: allow}),
		Ended: a.jobEnded, BeforeSubmit: o.JobBeforeSubmit, Secrets: secret.NewResolver(a.Dir, nil), Dir: a.Dir})
	a.Scheduler = job.NewScheduler(a.Jobs, a.Store, &job.SchedulerOptions{Logger: log, Lead: a.Store, Fired: a.jobFired,
		KeepRuns: a.Config.Jobs.KeepRuns, KeepRunsFor: a.Config.Jobs.KeepRunsFor.D()})
	a.agentSystem()
	a.connectorLayer()
	if err := a.extensionLayer(); err != nil {
		return nil, err
	}
	if err := a.agentTools(); err != nil {
		return nil, err
	}
	ok = true
	return a, nil
}

// Start records the agents, connects the MCP servers, resumes unfinished
// work and starts watching agent files.
func (a *App) Start(ctx context.Context) error {
	a.recordAgents(ctx)
	a.sweepGrants(ctx)
	for _, d := range a.Agents.List() {
		a.warnBuiltin(d)
		a.warnWorkspace(d)
	}
	if err := a.startExtensions(ctx); err != nil {
		return err
	}
	// Turns resumed or started now must find their servers' tools: wait
	// for each server's first connection (or first failure), within
	// MCPStartWait.
	a.mcpLive.Store(true)
	a.syncServers(ctx)
	if servers := a.MCP.List(); len(servers) > 0 {
		t0 := time.Now()
		wctx, cancelWait := context.WithTimeout(ctx, MCPStartWait)
		a.MCP.WaitReady(wctx)
		cancelWait()
		for _, st := range a.MCP.List() {
			if st.State != mcp.StateConnected && st.State != mcp.StateDisabled {
				a.Logger.Warn("mcp server not connected at start; its tools join when it does", "server", st.Name, "state", st.State, "err", st.LastError)
			}
		}
		a.Logger.Debug("mcp servers connected", "servers", len(servers), "took", time.Since(t0))
	}
	n, err := a.Runtime.Start(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		a.Logger.Info("resumed unfinished work", "sessions", n)
	}
	wctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	a.startAgents(ctx, wctx)
	if a.Connectors != nil && !a.readOnce {
		a.Connectors.Start() // after the agent system: a message finds its agent
	}
	a.started.Store(true)
	a.followExtensions(wctx)
	a.listen(wctx)
	if !a.readOnce {
		a.wg.Go(func() {
			if err := a.Agents.Run(wctx); err != nil && wctx.Err() == nil {
				a.Logger.Error("agent file watcher stopped", "err", err)
			}
		})
	}
	if a.Memory != nil {
		a.wg.Go(func() {
			if err := a.Memory.Run(wctx); err != nil && wctx.Err() == nil {
				a.Logger.Error("memory embedding stopped", "err", err)
			}
		})
	}
	if !a.readOnce {
		a.wg.Go(func() {
			err := skill.Watch(wctx, a.skillDirs(), &skill.Options{Logger: a.Logger}, func(s *skill.Set) { a.skills.Store(s) })
			if err != nil && wctx.Err() == nil {
				a.Logger.Error("skill watcher stopped", "err", err)
			}
		})
	}
	a.bctx = wctx
	return nil
}

// Bootstrap makes, in the background, the start-up calls of every agent
// and starts the clients of the identity servers they name (the daemon
// does this once it is up; a command run in process does not).
func (a *App) Bootstrap() {
	if a.bctx != nil {
		a.wg.Go(func() { a.bootstrap(a.bctx) })
		a.startIdentity(a.bctx)
	}
}

// TitleSessions starts, in the background, naming sessions with a few
// words from a model after their first reply (the daemon does this once it
// is up; a command run in process does not, as it would end first).
func (a *App) TitleSessions() {
	if a.bctx == nil {
		return
	}
	t := title.New(a.Store, a.Agents, a.Models, a.Bus, &title.Options{Logger: a.Logger, Prices: a.Config.Prices})
	a.wg.Go(func() {
		if err := t.Run(a.bctx); err != nil {
			a.Logger.Error("session titles stopped", "err", err)
		}
	})
}

// ScheduleJobs starts, in the background, the job scheduler: while this
// node leads "jobs" it resumes the runs left open and fires the jobs'
// time triggers (the daemon does this; a command run in process does
// not, as it would end first and fire jobs the daemon fires).
func (a *App) ScheduleJobs() {
	if a.bctx != nil {
		a.wg.Go(func() { a.Scheduler.Run(a.bctx) })
	}
}

// ReclaimMemory starts, in the background, giving the memory a burst of
// work grew back to the system once the work is over (see package
// reclaim; the daemon does this, a command run in process ends first).
func (a *App) ReclaimMemory() {
	if a.bctx != nil {
		a.wg.Go(func() { reclaim.Run(a.bctx, nil) })
	}
}

// Drain is the first step of stopping, while the API still answers: new
// inputs are refused and queued ones wait for the next start, running
// turns get until ctx is done to finish (then they are cancelled, to
// resume at the next start), and whoever waits for a turn gets its end or
// a shutting-down error. Readiness says "shutting down" from the start.
func (a *App) Drain(ctx context.Context) {
	a.stopping.Store(true)
	if a.Connectors != nil {
		a.Connectors.Close() // no message taken any more; undelivered replies stay in the outbox
	}
	if a.Jobs != nil {
		a.Jobs.Close()
	}
	if a.AgentSys != nil {
		a.AgentSys.Close() // before the runtime: no finish is cut short by it
	}
	if a.Runtime != nil {
		a.Runtime.Close(ctx)
	}
}

// Close stops the runtime (see Drain; running turns get until ctx is done
// to finish), then the store, and releases the lock.
func (a *App) Close(ctx context.Context) error {
	if f := a.mcpf.Load(); f != nil {
		f.close()
	}
	a.Drain(ctx)
	if a.cancel != nil {
		a.cancel()
	}
	a.closeOnce.Do(func() { close(a.done) })
	a.wg.Wait()
	return a.closeParts()
}

func (a *App) closeParts() error {
	var err error
	a.closeMachine()
	if a.MCP != nil {
		a.MCP.Close()
	}
	if a.Memory != nil {
		a.Memory.Close()
	}
	if a.Store != nil {
		err = a.Store.Close()
	}
	if a.lock != nil {
		a.lock.Close()
	}
	return err
}

// degrade records that an optional part is off, for readiness.
func (a *App) degrade(part, reason string) {
	a.dmu.Lock()
	defer a.dmu.Unlock()
	a.degraded = append(a.degraded, gateway.Degraded{Part: part, Reason: reason})
}

// Degraded lists the optional parts that are off, and why; nil when none
// is.
func (a *App) Degraded() []gateway.Degraded {
	a.dmu.Lock()
	defer a.dmu.Unlock()
	return slices.Clone(a.degraded)
}

func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, LockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("app: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("app: lock: %w", err)
	}
	return f, nil
}
