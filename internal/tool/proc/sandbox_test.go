package proc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.RunHelperIfAsked()
	os.Exit(m.Run())
}

// sandboxModes are the modes the real sandbox is tested in here; bwrap
// only where it is installed (CI installs it).
func sandboxModes(t *testing.T) []string {
	modes := []string{agent.SandboxNone}
	if _, err := exec.LookPath("bwrap"); err == nil {
		modes = append(modes, agent.SandboxBwrap)
	} else {
		t.Log("bubblewrap is not installed here (apt install bubblewrap): mode bwrap is not tested; CI tests it")
	}
	return modes
}

func newSandboxFixture(t *testing.T, mode string, pol agent.ExecPolicy, o *Options) *fixture {
	t.Helper()
	return newFixtureRun(t, newTestWorkspace(t), SandboxRunner(sandbox.New(nil)), mode, pol, o)
}

func TestExecThroughTheSandbox(t *testing.T) {
	for _, mode := range sandboxModes(t) {
		t.Run(mode, func(t *testing.T) {
			env := map[string]string{"GOFLAGS": "-mod=mod", "AGENTD_SECRET": "s3cret"}
			f := newSandboxFixture(t, mode, agent.ExecPolicy{MaxOutputBytes: 1000, Env: []string{"GOFLAGS"}}, &Options{
				LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
			})
			describe := map[string]string{agent.SandboxNone: "none", agent.SandboxBwrap: "bwrap, no network"}[mode]
			if err := os.Mkdir(filepath.Join(string(f.ws), "sub"), 0o700); err != nil {
				t.Fatal(err)
			}

			r := f.ok(t, "exec", `{"argv": ["env"], "cwd": "sub"}`)
			first, out := splitFirst(r.Output)
			if !strings.HasPrefix(first, "exit 0 · ") || !strings.HasSuffix(first, " s · "+describe) {
				t.Errorf("first line %q", first)
			}
			if !strings.Contains(out, "GOFLAGS=-mod=mod") || strings.Contains(out, "s3cret") {
				t.Errorf("environment: %q", out)
			}
			r = f.ok(t, "exec", `{"argv": ["pwd"], "cwd": "sub"}`)
			if _, out := splitFirst(r.Output); out != filepath.Join(string(f.ws), "sub")+"\n" {
				t.Errorf("pwd in sub: %q", out)
			}

			r = f.ok(t, "exec", `{"argv": ["seq", "1", "100000"]}`)
			if _, out := splitFirst(r.Output); !strings.HasPrefix(out, "1\n2\n3\n") || !strings.Contains(out, " bytes left out …\n") || !strings.HasSuffix(out, "99999\n100000\n") || len(out) > 1100 {
				t.Errorf("capped output: %q", out)
			}

			r = f.ok(t, "exec", `{"argv": ["sleep", "30"], "timeout": 0.5}`)
			if first, _ := splitFirst(r.Output); !strings.HasPrefix(first, "killed: timeout after 500ms · ") || !r.IsError {
				t.Errorf("timeout: %+v", r)
			}
			if _, err := f.call(t, "exec", `{"argv": ["sh", "-c", "id"]}`); err == nil {
				t.Error("a shell ran without exec.shell")
			}
			if mode == agent.SandboxBwrap { // a file beside the workspace (the data directory's) is not there
				canary := filepath.Join(filepath.Dir(string(f.ws)), "canary")
				if err := os.WriteFile(canary, []byte("secret"), 0o600); err != nil {
					t.Fatal(err)
				}
				r := f.ok(t, "exec", `{"argv": ["cat", "`+canary+`"]}`)
				if strings.Contains(r.Output, "secret") || !r.IsError {
					t.Errorf("cat of a file beside the workspace: %q", r.Output)
				}
			}
		})
	}
}

func TestProcessThroughTheSandbox(t *testing.T) {
	for _, mode := range sandboxModes(t) {
		t.Run(mode, func(t *testing.T) {
			f := newSandboxFixture(t, mode, agent.ExecPolicy{MaxProcesses: 2}, nil)
			f.ok(t, "process", `{"action": "start", "argv": ["cat"], "stdin": "one\n"}`)
			f.pollUntil(t, "s1", "p1", "one\n")
			f.ok(t, "process", `{"action": "write", "id": "p1", "data": "two\n", "eof": true}`)
			if out, first := f.pollUntil(t, "s1", "p1", ""); !strings.HasSuffix(out, "two\n") || !strings.HasPrefix(first, "p1 exit 0 · ") {
				t.Errorf("cat: %q, %q", first, out)
			}

			f.ok(t, "process", `{"action": "start", "argv": ["sleep", "60"]}`)
			f.ok(t, "process", `{"action": "start", "argv": ["sleep", "60"]}`)
			if _, err := f.call(t, "process", `{"action": "start", "argv": ["sleep", "60"]}`); err == nil {
				t.Error("a third process started past exec.max_processes 2")
			}
			if r := f.ok(t, "process", `{"action": "kill", "id": "p2"}`); !strings.HasPrefix(r.Output, "killed p2: killed: killed") {
				t.Errorf("kill: %q", r.Output)
			}
			b, err := f.m.lookup("s1", "p3")
			if err != nil {
				t.Fatal(err)
			}
			f.m.CloseSession("s1")
			<-b.done
			if b.exit.Reason != sandbox.ReasonKilled {
				t.Errorf("p3 after CloseSession: %+v", b.exit)
			}
		})
	}
}
