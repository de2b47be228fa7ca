package connector

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"agentd/internal/atomicfile"
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
	if err := atomicfile.Write(name, point, 0o600); err != nil {
		return fmt.Errorf("connector: %s: resume point: %w", in.name, err)
	}
	return nil
}

var _ Resumer = (*instance)(nil)
