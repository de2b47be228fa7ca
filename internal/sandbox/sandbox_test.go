package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.RunHelperIfAsked()
	os.Exit(m.Run())
}

// needBwrap skips a test where bubblewrap is not installed (CI installs it).
func needBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap is not installed here (apt install bubblewrap); CI runs this test")
	}
}

// result is what a command did.
type result struct {
	exit Exit
	out  string
}

type Exit = sandbox.Exit

// run runs argv in a fresh workspace (or sp's) with small limits.
func run(t *testing.T, sp *sandbox.Spec) result {
	t.Helper()
	if sp.Workspace == "" {
		sp.Workspace = t.TempDir()
	}
	if sp.Mode == "" {
		sp.Mode = agent.SandboxBwrap
	}
	if sp.Timeout == 0 {
		sp.Timeout = time.Minute
	}
	sp.Limits = sp.Limits.WithDefaults()
	var out bytes.Buffer
	sp.Stdout, sp.Stderr = &out, &out
	e, err := sandbox.New(nil).Run(context.Background(), sp)
	if err != nil {
		t.Fatalf("Run(%q): %v", sp.Argv, err)
	}
	return result{e, out.String()}
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

func TestRunModes(t *testing.T) {
	for _, mode := range []string{agent.SandboxNone, agent.SandboxBwrap} {
		t.Run(mode, func(t *testing.T) {
			if mode == agent.SandboxBwrap {
				needBwrap(t)
			}
			r := run(t, &sandbox.Spec{Mode: mode, Argv: sh(`echo out; echo err >&2; pwd; exit 3`)})
			if r.exit.Code != 3 || r.exit.Mode != mode || r.exit.Reason != "" {
				t.Errorf("exit = %+v, want code 3 in mode %s", r.exit, mode)
			}
			if !strings.Contains(r.out, "out\nerr\n") {
				t.Errorf("output = %q", r.out)
			}
		})
	}
}

func TestStdin(t *testing.T) {
	needBwrap(t)
	var out bytes.Buffer
	e, err := sandbox.New(nil).Run(context.Background(), &sandbox.Spec{
		Argv: []string{"cat"}, Workspace: t.TempDir(), Mode: agent.SandboxBwrap,
		Limits: agent.Limits{}.WithDefaults(), Stdin: strings.NewReader("hello"), Stdout: &out,
	})
	if err != nil || e.Code != 0 || out.String() != "hello" {
		t.Fatalf("cat: %+v %v %q", e, err, out.String())
	}
}

func TestUnavailable(t *testing.T) {
	s := sandbox.New(&sandbox.Options{Bwrap: "/nonexistent/bwrap"})
	_, err := s.Start(context.Background(), &sandbox.Spec{Argv: []string{"true"}, Workspace: t.TempDir(), Mode: agent.SandboxBwrap})
	if !errors.Is(err, sandbox.ErrUnavailable) {
		t.Fatalf("Start: %v, want ErrUnavailable", err)
	}
	for _, want := range []string{"apt install bubblewrap", "dnf install bubblewrap", "pacman -S bubblewrap", "apk add bubblewrap", "sandbox: none"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	e, err := s.Run(context.Background(), &sandbox.Spec{Argv: []string{"true"}, Workspace: t.TempDir(), Mode: agent.SandboxAuto})
	if err != nil || e.Mode != agent.SandboxNone || e.Code != 0 {
		t.Fatalf("auto without bwrap: %+v %v, want mode none", e, err)
	}
	if got := s.Describe(agent.SandboxAuto, false); got != "none" {
		t.Errorf("Describe(auto) without bwrap = %q", got)
	}
}

func TestProbe(t *testing.T) {
	r := sandbox.New(nil).Probe()
	t.Logf("\n%s", r)
	if _, err := exec.LookPath("bwrap"); err == nil && os.Geteuid() == 0 && !r.Runs {
		t.Errorf("bwrap is installed and agentd runs as root, but Probe says it does not run: %s", r.Problem)
	}
	for _, k := range []string{"cpu", "memory", "processes", "file_size", "disk", "tmp"} {
		if r.Limits[k] == "" {
			t.Errorf("Probe says nothing of limit %s", k)
		}
	}
}
