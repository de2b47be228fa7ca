package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
)

// WriteFile replaces rel with data atomically, creating its parent
// directories (0700). A new file is 0600; an existing one keeps its mode.
// An existing target that is not a regular file with one link is refused.
// A crash leaves the old content or the new, and at worst a temporary
// ".name.*.tmp" file beside it.
func (w *Workspace) WriteFile(rel string, data []byte) error {
	c, err := Clean(rel)
	if err != nil {
		return err
	}
	if c == "." {
		return fmt.Errorf("%s: is the workspace itself", rel)
	}
	mode := fs.FileMode(0o600)
	switch fi, err := w.root.Stat(c); {
	case err == nil:
		if err := checkRegular(rel, fi); err != nil {
			return err
		}
		mode = fi.Mode().Perm()
	case errors.Is(err, fs.ErrNotExist):
		if dir := path.Dir(c); dir != "." {
			if err := w.root.MkdirAll(dir, 0o700); err != nil {
				return wrap(rel, err)
			}
		}
	default:
		return wrap(rel, err)
	}
	return wrap(rel, w.replace(c, data, mode))
}

// replace writes data to a temporary file in c's directory and renames it
// over c, both inside the root.
func (w *Workspace) replace(c string, data []byte, mode fs.FileMode) (err error) {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(path.Dir(c), "."+path.Base(c)+"."+hex.EncodeToString(rnd[:])+".tmp")
	f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			_ = w.root.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = w.root.Rename(tmp, c); err != nil {
		return err
	}
	if d, derr := w.root.Open(path.Dir(c)); derr == nil {
		_ = d.Sync() // make the rename durable where the platform allows it
		d.Close()
	}
	return nil
}

// Remove removes the file rel: a regular file with one link, or a symlink
// (the link itself, never what it points to).
func (w *Workspace) Remove(rel string) error {
	c, err := Clean(rel)
	if err != nil {
		return err
	}
	fi, err := w.root.Lstat(c)
	if err != nil {
		return wrap(rel, err)
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		if err := checkRegular(rel, fi); err != nil {
			return err
		}
	}
	return wrap(rel, w.root.Remove(c))
}
