package connector

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Resumer is an ability of the Handler given to Run, found by type
// assertion: it keeps a platform's resume point durable, an opaque
// document the platform writes after each message it handed in (Discord:
// its gateway session id, resume URL and last sequence handled) and reads
// on start, so a restarted agentd resumes where it stopped and the
// platform replays what it missed. nil: none saved.
type Resumer interface {
	ResumePoint(ctx context.Context) ([]byte, error)
	SaveResumePoint(ctx context.Context, point []byte) error
}

// resumeFile is where instance name keeps its resume point: a file (0600)
// under Options.StateDir; "" when no StateDir is set.
func (in *instance) resumeFile() string {
	if in.m.o.StateDir == "" {
		return ""
	}
	return filepath.Join(in.m.o.StateDir, "connectors", in.name+".resume")
}

// ResumePoint reads the saved point, nil when there is none.
func (in *instance) ResumePoint(context.Context) ([]byte, error) {
	name := in.resumeFile()
	if name == "" {
		return nil, nil
	}
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("connector: %s: resume point: %w", in.name, err)
	}
	return b, nil
}

// SaveResumePoint replaces the saved point. A crash leaves the old file or
// the new one, never a part: at worst the point is one message behind,
// and the platform replays a message whose key dedups it.
func (in *instance) SaveResumePoint(_ context.Context, point []byte) error {
	name := in.resumeFile()
	if name == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o700); err != nil {
		return fmt.Errorf("connector: %s: resume point: %w", in.name, err)
	}
	if err := writeFileAtomic(name, point); err != nil {
		return fmt.Errorf("connector: %s: resume point: %w", in.name, err)
	}
	return nil
}

// writeFileAtomic replaces name with data (mode 0600), synced.
func writeFileAtomic(name string, data []byte) (err error) {
	dir, base := filepath.Split(name)
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), name); err != nil {
		return err
	}
	if d, derr := os.Open(filepath.Clean(dir)); derr == nil {
		_ = d.Sync() // make the rename durable where the platform allows it
		d.Close()
	}
	return nil
}

var _ Resumer = (*instance)(nil)
