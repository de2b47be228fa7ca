package app

import (
	"errors"
	"os"
	"path/filepath"

	"agentd/internal/agent"
)

// LockFile is the data directory's lock: the agentd that holds it owns the
// directory.
const LockFile = "agentd.lock"

// ErrNoData means a directory holds no agentd data: Open with
// Options.Existing refuses it rather than make a data directory there.
var ErrNoData = errors.New("no agentd data")

// HasData reports whether dir holds agentd data: its database, its
// configuration or its agents directory.
func HasData(dir string) bool {
	for _, name := range []string{DBFile, agent.ConfigFile, agent.AgentsDir} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}
