//go:build linux

package main

// agentd chat in a terminal (a pseudo-terminal the test plays): line
// editing and history, Ctrl-C that cancels a reply or clears a line, and
// slash commands that are not sent to the model.

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentd/internal/event"
	"agentd/internal/ptytest"
)

// ttyChat is agentd chat running on a pseudo-terminal.
type ttyChat struct {
	t      *testing.T
	master *os.File
	out    *syncBuffer
	exited chan error
}

// startChat runs agentd chat with args on a new pseudo-terminal.
func startChat(t *testing.T, dir string, args ...string) *ttyChat {
	t.Helper()
	master, tty, err := ptytest.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	cmd := exec.Command(agentdBin, append([]string{"--data", dir, "chat"}, args...)...)
	cmd.Env = append(os.Environ(), storeEnv(cmd.Args)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	// The terminal is the chat's controlling terminal, as in a shell: a
	// Ctrl-C the terminal took for a signal would reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	c := &ttyChat{t: t, master: master, out: &syncBuffer{}, exited: make(chan error, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			c.out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	go func() { c.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		master.Close()
	})
	return c
}

// keys types on the terminal.
func (c *ttyChat) keys(s string) {
	c.t.Helper()
	if _, err := c.master.WriteString(s); err != nil {
		c.t.Fatal(err)
	}
}

// waitFor waits until the terminal has shown s n times in all.
func (c *ttyChat) waitFor(s string, n int) {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(c.out.String(), s) < n {
		if time.Now().After(deadline) {
			c.t.Fatalf("the terminal did not show %q %d times:\n%q", s, n, c.out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// wait waits for the chat to end and returns its error.
func (c *ttyChat) wait() error {
	c.t.Helper()
	select {
	case err := <-c.exited:
		return err
	case <-time.After(30 * time.Second):
		c.t.Fatalf("chat did not end:\n%q", c.out.String())
		return nil
	}
}

// inputs are the texts of a session's inputs, and whether a turn of it
// ended cancelled.
func inputs(t *testing.T, dir, addr string) ([]string, bool) {
	t.Helper()
	r := run(t, dir, "log", addr, "--json")
	evs, _ := jsonEvents(t, r.stdout)
	var texts []string
	cancelled := false
	for _, ev := range evs {
		switch ev.Kind {
		case event.Input:
			var d event.InputData
			ev.Decode(&d)
			texts = append(texts, d.Text)
		case event.TurnEnd:
			var d event.TurnEndData
			ev.Decode(&d)
			cancelled = cancelled || d.Status == event.StatusCancelled
		}
	}
	return texts, cancelled
}

const slowReply = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango"

func TestChatTerminal(t *testing.T) {
	addr := fake(t, "match ^slow\nchunks 20\ngap 300ms\nsay "+slowReply+"\n\nmatch *\nsay got: {{last_user}}\n")
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "")})
	session := func(t *testing.T, key string) {
		c := startChat(t, dir, "a", "--session", key)
		prompt := 1 // prompts shown: each step waits for the next
		step := func(keys, shows string) {
			c.waitFor("you> ", prompt)
			n := strings.Count(c.out.String(), shows)
			c.keys(keys)
			c.waitFor(shows, n+1)
			prompt++
		}
		// Editing: the left arrow moves back into the line.
		step("helo\x1b[Dl\r", "got: hello")
		// The up arrow recalls the line before, which is sent again.
		step("\x1b[A\r", "got: hello")
		// An unknown command is answered, not sent.
		step("/bogus\r", "unknown command /bogus: the commands are /reset, /compact, /help, /quit, /exit")
		// Ctrl-C during a reply cancels the turn; the chat goes on.
		c.waitFor("you> ", prompt)
		c.keys("slow\r")
		c.waitFor("alpha", 1)
		c.keys("\x03")
		c.waitFor("[turn cancelled]", 1)
		prompt++
		// Ctrl-C on a line being typed drops it; the next line is sent.
		step("draft\x03", "draft^C")
		step("after\r", "got: after")
		// Ctrl-C on an empty line says how to leave; a second one leaves.
		step("\x03", "Ctrl-C again")
		c.waitFor("you> ", prompt)
		c.keys("\x03")
		if err := c.wait(); err != nil {
			t.Fatalf("chat ended with %v:\n%q", err, c.out.String())
		}
		texts, cancelled := inputs(t, dir, "a/"+key)
		if want := []string{"hello", "hello", "slow", "after"}; !slices.Equal(texts, want) || !cancelled {
			t.Errorf("the session's inputs are %q (a turn cancelled: %v), want %q and a cancelled turn", texts, cancelled, want)
		}
	}
	t.Run("in process", func(t *testing.T) { session(t, "tty-local") })
	d := serve(t, dir)
	t.Run("daemon", func(t *testing.T) { session(t, "tty-daemon") })

	// The history is kept in the data directory, for the owner alone, and
	// the next chat recalls it.
	hist := filepath.Join(dir, "chat_history")
	fi, err := os.Stat(hist)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("history file mode %o, want 600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(hist)
	if got := strings.Split(strings.TrimSpace(string(b)), "\n"); !slices.Equal(got, []string{"hello", "/bogus", "slow", "after", "hello", "/bogus", "slow", "after"}) {
		t.Errorf("history file holds %q", got)
	}
	c := startChat(t, dir, "a", "--session", "tty-next")
	c.waitFor("you> ", 1)
	c.keys("\x1b[A\r")
	c.waitFor("got: after", 1)
	c.keys("\x04")
	if err := c.wait(); err != nil {
		t.Fatalf("chat ended with %v", err)
	}
	d.stop(t)
}

// What a model says is shown on the terminal, never obeyed by it: escape
// sequences (here, one that retitles the window and one that colours the
// text), C1 controls and bidirectional overrides appear in caret or \u
// notation, in chat, in send's reply and in log, in process and through
// the daemon; a pipe still gets the bytes as they are.
func TestTerminalShowsControls(t *testing.T) {
	const said = "title\x1b]0;pwned\x07 red\x1b[31mX \u202eevil\u0085."
	const shown = `title^[]0;pwned^G red^[[31mX \u202Eevil\u0085.`
	addr := fake(t, "match *\nsay "+said+"\n")
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(addr, "")})
	check := func(t *testing.T, key string) {
		c := startChat(t, dir, "a", "--session", key)
		c.waitFor("you> ", 1)
		c.keys("hi\r")
		c.waitFor(shown, 1)
		c.keys("\x04")
		if err := c.wait(); err != nil {
			t.Fatalf("chat ended with %v", err)
		}
		for _, raw := range []string{"\x1b]0;pwned", "\x1b[31m", "\u202e", "\u0085"} {
			if strings.Contains(c.out.String(), raw) {
				t.Errorf("chat wrote %q to the terminal:\n%q", raw, c.out.String())
			}
		}
		for _, args := range [][]string{{"send", "a", "--session", key, "again"}, {"log", "a/" + key}} {
			out := onTerminal(t, dir, args...)
			if !strings.Contains(out, shown) || strings.Contains(out, "\x1b]0;pwned") {
				t.Errorf("agentd %s on a terminal wrote\n%q", strings.Join(args, " "), out)
			}
		}
		if r := run(t, dir, "send", "a", "--session", key, "piped"); !strings.Contains(r.stdout, said) {
			t.Errorf("send to a pipe: %q, want the bytes as they are", r.stdout)
		}
	}
	t.Run("in process", func(t *testing.T) { check(t, "ctl-local") })
	d := serve(t, dir)
	t.Run("daemon", func(t *testing.T) { check(t, "ctl-daemon") })
	d.stop(t)
}

// onTerminal runs agentd with its output on a pseudo-terminal and returns
// what the terminal was sent.
func onTerminal(t *testing.T, dir string, args ...string) string {
	t.Helper()
	master, tty, err := ptytest.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer master.Close()
	cmd := exec.Command(agentdBin, append([]string{"--data", dir}, args...)...)
	cmd.Env = append(os.Environ(), storeEnv(cmd.Args)...)
	cmd.Stdout, cmd.Stderr = tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var out strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := master.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			break
		}
	}
	cmd.Wait()
	return out.String()
}
