//go:build linux

package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"agentd/internal/model/fakellm"
	"agentd/internal/ptytest"
)

// lockedBuffer is a bytes.Buffer for one writer and one reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The chat in a terminal, in process (cli.Main on a pseudo-terminal):
// Ctrl-C cancels a streaming reply and the chat goes on, the arrows edit
// and recall, a line that starts with // is sent with one /, and Ctrl-C
// twice on an empty line leaves, restoring the terminal.
func TestChatInTerminal(t *testing.T) {
	script, err := fakellm.ParseScript("t", []byte("match ^slow\nchunks 20\ngap 300ms\nsay one two three four five six seven eight nine ten\n\nmatch *\nsay got: {{last_user}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go fakellm.New(script, nil).Serve(ctx, ln)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "agents"), 0o700)
	os.WriteFile(filepath.Join(dir, "agents", "a.yaml"), []byte("model:\n  provider: openai\n  name: fake\n  base_url: http://"+ln.Addr().String()+"/v1\n"), 0o600)

	master, tty, err := ptytest.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer master.Close()
	defer tty.Close()
	out := &lockedBuffer{}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	before, err := getTermios(tty)
	if err != nil {
		t.Fatal(err)
	}
	code := make(chan int, 1)
	go func() { code <- Main(ctx, []string{"--data", dir, "chat", "a", "--session", "t"}, tty, tty, tty) }()

	prompts := 1
	step := func(keys, shows string) {
		t.Helper()
		waitShown(t, out, "you> ", prompts)
		n := strings.Count(out.String(), shows)
		master.WriteString(keys)
		waitShown(t, out, shows, n+1)
		prompts++
	}
	waitShown(t, out, "you> ", prompts)
	master.WriteString("slow\r")
	waitShown(t, out, "one", 1)
	master.WriteString("\x03")
	waitShown(t, out, "[turn cancelled]", 1)
	prompts++
	step("hi\x1b[D\x1b[Do\r", "got: ohi")
	step("\x1b[A\r", "got: ohi")
	step("//etc/hosts\r", "got: /etc/hosts")
	step("\x03", "Ctrl-C again")
	waitShown(t, out, "you> ", prompts)
	master.WriteString("\x03")
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("chat exit code %d:\n%q", c, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("chat did not end:\n%q", out.String())
	}
	after, err := getTermios(tty)
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Errorf("the terminal's mode was not restored")
	}
}

func getTermios(f *os.File) (*unix.Termios, error) {
	return unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
}

func waitShown(t *testing.T, out *lockedBuffer, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(out.String(), s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal did not show %q %d times:\n%q", s, n, out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
