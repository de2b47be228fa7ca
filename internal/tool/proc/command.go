package proc

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"agentd/internal/tool"
)

// shells are the programs that run a command line given with -c: argv
// naming one of them is a shell command, allowed only with exec.shell.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "ash", "fish", "busybox"}

// command is what exec and process start share: the arguments a call
// gives, and what they resolve to.
type command struct {
	Argv  []string `json:"argv"`
	Cwd   string   `json:"cwd"`
	Shell bool     `json:"shell"`
	Stdin string   `json:"stdin"`
}

// prepared is a command checked against the agent's settings and
// workspace, ready to run.
type prepared struct {
	spec     Spec // Stdin, Stdout, Stderr, Timeout left to the caller
	settings Settings
	dir      string // the working directory relative to the workspace; "" is its root
	shell    bool
}

// prepare checks cmd for agentID: argv, the shell, the working directory
// (inside the workspace), and builds its Spec with the environment
// exec.env names.
func (m *Manager) prepare(agentID string, cmd *command) (*prepared, error) {
	st, ok := m.settings(agentID)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrNoAgent, agentID)
	}
	st.Exec = st.Exec.WithDefaults()
	argv, shell, err := checkArgv(cmd.Argv, cmd.Shell)
	if err != nil {
		return nil, err
	}
	if shell && !st.Exec.Shell {
		return nil, fmt.Errorf("%w: %q runs a shell, which this agent's policy does not allow (set exec.shell: true in the agent's file to allow it), or give argv without a shell", ErrShell, argv[0])
	}
	ws, err := m.ws.For(agentID)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	rel := cmd.Cwd
	if rel == "" {
		rel = "."
	}
	if strings.ContainsRune(rel, 0) {
		return nil, fmt.Errorf("%w: cwd contains a NUL byte", ErrArgs)
	}
	host, err := ws.HostDir(rel)
	if err != nil {
		return nil, fmt.Errorf("cwd %q: %w", cmd.Cwd, err)
	}
	dir, err := filepath.Rel(ws.Dir(), host)
	if err != nil || dir == ".." || strings.HasPrefix(dir, "../") {
		return nil, fmt.Errorf("cwd %q: outside the workspace", cmd.Cwd)
	}
	if dir == "." {
		dir = ""
	}
	return &prepared{
		spec: Spec{
			Argv:      argv,
			Dir:       host,
			Workspace: ws.Dir(),
			Env:       m.env(st.Exec.Env),
			Mode:      st.Mode,
			Network:   st.Exec.Network,
			Limits:    st.Exec.Limits,
		},
		settings: st,
		dir:      filepath.ToSlash(dir),
		shell:    shell,
	}, nil
}

// checkArgv validates argv and says whether it runs a shell: shell: true
// with one string runs it with sh -c; argv[0] a shell given -c is one too.
func checkArgv(argv []string, shell bool) ([]string, bool, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, false, fmt.Errorf("%w: argv is empty (give the program and its arguments, as [\"ls\", \"-l\"])", ErrArgs)
	}
	for i, a := range argv {
		if strings.ContainsRune(a, 0) {
			return nil, false, fmt.Errorf("%w: argv[%d] contains a NUL byte", ErrArgs, i)
		}
	}
	if shell {
		if len(argv) != 1 {
			return nil, false, fmt.Errorf("%w: with shell: true, argv is one string, the command line", ErrArgs)
		}
		return []string{"sh", "-c", argv[0]}, true, nil
	}
	return argv, isShell(argv), nil
}

// isShell says whether argv runs a shell on a command line: a shell
// program with a -c option (-c, -ec, -lc …).
func isShell(argv []string) bool {
	if !slices.Contains(shells, path.Base(argv[0])) {
		return false
	}
	for _, a := range argv[1:] {
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsRune(a, 'c') {
			return true
		}
	}
	return false
}

// env is the KEY=value of each of names set in agentd's environment.
func (m *Manager) env(names []string) []string {
	var env []string
	for _, n := range names {
		if v, ok := m.o.LookupEnv(n); ok {
			env = append(env, n+"="+v)
		}
	}
	return env
}

// card is the approval card of p.
func (m *Manager) card(p *prepared) tool.Card {
	sandbox := m.run.Describe(p.settings.Mode, p.settings.Exec.Network)
	line := quoteArgv(p.spec.Argv)
	where := p.dir
	if where == "" {
		where = "the workspace"
	}
	exact := line + "\x00in " + p.dir
	if p.shell {
		exact += " (shell)"
	}
	return tool.Card{
		Kind:    tool.CardCommand,
		Title:   fmt.Sprintf("Run %s in %s (%s)", line, where, sandbox),
		Command: p.spec.Argv,
		Dir:     p.dir,
		Sandbox: sandbox,
		Shell:   p.shell,
		Exact:   exact,
	}
}

// quoteArgv joins argv as a POSIX shell reads it back: a word of only
// safe characters as it is, any other in single quotes.
func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = quote(a)
	}
	return strings.Join(q, " ")
}

func quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
