package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"agentd/internal/atomicfile"
)

// DefaultDebounce is how long Run waits for a burst of file events to end
// before it reloads.
const DefaultDebounce = 100 * time.Millisecond

// missingDirPoll is how often Run looks for agents/ after it was removed.
const missingDirPoll = time.Second

// RegistryOptions configures a Registry. A nil *RegistryOptions is valid.
type RegistryOptions struct {
	// Logger receives reload messages (default: discard).
	Logger *slog.Logger
	// OnChange, if set, is called with an agent's id after its definition
	// or its entry in Errors changed (including an agent added or
	// removed), once the change is visible through Get. It is called
	// from the goroutine that reloaded and should return quickly.
	OnChange func(id string)
	// Debounce is how long Run waits for file events to settle before
	// reloading (default DefaultDebounce).
	Debounce time.Duration
}

// Registry holds the current agent definitions of a data directory and
// keeps them in step with the files under agents/.
//
// Reads (Get, List, Errors) take no lock. A definition returned by Get is
// shared and immutable: callers must not modify it (Clone it to make a
// changed copy). A reload swaps in new pointers; a definition whose file
// did not change keeps its pointer.
type Registry struct {
	dataDir  string
	cfg      *Config
	log      *slog.Logger
	onChange func(id string)
	debounce time.Duration

	mu    sync.Mutex // serializes reloads and writes; guards files and rows
	files loaded     // what agents/ held at the last reload
	rows  map[string]*Definition
	caps  map[string]*Capability
	deny  map[string][]string // tools denied to every agent, by source
	// hidden are agents of files whose rows are disabled.
	hidden map[string]bool
	hooks  hooks // asked when an agent writes an agent row (guarded by mu)
	snap   atomic.Pointer[snapshot]
	// inst answers Get for dynamic agents (SetInstances); nil: none.
	inst atomic.Pointer[instances]
}

// snapshot is the registry's state between two reloads.
type snapshot struct {
	defs map[string]*Definition
	list []*Definition // sorted by id
	errs map[string]error
}

// NewRegistry loads the agents of dataDir; cfg supplies the default model
// (nil means DefaultConfig). Files that fail to load are listed by Errors
// (and FileError) but not logged: the caller reports them where they
// matter, once (agentd serve's banner, agentd agents, a message to the
// agent); later reloads log what changed. NewRegistry itself fails only if
// agents/ cannot be read.
func NewRegistry(dataDir string, cfg *Config, opts *RegistryOptions) (*Registry, error) {
	if opts == nil {
		opts = &RegistryOptions{}
	}
	if cfg == nil {
		cfg = DefaultConfig()
	}
	r := &Registry{
		dataDir:  dataDir,
		cfg:      cfg,
		log:      opts.Logger,
		onChange: opts.OnChange,
		debounce: opts.Debounce,
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.debounce <= 0 {
		r.debounce = DefaultDebounce
	}
	r.snap.Store(&snapshot{defs: map[string]*Definition{}, errs: map[string]error{}})
	if _, err := r.load(false); err != nil {
		return nil, err
	}
	return r, nil
}

// Get returns the current definition of agent id. It must not be modified.
func (r *Registry) Get(id string) (*Definition, bool) {
	if d, ok := r.snap.Load().defs[id]; ok {
		return d, true
	}
	return r.instance(id)
}

// List returns the current definitions sorted by id. They must not be modified.
func (r *Registry) List() []*Definition {
	return slices.Clone(r.snap.Load().list)
}

// Errors returns the agent files that currently fail to load, by agent id
// (the file name without its extension), with the reason. An agent whose
// file broke after it loaded keeps its last good definition meanwhile.
func (r *Registry) Errors() map[string]error {
	return maps.Clone(r.snap.Load().errs)
}

// FileError returns why agent id's file does not load (a *ConfigError
// for a file with problems), or nil. An agent whose file broke after it
// loaded has both a definition (Get) and a FileError.
func (r *Registry) FileError(id string) error {
	return r.snap.Load().errs[id]
}

// Reload reloads agents/ now. It returns the problems of every file that
// failed (also listed by Errors); the agents that loaded apply either way.
func (r *Registry) Reload() error {
	changed, err := r.reload()
	r.notify(changed)
	if err != nil {
		return err
	}
	s := r.snap.Load()
	ids := slices.Sorted(maps.Keys(s.errs))
	errs := make([]error, len(ids))
	for i, id := range ids {
		errs[i] = s.errs[id]
	}
	return errors.Join(errs...)
}

// reload loads the files and swaps in the new state, logging what
// changed; it returns the ids that changed.
func (r *Registry) reload() ([]string, error) { return r.load(true) }

// load loads the files and swaps in the new state; it returns the ids that
// changed, and logs the changes if logChanges.
func (r *Registry) load(logChanges bool) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, err := loadAgents(r.dataDir, r.cfg)
	if err != nil {
		r.log.Warn("cannot read agents; keeping the current definitions", "error", err)
		return nil, err
	}
	r.files = res
	return r.publish(logChanges), nil
}

// publish swaps in the state of the files overlaid with the rows, and
// returns the ids that changed. r.mu is held.
func (r *Registry) publish(logChanges bool) []string {
	res := loaded{defs: maps.Clone(r.files.defs), errs: maps.Clone(r.files.errs)}
	for id := range r.hidden {
		delete(res.defs, id)
	}
	for id, def := range r.rows {
		res.defs[id] = def
		delete(res.errs, id)
	}
	for id, def := range res.defs {
		d, missing := withCapabilities(def, r.caps)
		if len(missing) > 0 && logChanges {
			r.log.Warn("agent includes capabilities that do not exist", "agent", id, "capabilities", missing)
		}
		res.defs[id] = withDeny(d, r.deny)
	}
	old := r.snap.Load()
	next := &snapshot{defs: make(map[string]*Definition, len(res.defs)), errs: res.errs}
	for id, def := range res.defs {
		if prev, ok := old.defs[id]; ok && reflect.DeepEqual(prev, def) {
			def = prev
		}
		next.defs[id] = def
	}
	for id := range res.errs {
		if prev, ok := old.defs[id]; ok {
			next.defs[id] = prev // keep the last good definition
		}
	}
	next.list = make([]*Definition, 0, len(next.defs))
	for _, def := range next.defs {
		next.list = append(next.list, def)
	}
	sort.Slice(next.list, func(i, j int) bool { return next.list[i].ID < next.list[j].ID })
	r.snap.Store(next)

	ids := map[string]bool{}
	for _, m := range []map[string]*Definition{old.defs, next.defs} {
		for id := range m {
			ids[id] = true
		}
	}
	for _, m := range []map[string]error{old.errs, next.errs} {
		for id := range m {
			ids[id] = true
		}
	}
	var changed []string
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		prev, cur := old.defs[id], next.defs[id]
		prevErr, curErr := errText(old.errs[id]), errText(next.errs[id])
		if prev == cur && prevErr == curErr {
			continue
		}
		changed = append(changed, id)
		if !logChanges {
			continue
		}
		switch {
		case curErr != "" && curErr != prevErr:
			r.logInvalid(id, next.errs[id], cur != nil)
		case cur == nil:
			r.log.Info("agent removed", "agent", id)
		case prev == nil:
			r.log.Info("agent loaded", "agent", id, "file", cur.File)
		case prev != cur:
			r.log.Info("agent updated", "agent", id, "file", cur.File)
		default:
			r.log.Info("agent file valid again", "agent", id, "file", cur.File)
		}
	}
	return changed
}

func (r *Registry) logInvalid(id string, err error, kept bool) {
	msg := "agent file invalid; agent not loaded"
	if kept {
		msg = "agent file invalid; keeping the last good definition"
	}
	var ce *ConfigError
	if !errors.As(err, &ce) {
		r.log.Warn(msg, "agent", id, "error", err)
		return
	}
	for _, fe := range ce.Errors {
		r.log.Warn(msg, "agent", id, "file", fe.File, "line", fe.Line, "field", fe.Field, "error", fe.Msg)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (r *Registry) notify(ids []string) {
	if r.onChange == nil {
		return
	}
	for _, id := range ids {
		r.onChange(id)
	}
}

// Run watches agents/ (creating it if needed) and reloads when agent files
// or agents/<id>/system.md files are written, renamed, added or removed,
// once a burst of events has settled. It returns nil when ctx is done, or
// an error if the files cannot be watched.
func (r *Registry) Run(ctx context.Context) error {
	dir := filepath.Join(r.dataDir, AgentsDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("agent: watch: %w", err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("agent: watch: %w", err)
	}
	defer w.Close()
	settle := time.NewTimer(0) // start by watching and catching up with edits made before Run
	var poll <-chan time.Time  // set while agents/ cannot be watched
	var watchErr string
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("agent: watch: watcher closed")
			}
			if ev.Name == dir && ev.Has(fsnotify.Remove|fsnotify.Rename) {
				r.unwatch(w, dir)
			}
			if relevant(dir, ev.Name) {
				settle.Reset(r.debounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("agent: watch: watcher closed")
			}
			r.log.Warn("agent file watcher", "error", err)
			settle.Reset(r.debounce) // events may have been lost
		case <-settle.C:
			if err := r.watch(w, dir); err != nil {
				if err.Error() != watchErr {
					r.log.Warn("cannot watch agents directory; retrying", "dir", dir, "error", err)
				}
				watchErr = err.Error()
				poll = time.After(missingDirPoll)
			} else {
				watchErr = ""
			}
			_ = r.Reload() // failures are logged and listed by Errors
		case <-poll:
			poll = nil
			settle.Reset(0)
		}
	}
}

// watch adds dir and its subdirectories to w.
func (r *Registry) watch(w *fsnotify.Watcher, dir string) error {
	watched := map[string]bool{}
	for _, p := range w.WatchList() {
		watched[p] = true
	}
	if !watched[dir] {
		if err := w.Add(dir); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !watched[p] {
			if err := w.Add(p); err != nil {
				r.log.Warn("cannot watch agent directory", "dir", p, "error", err)
			}
		}
	}
	return nil
}

// unwatch drops the watches on dir and below, after dir went away.
func (r *Registry) unwatch(w *fsnotify.Watcher, dir string) {
	for _, p := range w.WatchList() {
		if p == dir || strings.HasPrefix(p, dir+string(filepath.Separator)) {
			_ = w.Remove(p)
		}
	}
}

// relevant reports whether a change to name (a path under dir, the agents
// directory) can change an agent: an agent file, a subdirectory, a
// system.md file, or dir itself.
func relevant(dir, name string) bool {
	if name == dir {
		return true
	}
	rel, err := filepath.Rel(dir, name)
	if err != nil || strings.HasPrefix(rel, "..") {
		return false
	}
	parent, base := filepath.Split(rel)
	if parent == "" {
		if strings.HasPrefix(base, ".") {
			return false
		}
		return strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".yml") || !strings.Contains(base, ".")
	}
	return base == SystemFile && !strings.ContainsRune(strings.TrimSuffix(parent, string(filepath.Separator)), filepath.Separator)
}

// Put validates def and writes it to agents/<id>.yaml (atomically,
// replacing any file there and its comments), then reloads. Fields left
// zero are left out of the file and take their defaults. If
// agents/<id>/system.md exists, the system prompt is written there
// instead. A definition with problems gives a *ConfigError and writes
// nothing.
func (r *Registry) Put(def *Definition) error {
	if def == nil {
		return errors.New("agent: put: nil definition")
	}
	id := def.ID
	if !ValidID(id) {
		return fmt.Errorf("agent: put %q: %w", id, ErrInvalidID)
	}
	if err := r.write(def.Clone()); err != nil {
		return err
	}
	changed, err := r.reload()
	r.notify(changed)
	if err != nil {
		return err
	}
	return r.snap.Load().errs[id]
}

func (r *Registry) write(d *Definition) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := d.ID
	rel := path.Join(AgentsDir, id+".yaml")
	d.File = ""
	sys, err := readSystemPrompt(r.dataDir, id)
	if err != nil {
		return err
	}
	var prompt *systemPrompt
	if sys != nil {
		prompt = &systemPrompt{rel: sys.rel, text: d.SystemPrompt}
		d.SystemPrompt = ""
	}
	data, err := encodeDefinition(d)
	if err != nil {
		return err
	}
	if _, err := parseDefinition(rel, data, id, r.cfg, prompt); err != nil {
		return err
	}
	dir := filepath.Join(r.dataDir, AgentsDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("agent: put %q: %w", id, err)
	}
	if prompt != nil && prompt.text != sys.text {
		if err := atomicfile.Write(filepath.Join(dir, id, SystemFile), []byte(prompt.text), 0o600); err != nil {
			return fmt.Errorf("agent: put %q: %w", id, err)
		}
	}
	if err := atomicfile.Write(filepath.Join(dir, id+".yaml"), data, 0o600); err != nil {
		return fmt.Errorf("agent: put %q: %w", id, err)
	}
	return nil
}
