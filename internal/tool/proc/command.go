package proc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"agentd/internal/tool"
)

// shells are the programs that read a command line: argv naming one of
// them anywhere is a shell command, allowed only with exec.shell.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "fish", "busybox", "csh", "tcsh"}

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
	stdin    string    // exec's; process start gives its own to the process
	ws       Workspace // where it runs
}

// DirOpener is the optional ability of a Workspace to give a new open
// handle of its own directory (workspace.Workspace.OpenDir): the sandbox
// binds that directory, not whatever its path names by the time bubblewrap
// looks it up.
type DirOpener interface {
	OpenDir() (*os.File, error)
}

// startIn starts p's command, its workspace bound by descriptor where the
// workspace can give one.
func (m *Manager) startIn(ctx context.Context, p *prepared) (Process, error) {
	if o, ok := p.ws.(DirOpener); ok {
		f, err := o.OpenDir()
		if err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		defer f.Close() // the sandbox has bound it (or given it on) once Start returns
		p.spec.WorkspaceFD = f
	}
	return m.run.Start(ctx, &p.spec)
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
		return nil, shellRefused(argv)
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
		ws:       ws,
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
	return argv, shellAt(argv) >= 0, nil
}

// shellAt is the index of the first element of argv whose base name is a
// shell, or -1. A shell run as argv[0] reads a command line whatever its
// options (-c, -s, a script file, its stdin), and one named further on is
// most likely run by the program before it (env, nice, nohup, timeout,
// xargs, find -exec, stdbuf …): argv naming a shell anywhere counts as a
// shell command, even where the name is only a word to search for.
func shellAt(argv []string) int {
	return slices.IndexFunc(argv, func(a string) bool { return slices.Contains(shells, path.Base(a)) })
}

// shellRefused is the error of a shell command for an agent whose
// exec.shell is false.
func shellRefused(argv []string) error {
	i := shellAt(argv)
	what := fmt.Sprintf("%s runs a shell", tool.Visible(argv[0]))
	if i > 0 {
		what = fmt.Sprintf("argv[%d] %s names a shell (a shell named anywhere in argv counts: env, nice, xargs or find -exec would run it)", i, tool.Visible(argv[i]))
	}
	return fmt.Errorf("%w: %s, which this agent's policy does not allow (set exec.shell: true in the agent's file to allow it), or give argv without a shell", ErrShell, what)
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

// CardInputBytes is the most of a command's input (exec's stdin, a
// process write's data) an approval card carries; the rest is counted in
// Card.InputOmitted.
const CardInputBytes = 16 << 10

// card is the approval card of p given stdin ("": none). Its Exact, what
// "always allow this exact command" remembers, is the command line, its
// directory, the sandbox the card names and a SHA-256 of stdin: a grant
// covers that command in that sandbox with that input only.
func (m *Manager) card(p *prepared, stdin string) tool.Card {
	sandbox := m.run.Describe(p.settings.Mode, p.settings.Exec.Network)
	line := quoteArgv(p.spec.Argv)
	where := "the workspace"
	if p.dir != "" {
		where = tool.Visible(p.dir)
	}
	title := fmt.Sprintf("Run %s in %s (%s)", line, where, sandbox)
	exact := line + "\x00in " + quoteDir(p.dir)
	if p.shell {
		exact += " (shell)"
	}
	exact += "\x00sandbox " + sandbox
	if stdin != "" {
		title += fmt.Sprintf(", %d bytes on stdin", len(stdin))
		sum := sha256.Sum256([]byte(stdin))
		exact += "\x00stdin sha256:" + hex.EncodeToString(sum[:])
	}
	c := tool.Card{
		Kind:    tool.CardCommand,
		Title:   title,
		Command: visibleArgv(p.spec.Argv),
		Dir:     tool.Visible(p.dir),
		Sandbox: sandbox,
		Shell:   p.shell,
		Exact:   exact,
	}
	c.Input, c.InputOmitted = cardInput(stdin)
	return c
}

// cardInput is input as a card shows it: escaped, cut at CardInputBytes,
// and how many bytes were left out.
func cardInput(input string) (string, int) {
	if len(input) <= CardInputBytes {
		return tool.VisibleLines(input), 0
	}
	cut := CardInputBytes
	for cut > 0 && !utf8.RuneStart(input[cut]) {
		cut--
	}
	return tool.VisibleLines(input[:cut]), len(input) - cut
}

func visibleArgv(argv []string) []string {
	v := make([]string, len(argv))
	for i, a := range argv {
		v[i] = tool.Visible(a)
	}
	return v
}

// quoteDir is a working directory in Exact: quoted as an argument is, ""
// (the workspace's root) as it is.
func quoteDir(dir string) string {
	if dir == "" {
		return "." // the workspace itself
	}
	return quote(dir)
}

// quoteArgv joins argv as a shell reads it back: a word of only safe
// characters as it is, a word with control characters (or bytes that are
// not UTF-8) in ANSI-C quotes ($'a\nb', read by bash, zsh, ksh, busybox
// and POSIX.1-2024 shells), any other in single quotes. The line it makes
// holds no control character, so it cannot fake a line of a card.
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
	if tool.HasControl(s) {
		return ansiQuote(s)
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ansiQuote writes s in $'…': a backslash and a quote escaped, the
// control characters IsControl reports as \n \r \t, \xNN (below U+0080)
// or \uNNNN, bytes that are not UTF-8 as \xNN, the rest as they are.
func ansiQuote(s string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && tool.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case tool.IsControl(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	b.WriteByte('\'')
	return b.String()
}
