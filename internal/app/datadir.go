package app

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
)

// ErrDataDirOpen means the data directory, or something in it, is open to
// other users and could not be made private.
var ErrDataDirOpen = errors.New("data directory open to other users")

// privateDataDir creates dir (mode 0700) if needed and makes it and
// everything in it private to its owner: it removes the group and other
// bits of the directory, of its subdirectories and of its files (0755
// becomes 0700, 0644 becomes 0600), without following symbolic links.
// The data directory holds every conversation, the agents' keys and the
// API token; an older agentd left it 0755 with 0644 files. A change is
// said in one line on log; a mode that cannot be changed is an error.
func privateDataDir(dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("app: data directory: %w", err)
	}
	var dirWas fs.FileMode
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil // chmod would follow it out of the directory
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		perm := fi.Mode().Perm()
		if perm&0o077 == 0 {
			return nil
		}
		if err := os.Chmod(path, perm&^0o077); err != nil {
			return fmt.Errorf("%w: %s is mode %04o and cannot be made private (%v); run chmod go-rwx on it as its owner",
				ErrDataDirOpen, path, perm, err)
		}
		if path == dir {
			dirWas = perm
		} else {
			files++
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrDataDirOpen) {
			return fmt.Errorf("app: %w", err)
		}
		return fmt.Errorf("app: data directory: %w", err)
	}
	switch {
	case dirWas != 0:
		log.Warn(fmt.Sprintf("data directory %s was mode %04o, readable by other users: made it 0700, and %d entries in it owner-only", dir, dirWas, files))
	case files > 0:
		log.Warn(fmt.Sprintf("data directory %s: made %d entries owner-only (group and others could read them)", dir, files))
	}
	return nil
}
