package proc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/agent"
	"agentd/internal/tool"
)

// fixture is a Manager over execRunner and a workspace in a temporary
// folder, for the agent "a".
type fixture struct {
	m  *Manager
	ws dirWorkspace
}

func newFixture(t *testing.T, pol agent.ExecPolicy, o *Options) *fixture {
	t.Helper()
	ws := newTestWorkspace(t)
	return newFixtureRun(t, ws, execRunner{}, agent.SandboxNone, pol, o)
}

func newFixtureRun(t *testing.T, ws dirWorkspace, run Runner, mode string, pol agent.ExecPolicy, o *Options) *fixture {
	t.Helper()
	if o == nil {
		o = &Options{}
	}
	if o.LookupEnv == nil {
		o.LookupEnv = func(string) (string, bool) { return "", false }
	}
	spaces := WorkspacesFunc(func(id string) (Workspace, error) {
		if id != "a" {
			return nil, errors.New("no agent " + id)
		}
		return ws, nil
	})
	settings := func(id string) (Settings, bool) {
		return Settings{Mode: mode, Exec: pol.WithDefaults()}, id == "a"
	}
	m := New(spaces, run, settings, o)
	t.Cleanup(func() { m.Close() })
	return &fixture{m: m, ws: ws}
}

// call runs the tool name with args for agent a in session s1.
func (f *fixture) call(t *testing.T, name, args string) (tool.Result, error) {
	t.Helper()
	return f.callIn(t, "s1", name, args)
}

func (f *fixture) callIn(t *testing.T, session, name, args string) (tool.Result, error) {
	t.Helper()
	for _, tl := range f.m.Tools() {
		if tl.Spec().Name == name {
			return tl.Call(context.Background(), &tool.Call{Name: name, Args: json.RawMessage(args), Agent: "a", Session: session})
		}
	}
	t.Fatalf("no tool %s", name)
	return tool.Result{}, nil
}

// ok is the result of a call that must not fail.
func (f *fixture) ok(t *testing.T, name, args string) tool.Result {
	t.Helper()
	r, err := f.call(t, name, args)
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	return r
}

func splitFirst(s string) (string, string) {
	first, rest, _ := strings.Cut(s, "\n")
	return first, rest
}

func TestExecRuns(t *testing.T) {
	f := newFixture(t, agent.ExecPolicy{}, nil)
	tests := []struct {
		args       string
		firstStart string
		out        string
		isError    bool
	}{
		{`{"argv": ["echo", "hello", "world"]}`, "exit 0 · ", "hello world\n", false},
		{`{"argv": ["false"]}`, "exit 1 · ", "", true},
		{`{"argv": ["cat"], "stdin": "from stdin"}`, "exit 0 · ", "from stdin", false},
		{`{"argv": ["pwd"]}`, "exit 0 · ", string(f.ws) + "\n", false},
		{`{"argv": ["ls", "/no/such/file"]}`, "exit 2 · ", "ls: cannot access '/no/such/file': No such file or directory\n", true},
	}
	for _, tt := range tests {
		r := f.ok(t, "exec", tt.args)
		first, out := splitFirst(r.Output)
		if !strings.HasPrefix(first, tt.firstStart) || !strings.HasSuffix(first, " s · none") {
			t.Errorf("%s: first line %q, want %q… s · none", tt.args, first, tt.firstStart)
		}
		if diff := cmp.Diff(tt.out, out); diff != "" {
			t.Errorf("%s: output (-want +got):\n%s", tt.args, diff)
		}
		if r.IsError != tt.isError {
			t.Errorf("%s: IsError %v, want %v", tt.args, r.IsError, tt.isError)
		}
	}
}

func TestExecOutputKeepsHeadAndTail(t *testing.T) {
	f := newFixture(t, agent.ExecPolicy{MaxOutputBytes: 100}, nil)
	r := f.ok(t, "exec", `{"argv": ["seq", "1", "100000"]}`)
	_, out := splitFirst(r.Output)
	full, err := exec.Command("seq", "1", "100000").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := string(full[:50]) + "\n… " + itoa(len(full)-100) + " bytes left out …\n" + string(full[len(full)-50:])
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestExecRefusesAShellWithoutExecShell(t *testing.T) {
	f := newFixture(t, agent.ExecPolicy{}, nil)
	for _, args := range []string{
		`{"argv": ["echo hi; id"], "shell": true}`,
		`{"argv": ["sh", "-c", "echo hi"]}`,
		`{"argv": ["/bin/bash", "-lc", "echo hi"]}`,
		`{"argv": ["dash", "-e", "-c", "echo hi"]}`,
		`{"argv": ["busybox", "sh", "-c", "echo hi"]}`,
	} {
		for _, name := range []string{"exec", "process"} {
			a := args
			if name == "process" {
				a = `{"action": "start", ` + args[1:]
			}
			_, err := f.call(t, name, a)
			if !errors.Is(err, ErrShell) || !strings.Contains(err.Error(), "exec.shell") {
				t.Errorf("%s %s: error %v, want ErrShell naming exec.shell", name, a, err)
			}
		}
	}
	f = newFixture(t, agent.ExecPolicy{Shell: true}, nil)
	r := f.ok(t, "exec", `{"argv": ["echo a b | tr a-z A-Z"], "shell": true}`)
	if _, out := splitFirst(r.Output); out != "A B\n" {
		t.Errorf("shell output %q, want %q", out, "A B\n")
	}
}

func TestExecArgvChecked(t *testing.T) {
	f := newFixture(t, agent.ExecPolicy{Shell: true}, nil)
	for _, args := range []string{
		`{"argv": []}`,
		`{"argv": [""]}`,
		`{"argv": ["echo", "a\u0000b"]}`,
		`{"argv": ["echo", "hi"], "shell": true}`,
		`{"argv": ["echo"], "bogus": 1}`,
		`{"argv": ["echo"], "timeout": -1}`,
	} {
		if _, err := f.call(t, "exec", args); !errors.Is(err, ErrArgs) {
			t.Errorf("%s: error %v, want ErrArgs", args, err)
		}
	}
}

func TestExecCwdStaysInTheWorkspace(t *testing.T) {
	f := newFixture(t, agent.ExecPolicy{}, nil)
	if err := os.MkdirAll(filepath.Join(string(f.ws), "src", "pkg"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"root": "/", "up": "..", "etc": "/etc"} {
		if err := os.Symlink(target, filepath.Join(string(f.ws), name)); err != nil {
			t.Fatal(err)
		}
	}
	r := f.ok(t, "exec", `{"argv": ["pwd"], "cwd": "src/pkg"}`)
	if _, out := splitFirst(r.Output); out != filepath.Join(string(f.ws), "src", "pkg")+"\n" {
		t.Errorf("pwd in src/pkg: %q", out)
	}
	for _, cwd := range []string{"..", "../..", "/", "/etc", "root", "up", "etc", "src/../..", "no/such", "a\u0000b"} {
		args, _ := json.Marshal(map[string]any{"argv": []string{"pwd"}, "cwd": cwd})
		if r, err := f.call(t, "exec", string(args)); err == nil {
			t.Errorf("cwd %q: ran, %q", cwd, r.Output)
		}
	}
}

func TestExecTimeout(t *testing.T) {
	f := newFixture(t, agent.ExecPolicy{Timeout: agent.Duration(60e9)}, nil)
	r := f.ok(t, "exec", `{"argv": ["sleep", "30"], "timeout": 0.2}`)
	if first, _ := splitFirst(r.Output); !strings.HasPrefix(first, "killed: timeout after 200ms · ") || !r.IsError {
		t.Errorf("result %+v, want killed: timeout after 200ms, an error", r)
	}
	_, err := f.call(t, "exec", `{"argv": ["sleep", "1"], "timeout": 61}`)
	if !errors.Is(err, ErrArgs) || !strings.Contains(err.Error(), "exec.timeout (1m)") {
		t.Errorf("timeout past exec.timeout: %v", err)
	}
}

func TestExecEnvironmentIsMinimalPlusExecEnv(t *testing.T) {
	env := map[string]string{"GOFLAGS": "-mod=mod", "AGENTD_SECRET": "s3cret"}
	f := newFixture(t, agent.ExecPolicy{Env: []string{"GOFLAGS", "UNSET_NAME"}}, &Options{
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	})
	r := f.ok(t, "exec", `{"argv": ["env"]}`)
	_, out := splitFirst(r.Output)
	if !strings.Contains(out, "GOFLAGS=-mod=mod\n") || strings.Contains(out, "UNSET_NAME") || strings.Contains(out, "s3cret") {
		t.Errorf("environment:\n%s", out)
	}
}

func TestExecUnknownAgentRefused(t *testing.T) {
	f := newFixture(t, agent.ExecPolicy{}, nil)
	exe := f.m.Tools()[0]
	_, err := exe.Call(context.Background(), &tool.Call{Args: json.RawMessage(`{"argv": ["true"]}`), Agent: "b", Session: "s"})
	if !errors.Is(err, ErrNoAgent) {
		t.Errorf("error %v, want ErrNoAgent", err)
	}
}

func TestPreviewCards(t *testing.T) {
	f := newFixtureRun(t, newTestWorkspace(t), execRunner{}, agent.SandboxBwrap, agent.ExecPolicy{Shell: true}, nil)
	for _, d := range []string{"src", "s\x1brc"} {
		if err := os.Mkdir(filepath.Join(string(f.ws), d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, args string
		want       tool.Card
	}{
		{"exec", `{"argv": ["go", "test", "./..."], "cwd": "src"}`, tool.Card{
			Kind: tool.CardCommand, Title: "Run go test ./... in src (bwrap, no network)",
			Command: []string{"go", "test", "./..."}, Dir: "src", Sandbox: "bwrap, no network",
			Exact: "go test ./...\x00in src\x00sandbox bwrap, no network",
		}},
		{"exec", `{"argv": ["grep -r 'it''s' . | wc -l"], "shell": true}`, tool.Card{
			Kind: tool.CardCommand, Title: `Run sh -c 'grep -r '\''it'\'''\''s'\'' . | wc -l' in the workspace (bwrap, no network)`,
			Command: []string{"sh", "-c", "grep -r 'it''s' . | wc -l"}, Sandbox: "bwrap, no network", Shell: true,
			Exact: `sh -c 'grep -r '\''it'\'''\''s'\'' . | wc -l'` + "\x00in . (shell)\x00sandbox bwrap, no network",
		}},
		{"exec", `{"argv": ["python3"], "stdin": "print(1)\r\u001b[2K\n"}`, tool.Card{
			Kind: tool.CardCommand, Title: "Run python3 in the workspace (bwrap, no network), 14 bytes on stdin",
			Command: []string{"python3"}, Sandbox: "bwrap, no network", Input: `print(1)\r\x1b[2K` + "\n",
			Exact: "python3\x00in .\x00sandbox bwrap, no network\x00stdin sha256:" + sha256hex("print(1)\r\x1b[2K\n"),
		}},
		{"exec", `{"argv": ["rm", "a\nb\u202e"], "cwd": "s\u001brc"}`, tool.Card{
			Kind: tool.CardCommand, Title: `Run rm $'a\nb\u202e' in "s\x1brc" (bwrap, no network)`,
			Command: []string{"rm", `"a\nb\u202e"`}, Dir: `"s\x1brc"`, Sandbox: "bwrap, no network",
			Exact: `rm $'a\nb\u202e'` + "\x00in " + `$'s\x1brc'` + "\x00sandbox bwrap, no network",
		}},
		{"process", `{"action": "start", "argv": ["python3", "-m", "http.server"], "cwd": "./src/"}`, tool.Card{
			Kind: tool.CardCommand, Title: "Run python3 -m http.server in src (bwrap, no network)",
			Command: []string{"python3", "-m", "http.server"}, Dir: "src", Sandbox: "bwrap, no network",
			Exact: "python3 -m http.server\x00in src\x00sandbox bwrap, no network",
		}},
		{"process", `{"action": "list"}`, tool.Card{Kind: tool.CardCommand, Title: "List this session's background processes"}},
	}
	for _, tt := range tests {
		var pv tool.Previewer
		for _, tl := range f.m.Tools() {
			if tl.Spec().Name == tt.name {
				pv = tl.(tool.Previewer)
			}
		}
		got, err := pv.Preview(context.Background(), &tool.Call{Args: json.RawMessage(tt.args), Agent: "a", Session: "s1"})
		if err != nil {
			t.Errorf("%s: %v", tt.args, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: card (-want +got):\n%s", tt.args, diff)
		}
	}
	f2 := newFixture(t, agent.ExecPolicy{}, nil)
	pv := f2.m.Tools()[0].(tool.Previewer)
	for _, args := range []string{`{"argv": ["sh", "-c", "id"]}`, `{"argv": ["ls"], "cwd": "../"}`} {
		if _, err := pv.Preview(context.Background(), &tool.Call{Args: json.RawMessage(args), Agent: "a"}); err == nil {
			t.Errorf("preview of %s: no error", args)
		}
	}
}

func TestToolsAskFirst(t *testing.T) {
	f := newFixture(t, agent.ExecPolicy{}, nil)
	for _, tl := range f.m.Tools() {
		s := tl.Spec()
		if !s.AskFirst || s.ReadOnly || s.Idempotent {
			t.Errorf("%s: AskFirst %v ReadOnly %v Idempotent %v; want ask first, neither read-only nor idempotent", s.Name, s.AskFirst, s.ReadOnly, s.Idempotent)
		}
		if _, ok := tl.(tool.Previewer); !ok {
			t.Errorf("%s is not a Previewer", s.Name)
		}
	}
}

func TestQuoteArgv(t *testing.T) {
	tests := map[string][]string{
		`go test ./...`:           {"go", "test", "./..."},
		`echo '' 'a b' 'it'\''s'`: {"echo", "", "a b", "it's"},
		`printf '$HOME' '*'`:      {"printf", "$HOME", "*"},
	}
	for want, argv := range tests {
		if got := quoteArgv(argv); got != want {
			t.Errorf("quoteArgv(%q) = %s, want %s", argv, got, want)
		}
	}
}

// FuzzQuote checks quote against a shell: sh (bash for the $'…' quotes
// of a word with control characters, which dash does not read) reads the
// quoted word back as the word, and the quoted word holds no control
// character.
func FuzzQuote(f *testing.F) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		f.Skip("no sh")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		f.Skip("no bash")
	}
	for _, s := range []string{"", "a", "a b", "it's", `"$(id)"`, "`id`", "\\", "'''", "\n", "-c", "ü ∑",
		"a\r\x1b[2Kb", "\u202eexe.txt", `\x41'` + "\x7f", "\xff\xfe", "\u0085\t1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsRune(s, 0) {
			return
		}
		q := quote(s)
		if tool.HasControl(q) {
			t.Errorf("quote(%q) = %q holds a control character", s, q)
		}
		shell := sh
		if strings.HasPrefix(q, "$'") {
			shell = bash
		}
		cmd := exec.Command(shell, "-c", "set -- "+q+"; printf '%s' \"$#\"; printf '\\000%s' \"$@\"")
		cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8")
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s with %s: %v", shell, q, err)
		}
		if want := "1\x00" + s; string(got) != want {
			t.Errorf("%s reads %s as %q, want %q", shell, q, got, want)
		}
	})
}

// The call's output cap (the agent's tools.max_output_bytes) leaves room
// for the first line, so that the registry's cut never takes the tail.
func TestExecOutputFitsTheCallCap(t *testing.T) {
	f := newFixture(t, agent.ExecPolicy{}, nil)
	exe := f.m.Tools()[0]
	r, err := exe.Call(context.Background(), &tool.Call{Args: json.RawMessage(`{"argv": ["seq", "1", "100000"]}`), Agent: "a", Session: "s1", MaxOutputBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Output) > 1000 || !strings.HasSuffix(r.Output, "\n100000\n") {
		t.Errorf("%d bytes for a cap of 1000, ending %q", len(r.Output), r.Output[max(0, len(r.Output)-20):])
	}
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
