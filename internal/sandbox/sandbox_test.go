package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.RunHelperIfAsked()
	os.Exit(m.Run())
}

// probe is what the sandbox finds on this machine, looked at once.
var probe = sync.OnceValue(func() sandbox.Report { return sandbox.New(nil).Probe() })

// needBwrap skips a test where bubblewrap is not installed (CI installs
// it), and fails it where bubblewrap is installed but cannot make a
// sandbox, saying why: the tests must not pass by not running.
func needBwrap(t *testing.T) {
	t.Helper()
	r := probe()
	if r.Bwrap == "" {
		t.Skip("bubblewrap is not installed here (apt install bubblewrap); CI runs this test")
	}
	if !r.Runs {
		t.Fatalf("bubblewrap is installed but cannot run: %s", r.Problem)
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

func TestDescribe(t *testing.T) {
	needBwrap(t)
	s := sandbox.New(nil)
	for _, c := range []struct {
		mode    string
		network bool
		want    string
	}{
		{agent.SandboxBwrap, false, "bwrap, no network"},
		{agent.SandboxBwrap, true, "bwrap, network"},
		{agent.SandboxAuto, false, "bwrap, no network"},
		{agent.SandboxNone, true, "none"},
	} {
		if got := s.Describe(c.mode, c.network); got != c.want {
			t.Errorf("Describe(%q, %v) = %q, want %q", c.mode, c.network, got, c.want)
		}
	}
}

func TestBadSpec(t *testing.T) {
	ws := t.TempDir()
	for name, sp := range map[string]*sandbox.Spec{
		"no argv":            {Workspace: ws, Mode: agent.SandboxNone},
		"relative workspace": {Argv: []string{"true"}, Workspace: "ws", Mode: agent.SandboxNone},
		"dir outside":        {Argv: []string{"true"}, Workspace: ws, Dir: "/etc", Mode: agent.SandboxNone},
		"dir above":          {Argv: []string{"true"}, Workspace: ws, Dir: ws + "/..", Mode: agent.SandboxNone},
		"unknown mode":       {Argv: []string{"true"}, Workspace: ws, Mode: "docker"},
	} {
		if _, err := sandbox.New(nil).Start(context.Background(), sp); !errors.Is(err, sandbox.ErrSpec) {
			t.Errorf("%s: Start = %v, want ErrSpec", name, err)
		}
	}
}

// TestProbeOldBwrap: a bubblewrap without the options agentd gives it is
// named as too old, with the version agentd needs.
func TestProbeOldBwrap(t *testing.T) {
	old := filepath.Join(t.TempDir(), "bwrap")
	script := "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'bubblewrap 0.6.1'; exit 0; }\necho 'bwrap: Unknown option --disable-userns' >&2; exit 1\n"
	if err := os.WriteFile(old, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	r := sandbox.New(&sandbox.Options{Bwrap: old}).Probe()
	if r.Runs || !strings.Contains(r.Problem, "older than agentd needs") || !strings.Contains(r.Problem, sandbox.MinBwrap) {
		t.Errorf("Probe with bubblewrap 0.6.1: %+v; want it named too old", r)
	}
}
