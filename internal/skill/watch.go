package skill

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

const (
	// debounce is how long Watch waits for a burst of changes to settle.
	debounce = 100 * time.Millisecond
	// missingPoll is how often Watch looks for directories that do not
	// exist yet.
	missingPoll = 2 * time.Second
)

// Watch loads the skills of dirs (as Load does), passes the Set to onLoad,
// and does so again whenever a skill folder or a SKILL.md file in dirs is
// added, changed, renamed or removed, once a burst of changes has settled
// (about 100 ms). A reload that fails is logged and the last Set stays in
// force. Directories that do not exist yet are looked for every 2 seconds.
//
// Watch blocks until ctx is done, then returns nil; it returns an error if
// it cannot watch files at all. onLoad is called on Watch's goroutine.
func Watch(ctx context.Context, dirs []string, o *Options, onLoad func(*Set)) error {
	opts := o.withDefaults()
	var abs []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		a, err := filepath.Abs(d)
		if err != nil {
			return fmt.Errorf("skill: watch %s: %w", d, err)
		}
		if !slices.Contains(abs, a) {
			abs = append(abs, a)
		}
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("skill: watch: %w", err)
	}
	defer w.Close()

	settle := time.NewTimer(0) // the first load
	defer settle.Stop()
	var poll <-chan time.Time // set while some directories are missing
	var missing []string
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("skill: watch: watcher closed")
			}
			if relevant(abs, ev.Name) {
				settle.Reset(debounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("skill: watch: watcher closed")
			}
			opts.Logger.Warn("skill watcher", "error", err)
			settle.Reset(debounce) // events may have been lost
		case <-settle.C:
			missing = addWatches(w, abs, &opts)
			poll = nil
			if len(missing) > 0 {
				poll = time.After(missingPoll)
			}
			set, err := Load(abs, &opts)
			if err != nil {
				opts.Logger.Warn("skills not reloaded; keeping the last ones", "error", err)
				continue
			}
			if onLoad != nil {
				onLoad(set)
			}
		case <-poll:
			poll = time.After(missingPoll)
			for _, d := range missing {
				if _, err := os.Stat(d); err == nil {
					settle.Reset(0)
					break
				}
			}
		}
	}
}

// addWatches watches each directory of dirs and its sub-folders, and
// returns the directories that cannot be watched (most often because they
// do not exist yet).
func addWatches(w *fsnotify.Watcher, dirs []string, o *Options) (missing []string) {
	watched := map[string]bool{}
	for _, p := range w.WatchList() {
		watched[p] = true
	}
	add := func(p string) error {
		if watched[p] {
			return nil
		}
		if err := w.Add(p); err != nil {
			return err
		}
		watched[p] = true
		return nil
	}
	for _, d := range dirs {
		if err := add(d); err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				o.Logger.Warn("cannot watch skill directory", "dir", d, "error", err)
			}
			missing = append(missing, d)
			continue
		}
		entries, err := os.ReadDir(d)
		if err != nil {
			o.Logger.Warn("cannot read skill directory", "dir", d, "error", err)
			continue
		}
		for _, e := range entries {
			p := filepath.Join(d, e.Name())
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
				continue
			}
			if err := add(p); err != nil {
				o.Logger.Warn("cannot watch skill folder", "dir", p, "error", err)
			}
		}
	}
	return missing
}

// relevant reports whether a change to name can change the skills in
// dirs: a change to one of dirs, to an entry of one (a skill folder), or
// to a SKILL.md file in a skill folder.
func relevant(dirs []string, name string) bool {
	for _, d := range dirs {
		rel, err := filepath.Rel(d, name)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		parts := strings.Split(rel, string(filepath.Separator))
		switch {
		case rel == ".":
			return true
		case strings.HasPrefix(parts[0], "."):
			continue
		case len(parts) == 1:
			return true
		case len(parts) == 2 && parts[1] == FileName:
			return true
		}
	}
	return false
}
