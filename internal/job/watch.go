package job

// The watch trigger: file-system changes under a directory (fsnotify),
// recursive (a directory made later is watched too, and the files found
// in it count as created), filtered by a glob on the path relative to
// the directory and by event kind, collected for a debounce from the
// first change and fired as one run whose payload is
// {"paths": [...], "events": [...]} (relative, sorted, deduplicated).
//
// Only the node leading "jobs" watches: the Scheduler starts a job's
// watchers when it schedules the job and stops them when the job
// changes or the lead is lost, so a cluster fires once. Changes made
// while no node watches (agentd down, the lead moving), and those still
// collecting when the watcher stops, are not fired.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"agentd/internal/store"
)

// Watch event kinds.
const (
	EventCreate = "create"
	EventWrite  = "write"
	EventRemove = "remove"
	EventRename = "rename"
)

// WatchEvents returns the watch event kinds, the default set of a watch.
func WatchEvents() []string { return []string{EventCreate, EventWrite, EventRemove, EventRename} }

// Watch limits.
const (
	// DefaultDebounce is a watch's debounce where its row sets none.
	DefaultDebounce = 2 * time.Second
	// DefaultMaxWatchDirs is how many directories one watch trigger
	// watches at most (SchedulerOptions.MaxWatchDirs): past it the
	// directories left are not watched, and a warning says so.
	DefaultMaxWatchDirs = 1000
	// MaxWatchPaths is how many paths a watch run's payload names;
	// "more" counts those left out.
	MaxWatchPaths = 1000
)

// Workspace is the directory under the data directory a watch may
// watch: the rest of the data directory is agentd's own, and its own
// writes there would fire the watch for ever.
const Workspace = "workspace"

// ErrWatchPath: a watch's path is not a directory it may watch.
var ErrWatchPath = errors.New("watch path")

// watchRoot returns the absolute directory a watch's path names, or
// why it may not be watched: it must be a directory, and not the data
// directory or in it, but in its Workspace.
func (r *Runner) watchRoot(p string) (string, error) {
	root, err := filepath.Abs(r.path(p))
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrWatchPath, err)
	}
	// The directory really watched is the one the links in the path lead
	// to: checked as written, workspace/up/agents with up a link to the
	// data directory would watch agentd's own files.
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("%w: %s: %v", ErrWatchPath, root, err)
	}
	root = real
	if r.dataOwned(root) {
		return "", fmt.Errorf("%w: %s is in agentd's data directory; watch a directory under %s instead",
			ErrWatchPath, root, filepath.Join(r.dataDir(), Workspace))
	}
	fi, err := os.Stat(root)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrWatchPath, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%w: %s is not a directory", ErrWatchPath, root)
	}
	return root, nil
}

// dataDir returns the absolute data directory, its links resolved (as a
// watched path's are), "" if there is none: resolved once, by New, as a
// watch's walk asks it of every directory.
func (r *Runner) dataDir() string { return r.dataAbs }

// resolveDir returns dir absolute, its links resolved where it exists;
// "" for "".
func resolveDir(dir string) string {
	if dir == "" {
		return ""
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(d); err == nil {
		return real
	}
	return d
}

// dataOwned reports whether the absolute path p is agentd's: the data
// directory or in it, but not in its Workspace.
func (r *Runner) dataOwned(p string) bool {
	d := r.dataDir()
	if d == "" || !within(d, p) {
		return false
	}
	return !within(filepath.Join(d, Workspace), p)
}

// within reports whether the path p is dir or in it.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// MatchGlob reports whether the slash-separated relative path name
// matches pattern: a pattern without "/" is matched against the name's
// last element (in any directory, as "*.md" is meant); one with "/"
// against the whole path, element by element (path.Match), where an
// element "**" matches any number of elements, none included. A
// malformed pattern matches nothing.
func MatchGlob(pattern, name string) bool {
	if pattern == "" {
		return true
	}
	if !strings.Contains(pattern, "/") {
		ok, _ := path.Match(pattern, path.Base(name))
		return ok
	}
	return matchElems(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func matchElems(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchElems(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// eventKind returns the kind of an fsnotify operation, "" for one a
// watch does not report (chmod).
func eventKind(op fsnotify.Op) string {
	switch {
	case op.Has(fsnotify.Create):
		return EventCreate
	case op.Has(fsnotify.Write):
		return EventWrite
	case op.Has(fsnotify.Remove):
		return EventRemove
	case op.Has(fsnotify.Rename):
		return EventRename
	}
	return ""
}

// changes collects a watch's changes until they fire.
type changes struct {
	paths, events map[string]bool
}

func newChanges() *changes { return &changes{paths: map[string]bool{}, events: map[string]bool{}} }

func (c *changes) add(rel, kind string) {
	c.paths[rel] = true
	c.events[kind] = true
}

func (c *changes) empty() bool { return len(c.paths) == 0 }

// WatchPayload is a watch run's payload.
type WatchPayload struct {
	Paths  []string `json:"paths"`
	Events []string `json:"events"`
	More   int      `json:"more,omitempty"` // paths past MaxWatchPaths, not named
}

// payload returns the changes as a run's payload, sorted.
func (c *changes) payload() []byte {
	p := WatchPayload{Paths: sortedKeys(c.paths), Events: sortedKeys(c.events)}
	if len(p.Paths) > MaxWatchPaths {
		p.More, p.Paths = len(p.Paths)-MaxWatchPaths, p.Paths[:MaxWatchPaths]
	}
	b, _ := json.Marshal(p)
	return b
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// watches are the watchers of the jobs scheduled, by job.
//
// Lock order: watches.mu only, not held while a watcher stops.
type watches struct {
	r   *Runner
	log *slog.Logger
	max int

	mu    sync.Mutex
	byJob map[string][]*watcher
}

func newWatches(r *Runner, log *slog.Logger, max int) *watches {
	if max <= 0 {
		max = DefaultMaxWatchDirs
	}
	return &watches{r: r, log: log, max: max, byJob: map[string][]*watcher{}}
}

// start starts a watcher for each watch trigger of the job (stopping
// those it had); one that cannot start is logged.
func (ws *watches) start(ctx context.Context, name string, spec *Spec) {
	ws.stop(name)
	var started []*watcher
	for _, t := range spec.Triggers {
		if t.Watch == nil {
			continue
		}
		w, err := ws.newWatcher(name, t.Watch)
		if err != nil {
			ws.log.Warn("job watch not started", "job", name, "path", t.Watch.Path, "err", err)
			continue
		}
		wctx, cancel := context.WithCancel(ctx)
		w.cancel = cancel
		go w.loop(wctx)
		started = append(started, w)
	}
	if len(started) == 0 {
		return
	}
	ws.mu.Lock()
	ws.byJob[name] = started
	ws.mu.Unlock()
}

// stop stops the job's watchers and waits for them.
func (ws *watches) stop(name string) {
	ws.mu.Lock()
	old := ws.byJob[name]
	delete(ws.byJob, name)
	ws.mu.Unlock()
	for _, w := range old {
		w.cancel()
		<-w.done
	}
}

// stopAll stops every watcher.
func (ws *watches) stopAll() {
	ws.mu.Lock()
	var names []string
	for n := range ws.byJob {
		names = append(names, n)
	}
	ws.mu.Unlock()
	for _, n := range names {
		ws.stop(n)
	}
}

// watcher is one watch trigger's: its fsnotify watcher and the goroutine
// reading it (loop), which fires the job.
type watcher struct {
	ws       *watches
	job      string
	root     string
	glob     string
	events   map[string]bool
	debounce time.Duration
	fsw      *fsnotify.Watcher
	full     bool // DefaultMaxWatchDirs reached (warned once)
	cancel   context.CancelFunc
	done     chan struct{}
}

func (ws *watches) newWatcher(name string, wt *Watch) (*watcher, error) {
	root, err := ws.r.watchRoot(wt.Path)
	if err != nil {
		return nil, err
	}
	w := &watcher{ws: ws, job: name, root: root, glob: wt.Glob, events: map[string]bool{}, debounce: DefaultDebounce,
		done: make(chan struct{})}
	if wt.Debounce != "" {
		if w.debounce, err = time.ParseDuration(wt.Debounce); err != nil {
			return nil, err // checked when saved
		}
	}
	kinds := wt.Events
	if len(kinds) == 0 {
		kinds = WatchEvents()
	}
	for _, k := range kinds {
		w.events[k] = true
	}
	if w.fsw, err = fsnotify.NewWatcher(); err != nil {
		return nil, err
	}
	w.addTree(root, nil)
	return w, nil
}

// addTree watches dir and the directories under it (not agentd's own,
// at most the watch's bound); the files found are added to c as created
// (a directory made after the watch started: what was written in it
// before it was watched), if c is not nil.
func (w *watcher) addTree(dir string, c *changes) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone, or not readable: what can be watched is
		}
		if !d.IsDir() {
			if c != nil {
				w.note(p, EventCreate, c)
			}
			return nil
		}
		if w.ws.r.dataOwned(p) {
			if within(p, filepath.Join(w.ws.r.dataDir(), Workspace)) {
				return nil // the data directory above the workspace: walked, not watched
			}
			return filepath.SkipDir
		}
		if len(w.fsw.WatchList()) >= w.ws.max {
			if !w.full {
				w.full = true
				w.ws.log.Warn("job watch: too many directories; the rest are not watched", "job", w.job, "path", w.root,
					"max", w.ws.max)
			}
			return filepath.SkipDir
		}
		if err := w.fsw.Add(p); err != nil {
			w.ws.log.Warn("job watch: directory not watched", "job", w.job, "dir", p, "err", err)
		}
		return nil
	})
}

// note adds the change kind of the file p to c if the watch reports it.
func (w *watcher) note(p, kind string, c *changes) {
	rel, err := filepath.Rel(w.root, p)
	if err != nil || !within(w.root, p) || rel == "." {
		return
	}
	rel = filepath.ToSlash(rel)
	if kind != "" && w.events[kind] && MatchGlob(w.glob, rel) {
		c.add(rel, kind)
	}
}

// loop reads the watcher's events until ctx ends, firing the job a
// debounce after the first change of each batch.
func (w *watcher) loop(ctx context.Context) {
	defer close(w.done)
	defer w.fsw.Close()
	c := newChanges()
	var timer *time.Timer
	var due <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
					w.addTree(ev.Name, c)
				}
			}
			w.note(ev.Name, eventKind(ev.Op), c)
			if !c.empty() && due == nil {
				timer = time.NewTimer(w.debounce)
				due = timer.C
			}
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			w.ws.log.Warn("job watch", "job", w.job, "path", w.root, "err", err)
		case <-due:
			due = nil
			w.fire(ctx, c.payload())
			c = newChanges()
		}
	}
}

// fire runs the job with a batch of changes.
func (w *watcher) fire(ctx context.Context, payload []byte) {
	res, err := w.ws.r.Run(ctx, w.job, Fire{Trigger: store.TriggerWatch, Body: payload}, false)
	switch {
	case err == nil:
		w.ws.log.Info("job watch fired", "job", w.job, "run", res.Run)
	case errors.Is(err, ErrRunning):
	default:
		if ctx.Err() == nil {
			w.ws.log.Warn("job watch fire failed", "job", w.job, "err", err)
		}
	}
}
