package main

// A data directory is made only by the commands that start agentd's work
// (serve, init, send, chat); every other command refuses a directory with
// no agentd data, says which one it looked at and how to make one, and
// leaves the file system as it was.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readOnly are commands that must never make a data directory.
var readOnly = [][]string{
	{"agents"},
	{"sessions"},
	{"log", "assistant/cli:x"},
	{"history", "search", "x"},
	{"memory", "list"},
	{"memory", "search", "assistant", "x"},
	{"approvals"},
	{"mcp", "list"},
	{"mcp", "tools", "x"},
	{"keys", "show"},
	{"skills", "list"},
	{"token"},
	{"cancel", "assistant/x"},
	{"reset", "assistant/x"},
	{"close", "assistant/x"},
}

func TestReadOnlyCommandsMakeNoDataDirectory(t *testing.T) {
	// A daemon runs on the real data directory; the user mistypes --data.
	real := filepath.Join(t.TempDir(), "agentd-data")
	serve(t, real)
	for name, typo := range map[string]string{
		"missing": filepath.Join(t.TempDir(), "agentd-dta"),
		"empty":   t.TempDir(),
	} {
		t.Run(name, func(t *testing.T) {
			for _, args := range readOnly {
				r := run(t, typo, args...)
				what := "agentd " + strings.Join(args, " ")
				if r.code != 3 || !strings.Contains(r.stderr, typo) || !strings.Contains(r.stderr, "agentd init") ||
					!strings.Contains(r.stderr, "agentd serve") {
					t.Errorf("%s on %s: %+v", what, name, r)
				}
				if name == "missing" {
					if _, err := os.Stat(typo); err == nil {
						t.Fatalf("%s made %s", what, typo)
					}
				} else if list, _ := os.ReadDir(typo); len(list) != 0 {
					t.Fatalf("%s wrote %d files in an empty directory", what, len(list))
				}
			}
		})
	}
	// The same through $AGENTD_HOME, which the message names.
	typo := filepath.Join(t.TempDir(), "nowhere")
	r := runEnvNoData(t, []string{"AGENTD_HOME=" + typo}, "sessions")
	if r.code != 3 || !strings.Contains(r.stderr, typo) || !strings.Contains(r.stderr, "AGENTD_HOME") {
		t.Errorf("sessions with AGENTD_HOME=%s: %+v", typo, r)
	}
	// The real directory answers.
	if r := run(t, real, "sessions"); r.code != 0 {
		t.Errorf("sessions on the real directory: %+v", r)
	}
}

// runEnvNoData runs agentd without --data.
func runEnvNoData(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cwd := t.TempDir()
	return runIn(t, cwd, env, args...)
}

// A hint that agentd is not running names the directory it looked at.
func TestNotRunningHintNamesTheDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	run(t, dir, "send", "assistant", "hello")
	r := run(t, dir, "approvals")
	if r.code != 0 || !strings.Contains(r.stdout, "agentd is not running on "+dir+" (no socket there)") {
		t.Errorf("approvals without a daemon: %+v", r)
	}
	r = run(t, dir, "approve", "nosuch")
	if r.code != 3 || !strings.Contains(r.stderr, "agentd is not running on "+dir) {
		t.Errorf("approve without a daemon: %+v", r)
	}
}

// send and chat still make a data directory on first use.
func TestSendMakesTheDataDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	if r := run(t, dir, "send", "assistant", "hi"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
	if r := run(t, dir, "sessions"); r.code != 0 || !strings.Contains(r.stdout, "assistant/cli:") {
		t.Fatalf("%+v", r)
	}
}
