package main

// End-to-end tests: they build the agentd binary and drive it as a user
// would, against fakellm served by the test over loopback.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"agentd/internal/event"
	"agentd/internal/model/fakellm"
)

var agentdBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentd-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	agentdBin = filepath.Join(dir, "agentd")
	os.Setenv("AGENTD_TEST_KEY", "test-key-not-secret")
	build := exec.Command("go", "build", "-o", agentdBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build agentd:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fake starts fakellm with a script and returns its address (host:port).
func fake(t *testing.T, script string) string {
	t.Helper()
	var s *fakellm.Script
	if script != "" {
		var err error
		if s, err = fakellm.ParseScript("test.fake", []byte(script)); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { fakellm.New(s, nil).Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// dataDir makes a data directory with files (path relative to it → content).
func dataDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	newStoreFor(t, dir)
	return dir
}

func openaiAgent(addr, extra string) string {
	return "name: Tester\nmodel:\n  provider: openai\n  name: fake\n  base_url: http://" + addr + "/v1\n  retries: 3\n" + extra
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs agentd with args and returns its output and exit code.
func run(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return runEnv(t, dir, nil, args...)
}

// runEnv is run with more environment variables.
func runEnv(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	return runInput(t, dir, env, "", args...)
}

// runInput is runEnv with stdin.
func runInput(t *testing.T, dir string, env []string, stdin string, args ...string) result {
	t.Helper()
	return runCmd(t, "", env, stdin, append([]string{"--data", dir}, args...)...)
}

// runIn runs agentd in the working directory cwd, without --data.
func runIn(t *testing.T, cwd string, env []string, args ...string) result {
	t.Helper()
	return runCmd(t, cwd, env, "", args...)
}

// runCmd runs agentd with args in cwd ("": the test's), with more
// environment variables and stdin.
func runCmd(t *testing.T, cwd string, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentdBin, args...)
	cmd.Dir = cwd
	if se := storeEnv(args); env != nil || se != nil {
		cmd.Env = append(append(os.Environ(), se...), env...)
	}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("agentd %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

// daemon is a running `agentd serve`.
type daemon struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serve starts agentd serve and waits until its socket accepts.
func serve(t *testing.T, dir string, env ...string) *daemon {
	t.Helper()
	// The local socket only: tests run many daemons at once, and the
	// gateway's tests choose their own addresses.
	return serveArgs(t, dir, []string{"--listen", "off"}, env...)
}

// serveArgs is serve with the serve command's flags.
func serveArgs(t *testing.T, dir string, flags []string, env ...string) *daemon {
	t.Helper()
	args := append([]string{"--data", dir, "serve"}, flags...)
	cmd := exec.Command(agentdBin, args...)
	cmd.Env = append(append(os.Environ(), storeEnv(args)...), env...)
	d := &daemon{cmd: cmd, out: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = d.out, d.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.exited <- cmd.Wait() }()
	sock := filepath.Join(dir, "agentd.sock")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		select {
		case err := <-d.exited:
			t.Fatalf("agentd serve exited early: %v\n%s", err, d.out.String())
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("agentd serve did not open its socket:\n%s", d.out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Cleanup(func() { d.kill() })
	return d
}

func (d *daemon) kill() {
	d.cmd.Process.Kill()
	<-d.exited
	d.exited <- errors.New("killed") // later calls return at once
}

// stop asks the daemon to stop and waits for it.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	d.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-d.exited:
		d.exited <- err
		if err != nil {
			t.Fatalf("agentd serve exited with %v:\n%s", err, d.out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("agentd serve did not stop:\n%s", d.out.String())
	}
}

// jsonEvents parses `agentd send --json` or `agentd log --json` output.
func jsonEvents(t *testing.T, out string) (evs []event.Event, end *event.TurnEndData) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(line, &probe); err != nil {
			t.Fatalf("bad JSON line %q: %v", line, err)
		}
		if raw, ok := probe["end"]; ok {
			end = new(event.TurnEndData)
			json.Unmarshal(raw, end)
			continue
		}
		var e event.Event
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
	}
	return evs, end
}

func kinds(evs []event.Event) []event.Kind {
	var ks []event.Kind
	for _, e := range evs {
		ks = append(ks, e.Kind)
	}
	return ks
}

func mustContain(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("output does not contain %q:\n%s", sub, s)
	}
}

var _ = io.Discard
