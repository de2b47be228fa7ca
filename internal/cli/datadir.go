package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"agentd/internal/agent"
	"agentd/internal/app"
)

// makesData marks the commands that may make a data directory where there
// is none: those that start agentd's work (serve and init make one without
// it). Every other command refuses a directory with no agentd data, so
// that a mistyped --data or the wrong working directory is said at once
// instead of showing an empty agentd.
const makesData = "agentd:makes-data"

// watchesFiles marks the commands that run turns in process for a while
// (chat): like the daemon, they follow changes to agent and skill files.
// Every other command run in process reads them once (app.Options.ReadOnce).
const watchesFiles = "agentd:watches-files"

// mayMakeData marks cmd as one that may make a data directory.
func mayMakeData(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[makesData] = "yes"
	return cmd
}

// dataSource says where the data directory's name comes from.
func (e *env) dataSource() string {
	switch {
	case e.dataFlag != "":
		return "--data"
	case os.Getenv("AGENTD_HOME") != "":
		return "$AGENTD_HOME"
	}
	wd, _ := os.Getwd()
	return "the default: " + agent.DefaultDataDir + " in the working directory " + wd
}

// absDataDir is the data directory as an absolute path, for messages.
func (e *env) absDataDir() string {
	dir := e.dataDir()
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// noData is the error for a directory with no agentd data: which one,
// where its name comes from, and how to make one there.
func (e *env) noData() error {
	dir := e.absDataDir()
	what := "has no agentd data (no " + app.DBFile + ", " + agent.ConfigFile + " or " + agent.AgentsDir + "/)"
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		what = "does not exist"
	}
	return withCode(ExitNotFound, fmt.Errorf("%s %s (the data directory, named by %s): "+
		"if agentd keeps its data elsewhere, name that directory with --data or $AGENTD_HOME; "+
		"to make a data directory at %s, run `agentd init --data %s` or `agentd serve --data %s`",
		dir, what, e.dataSource(), dir, dir, dir))
}

// needData refuses, with noData, a data directory without agentd data.
func (e *env) needData() error {
	if !app.HasData(e.dataDir()) {
		return e.noData()
	}
	return nil
}
