package agentsys

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"agentd/internal/agent"
	"agentd/internal/store"
)

// System is the agent system. Its methods are safe for concurrent use.
//
// Lock order (docs/architecture.md): System.mu (the instance cache, the
// turns that started sub-agents), Ledger.mu and supervisor.mu are leaf
// locks: nothing is called while one is held. The runtime calls Ended with
// no lock of its own held; Ended takes System.mu, then Ledger.mu, each
// alone, and never blocks.
type System struct {
	st     Store
	rt     Runtime
	o      Options
	cfg    agent.AgentsConfig
	log    *slog.Logger
	ids    *ids
	ledger *Ledger

	mu      sync.Mutex
	cache   *lru                 // instance id → its row and derived definition
	missing map[string]time.Time // ids known not to be instances, until then
	turns   map[int64]int        // turns (inbox item ids) that started sub-agents here → how many

	sup *supervisor
}

// Sizes of the System's caches.
const (
	cacheSize   = 4096
	missingSize = 4096
	// missingFor is how long an id is answered "not an instance" without
	// a store read; an instance made on another node is seen after it.
	missingFor = 5 * time.Second
	// lookupWait bounds a store read made for the registry's Get (which
	// has no ctx).
	lookupWait = 5 * time.Second
)

// New returns the System over st and rt; Run starts its supervisor.
func New(st Store, rt Runtime, o *Options) *System {
	s := &System{st: st, rt: rt, cache: newLRU(cacheSize), missing: make(map[string]time.Time), turns: make(map[int64]int)}
	if o != nil {
		s.o = *o
	}
	if s.o.Now == nil {
		s.o.Now = time.Now
	}
	if s.log = s.o.Logger; s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.o.Sweep <= 0 {
		s.o.Sweep = 30 * time.Second
	}
	s.cfg = config(s.o.Config)
	s.ids = newIDs(s.o.Now)
	s.ledger = newLedger(st, s.row, s.o.Now, s.o.Shared)
	s.ledger.dayLimit = func(payer string) float64 {
		if d, ok := s.definition(payer); ok {
			return d.Budgets.MaxUSDPerDay
		}
		return 0
	}
	s.sup = newSupervisor(s)
	return s
}

// config returns c with its zero fields at their defaults.
func config(c agent.AgentsConfig) agent.AgentsConfig {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.MaxHops, agent.DefaultMaxHops)
	def(&c.MaxDepth, agent.DefaultMaxDepth)
	def(&c.MaxChildren, agent.DefaultMaxChildren)
	def(&c.MaxLive, agent.DefaultMaxLive)
	def(&c.ReportBytes, agent.DefaultReportBytes)
	if c.MaxContacts == nil || *c.MaxContacts < 0 {
		n := agent.DefaultMaxContacts
		c.MaxContacts = &n
	}
	if c.AskTimeout <= 0 {
		c.AskTimeout = agent.Duration(agent.DefaultAskTimeout)
	}
	return c
}

// Ledger returns the accounts the runtime asks for a turn's budget
// lineage (runtime.Accounts).
func (s *System) Ledger() *Ledger { return s.ledger }

// definition returns the definition of an agent id: a file's or row's, or
// an instance's derived one.
func (s *System) definition(id string) (*agent.Definition, bool) {
	if s.o.Agents == nil {
		return nil, false
	}
	return s.o.Agents.Get(id)
}

// Definition is the agent registry's hook: the derived definition of an
// instance id (not of a permanent agent, which has a definition of its
// own). An id that is not an instance's is answered without a store read
// for a while.
func (s *System) Definition(id string) (*agent.Definition, bool) {
	if !store.IsInstanceID(id) {
		return nil, false
	}
	now := s.o.Now()
	s.mu.Lock()
	e, hit := s.cache.get(id)
	until, miss := s.missing[id]
	s.mu.Unlock()
	if !hit {
		if miss && now.Before(until) {
			return nil, false
		}
		ctx, cancel := context.WithTimeout(context.Background(), lookupWait)
		in, err := s.st.Instance(ctx, id)
		cancel()
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				s.forget(id, now)
			}
			return nil, false
		}
		e = s.remember(in)
	}
	return s.derived(e)
}

// derived returns e's derived definition, made again when its template's
// definition has changed (the registry swaps pointers on a change).
func (s *System) derived(e *entry) (*agent.Definition, bool) {
	if !behaviours[e.in.Type].instanced || store.IsInstanceID(e.in.Template) {
		return nil, false
	}
	tpl, ok := s.definition(e.in.Template)
	if !ok {
		return nil, false
	}
	s.mu.Lock()
	def, fresh := e.def, e.tpl == tpl
	s.mu.Unlock()
	if fresh {
		return def, true
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupWait)
	scope, err := s.treeScope(ctx, e.in)
	cancel()
	if err != nil {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.tpl != tpl {
		e.tpl, e.def = tpl, derive(tpl, e.in, scope)
	}
	return e.def, true
}

// remember caches an instance's row (its identity: what does not change)
// and forgets that its id was missing.
func (s *System) remember(in store.Instance) *entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.missing, in.ID)
	if e, ok := s.cache.get(in.ID); ok {
		return e
	}
	e := &entry{in: in}
	s.cache.put(in.ID, e)
	return e
}

// forget notes that id is no instance, for missingFor.
func (s *System) forget(id string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.missing) >= missingSize {
		for k, t := range s.missing {
			if now.After(t) || len(s.missing) >= missingSize {
				delete(s.missing, k)
			}
		}
	}
	s.missing[id] = now.Add(missingFor)
}

// instance returns the instance of an id: an instance id or a permanent
// agent's name (store.ErrNotFound wrapped in ErrNotFound if none).
func (s *System) instance(ctx context.Context, id string) (store.Instance, error) {
	var in store.Instance
	var err error
	if store.IsInstanceID(id) {
		in, err = s.st.Instance(ctx, id)
	} else {
		in, err = s.st.InstanceByAgent(ctx, id)
	}
	if errors.Is(err, store.ErrNotFound) {
		return in, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err == nil {
		s.remember(in)
	}
	return in, err
}

// mainSession is the address of an agent's main session.
func mainSession(agentID string) string { return agentID + "/" + mainKey }

// mainKey is the key of an instance's main session.
const mainKey = "main"

// row returns an instance's row as it was created (the cache's: its
// identity, lineage and accounts are right, its state may be old).
func (s *System) row(ctx context.Context, id string) (store.Instance, error) {
	s.mu.Lock()
	e, ok := s.cache.get(id)
	s.mu.Unlock()
	if ok {
		return e.in, nil
	}
	in, err := s.st.Instance(ctx, id)
	if err != nil {
		return in, err
	}
	return s.remember(in).in, nil
}

// cutAddress splits a session address "<agent>/<key>".
func cutAddress(addr string) (agentID, key string, ok bool) {
	return strings.Cut(addr, "/")
}
