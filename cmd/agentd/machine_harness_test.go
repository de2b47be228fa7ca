package main

// The harness of the tests of the tools that act on a machine
// (machine_*_test.go): an agent offered them, a fakellm script that makes
// one call per trigger, the sandbox's presence, and scans outside agentd
// for a command's processes and a secret's leaks.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/sandbox"
)

// machineProbe is what the sandbox finds on this machine, looked at once.
var machineProbe = sync.OnceValue(func() sandbox.Report { return sandbox.New(nil).Probe() })

// needBwrap skips a test where bubblewrap is not installed, fails it
// where AGENTD_REQUIRE_BWRAP=1 (CI: the escape tests must run there), and
// fails it where bubblewrap is installed but cannot make a sandbox.
func needBwrap(t *testing.T) {
	t.Helper()
	r := machineProbe()
	if r.Bwrap == "" {
		if os.Getenv("AGENTD_REQUIRE_BWRAP") == "1" {
			t.Fatal("bubblewrap is not installed and AGENTD_REQUIRE_BWRAP=1: install it (apt install bubblewrap)")
		}
		t.Skip("bubblewrap is not installed here (apt install bubblewrap); CI runs this test")
	}
	if !r.Runs {
		t.Fatalf("bubblewrap is installed but cannot run: %s", r.Problem)
	}
}

// sandboxModes are the sandboxes a test of commands runs in: bwrap
// (skipped or failed by needBwrap) and none.
func sandboxModes(t *testing.T, f func(t *testing.T, mode string)) {
	t.Helper()
	for _, mode := range []string{agent.SandboxBwrap, agent.SandboxNone} {
		t.Run(mode, func(t *testing.T) {
			if mode == agent.SandboxBwrap {
				needBwrap(t)
			}
			f(t, mode)
		})
	}
}

// scripted is one tool call a trigger makes the model do.
type scripted struct {
	trigger string // the whole user text that makes it
	tool    string
	args    any // marshalled to the call's JSON arguments
}

// callScript is a fakellm script in which each call's trigger makes the
// model call its tool once, then say "done: " and the tool's result.
func callScript(t *testing.T, calls ...scripted) string {
	t.Helper()
	var b strings.Builder
	for _, c := range calls {
		args, err := json.Marshal(c.args)
		if err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(string(args), "\n") {
			t.Fatalf("call %s: arguments on more than one line", c.trigger)
		}
		fmt.Fprintf(&b, "match ^%s$\ncall %s %s\n---\nsay done: {{tool_result}}\n\n", c.trigger, c.tool, args)
	}
	return b.String()
}

// machineAgent is an agent file on the model at addr offered the tools
// builtin, allowed to run allow without asking, with extra YAML.
func machineAgent(addr string, builtin, allow []string, extra string) string {
	s := "tools:\n  builtin: [" + strings.Join(builtin, ", ") + "]\n"
	if len(allow) > 0 {
		s += "  allow: [" + strings.Join(allow, ", ") + "]\n"
	}
	return openaiAgent(addr, s+extra)
}

// oneResult sends trigger to session (agent/key) and returns the result
// of the one call of tool the turn made.
func oneResult(t *testing.T, dir, session, trigger, tool string) event.ToolResultData {
	t.Helper()
	agentID, key, _ := strings.Cut(session, "/")
	evs, end := sendTurn(t, dir, agentID, trigger, "--session", key)
	rs := toolResultsOf(evs, tool)
	if len(rs) != 1 {
		t.Fatalf("%s: %d results of %s, want 1 (end %+v)", trigger, len(rs), tool, end)
	}
	return rs[0]
}

// okResult is oneResult that fails the test when the result is an error.
func okResult(t *testing.T, dir, session, trigger, tool string) string {
	t.Helper()
	r := oneResult(t, dir, session, trigger, tool)
	if r.IsError {
		t.Fatalf("%s: %s failed: %s", trigger, tool, r.Output)
	}
	return r.Output
}

// errResult is oneResult that fails the test unless the result is an
// error, and returns its text.
func errResult(t *testing.T, dir, session, trigger, tool string) string {
	t.Helper()
	r := oneResult(t, dir, session, trigger, tool)
	if !r.IsError {
		t.Fatalf("%s: %s succeeded, want an error: %s", trigger, tool, r.Output)
	}
	return r.Output
}

// treeDigest lists every file under dir (but skip, a folder path, and
// the store, which agentd writes) with its content, so a test can check
// nothing there changed.
func treeDigest(t *testing.T, dir string, skip ...string) string {
	t.Helper()
	var lines []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		for _, s := range skip {
			if p == s {
				return filepath.SkipDir
			}
		}
		if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), "agentd.db") {
			b, _ := os.ReadFile(p)
			lines = append(lines, fmt.Sprintf("%s %d %x", p, len(b), b[:min(len(b), 64)]))
		}
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// processesWith lists the pids of processes whose command line holds
// mark (zombies have none).
func processesWith(mark string) []string {
	var pids []string
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), mark) {
			pids = append(pids, filepath.Base(filepath.Dir(f)))
		}
	}
	return pids
}
