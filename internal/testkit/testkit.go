// Package testkit builds agentd's kernel from real parts for tests of any
// layer: a runtime over a SQLite store in a temporary directory, the
// engine, a tool registry and a scripted model. A test of the runtime, the
// gateway or an API then starts in a line:
//
//	k := testkit.New(t, &testkit.Options{Script: "match *\nsay hello"})
//	_, end, err := k.Runtime.Send(t.Context(), runtime.Input{Session: "assistant/chat", Text: "hi"})
//
// The model is the offline echo model unless a test gives its own (Model,
// a testkit.Model whose calls it can hold and inspect) or a fakellm script
// (Script, answered over loopback HTTP through the OpenAI client, the
// script language of docs/fakellm.md). Only tests and Example functions
// import this package.
package testkit

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/model/echo"
	"agentd/internal/runtime"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
	"agentd/internal/tool"
)

// Options configure a Kit. The zero value (or nil) gives one agent,
// "assistant", answered by the echo model, with no tools.
type Options struct {
	// Path is the database file; "" for a new one (in t.TempDir() for New,
	// in Open's directory for Open). A test restarts agentd by opening a
	// second Kit on the first one's Path after closing it.
	Path string
	// SQLite are the store's options; nil for its defaults.
	SQLite *sqlite.Options
	// Agents are the agents the runtime knows; nil: Agents{"assistant":
	// Agent("assistant")}.
	Agents runtime.Agents
	// Model answers every agent's model calls; nil: fakellm running
	// Script if it is set, else the echo model.
	Model model.Provider
	// Script is a fakellm script that answers every model call when Model
	// is nil.
	Script string
	// Tools are the tools of the registry.
	Tools []tool.Tool
	// Wrap, if set, wraps the store the runtime uses (Kit.Store stays the
	// SQLite store itself).
	Wrap func(store.Store) store.Store
	// Engine, if set, changes the engine's options before it is built.
	// The defaults: live events on the Kit's bus, retries after 1ms.
	Engine func(*engine.Options)
	// Runtime, if set, changes the runtime's options before it is built.
	Runtime func(*runtime.Options)
}

// Kit is a runtime built from real parts, and the parts.
type Kit struct {
	Path    string
	Store   *sqlite.Store
	Bus     *event.Bus
	Tools   *tool.Registry
	Engine  *engine.Engine
	Runtime *runtime.Runtime

	once    sync.Once
	closers []func()
	err     error
}

// New returns a Kit that is closed when t ends.
func New(t testing.TB, o *Options) *Kit {
	t.Helper()
	if o == nil {
		o = &Options{}
	}
	k, err := Open(t.Context(), t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := k.Close(); err != nil {
			t.Errorf("testkit: %v", err)
		}
	})
	return k
}

// Open returns a Kit with its database in dir (unless o.Path names one),
// for a caller without a testing.TB (an Example function). Close it.
func Open(ctx context.Context, dir string, o *Options) (*Kit, error) {
	if o == nil {
		o = &Options{}
	}
	k := &Kit{Path: o.Path, Bus: event.NewBus(), Tools: tool.NewRegistry(nil)}
	if k.Path == "" {
		k.Path = filepath.Join(dir, "agentd.db")
	}
	for _, t := range o.Tools {
		if err := k.Tools.Register(t); err != nil {
			return nil, err
		}
	}
	p, err := k.model(o)
	if err != nil {
		return nil, err
	}
	if k.Store, err = sqlite.Open(ctx, k.Path, o.SQLite); err != nil {
		k.Close()
		return nil, err
	}
	eo := engine.Options{Live: k.Bus, Models: models{p}, Tools: k.Tools, BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond}
	if o.Engine != nil {
		o.Engine(&eo)
	}
	k.Engine = engine.New(&eo)
	ro := runtime.Options{Store: k.Store, Agents: o.Agents, Engine: k.Engine, Bus: k.Bus}
	if ro.Agents == nil {
		ro.Agents = Agents{"assistant": Agent("assistant")}
	}
	if o.Wrap != nil {
		ro.Store = o.Wrap(k.Store)
	}
	if o.Runtime != nil {
		o.Runtime(&ro)
	}
	k.Runtime = runtime.New(&ro)
	return k, nil
}

// model returns the model of o, starting fakellm if it runs a script.
func (k *Kit) model(o *Options) (model.Provider, error) {
	switch {
	case o.Model != nil:
		return o.Model, nil
	case o.Script != "":
		p, stop, err := startFakeLLM(o.Script)
		if err != nil {
			return nil, err
		}
		k.closers = append(k.closers, stop)
		return p, nil
	}
	return echo.New(), nil
}

// Close stops the runtime at once — running turns stay unfinished in the
// log, to resume when a Kit opens it again — then closes the store and
// fakellm. It may be called more than once.
func (k *Kit) Close() error {
	k.once.Do(func() {
		if k.Runtime != nil {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			k.Runtime.Close(ctx)
		}
		if k.Store != nil {
			if err := k.Store.Close(); err != nil {
				k.err = errors.Join(k.err, err)
			}
		}
		for _, c := range k.closers {
			c()
		}
	})
	return k.err
}

// Agents is a fixed set of agent definitions, by id.
type Agents map[string]*agent.Definition

// Get returns the agent id.
func (a Agents) Get(id string) (*agent.Definition, bool) {
	d, ok := a[id]
	return d, ok
}

// List returns the agents, by id.
func (a Agents) List() []*agent.Definition {
	out := make([]*agent.Definition, 0, len(a))
	for _, d := range a {
		out = append(out, d)
	}
	slices.SortFunc(out, func(x, y *agent.Definition) int { return strings.Compare(x.ID, y.ID) })
	return out
}

// Agent returns a user agent named id with the echo model (which the Kit's
// model answers for, whatever it is).
func Agent(id string) *agent.Definition {
	return &agent.Definition{ID: id, Name: id, Type: agent.TypeUser, Model: agent.Model{Provider: agent.ProviderEcho, Name: "echo"}}
}

// models resolves every model to one provider.
type models struct{ p model.Provider }

func (m models) Provider(agent.Model) (model.Provider, error) { return m.p, nil }
