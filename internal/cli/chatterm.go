package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// chatTerm is the chat's terminal: a line editor with history
// (golang.org/x/term), Ctrl-C read as a key rather than taken as a signal,
// and a way to watch for it while a reply streams. The terminal is raw
// from newChatTerm to Close, so a crash in between leaves it raw (reset
// or stty sane restores it); Close restores it on every way out of chat.
//
// Its reading methods (ReadLine, WaitInterrupt) are called from one
// goroutine; Wake and Write from any.
type chatTerm struct {
	ctx   context.Context
	fd    int // the terminal (stdin)
	state *term.State
	ed    *term.Terminal
	hist  *chatHistory
	stop  func() bool // stops waking at the end of ctx

	// wakeR and wakeW are a pipe: a byte written to wakeW ends a wait for
	// the terminal (Wake).
	wakeR, wakeW int

	pending []byte // read from the terminal, not yet given to the editor
	intr    *interrupted
}

// ctrlCKey stands for Ctrl-C in what the line editor reads (x/term takes
// the Ctrl-C byte for the end of input, as Ctrl-D): a private-use rune
// that the editor hands to AutoCompleteCallback, followed by Enter, so
// that ReadLine returns and says it was interrupted.
const ctrlCKey = '\uE003'

// newChatTerm returns the chat's terminal, or nil when stdin and stdout
// are not both terminals (then chat reads plain lines). history is the
// history file ("": none is kept).
func newChatTerm(ctx context.Context, stdin io.Reader, stdout io.Writer, history string) (*chatTerm, error) {
	in, ok := stdin.(*os.File)
	out, ok2 := stdout.(*os.File)
	if !ok || !ok2 || !term.IsTerminal(int(in.Fd())) || !term.IsTerminal(int(out.Fd())) {
		return nil, nil
	}
	fd := int(in.Fd())
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		return nil, err
	}
	for _, f := range p {
		unix.CloseOnExec(f)
		unix.SetNonblock(f, true)
	}
	state, err := term.MakeRaw(fd)
	if err != nil {
		unix.Close(p[0])
		unix.Close(p[1])
		return nil, err
	}
	t := &chatTerm{ctx: ctx, fd: fd, state: state, wakeR: p[0], wakeW: p[1], hist: openHistory(history)}
	t.ed = term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{t, out}, "you> ")
	t.ed.History = t.hist
	t.ed.AutoCompleteCallback = t.key
	t.stop = context.AfterFunc(ctx, t.Wake)
	return t, nil
}

// Close restores the terminal.
func (t *chatTerm) Close() error {
	t.stop()
	err := term.Restore(t.fd, t.state)
	unix.Close(t.wakeR)
	unix.Close(t.wakeW)
	return err
}

// Write writes through the line editor: newlines become CR LF, and a
// prompt being edited is kept below what is written.
func (t *chatTerm) Write(p []byte) (int, error) { return t.ed.Write(p) }

// ReadLine reads an edited line. Ctrl-D on an empty line, the end of ctx
// or of the terminal is io.EOF; Ctrl-C is *interrupted.
func (t *chatTerm) ReadLine() (string, error) {
	if w, h, err := term.GetSize(t.fd); err == nil {
		t.ed.SetSize(w, h)
	}
	t.intr = nil
	line, err := t.ed.ReadLine()
	if t.intr != nil {
		return "", t.intr
	}
	return line, err
}

// key is the editor's AutoCompleteCallback: it sees the keys the editor
// does not handle itself, Ctrl-C among them.
func (t *chatTerm) key(line string, pos int, key rune) (string, int, bool) {
	if key != ctrlCKey {
		return "", 0, false
	}
	// Show ^C where the line ends, as shells do; Enter follows.
	t.intr = &interrupted{empty: line == ""}
	t.hist.skip = true
	return line + "^C", len(line) + 2, true
}

// Read gives the line editor the terminal's keys.
func (t *chatTerm) Read(p []byte) (int, error) {
	for len(t.pending) == 0 {
		if t.ctx.Err() != nil {
			return 0, io.EOF
		}
		ready, err := t.wait()
		if err != nil {
			return 0, err
		}
		if !ready {
			continue
		}
		b, err := t.read()
		if err != nil {
			return 0, err
		}
		t.pending = append(t.pending, editorKeys(b)...)
	}
	n := copy(p, t.pending)
	t.pending = t.pending[n:]
	return n, nil
}

// WaitInterrupt waits until done is closed (0) or Ctrl-C is pressed: it
// returns how many times. Other keys are kept for the next line.
func (t *chatTerm) WaitInterrupt(done <-chan struct{}) int {
	for {
		select {
		case <-done:
			return 0
		default:
		}
		ready, err := t.wait()
		if err != nil {
			<-done
			return 0
		}
		if !ready {
			continue
		}
		b, err := t.read()
		if err != nil {
			<-done
			return 0
		}
		n := bytes.Count(b, []byte{3})
		t.pending = append(t.pending, editorKeys(bytes.ReplaceAll(b, []byte{3}, nil))...)
		if n > 0 {
			return n
		}
	}
}

// Wake ends a wait for the terminal.
func (t *chatTerm) Wake() {
	unix.Write(t.wakeW, []byte{0}) // a full pipe has a wake pending already
}

// wait waits until the terminal has input (true) or Wake is called.
func (t *chatTerm) wait() (bool, error) {
	fds := []unix.PollFd{{Fd: int32(t.fd), Events: unix.POLLIN}, {Fd: int32(t.wakeR), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, err
		}
		if fds[1].Revents != 0 {
			var b [64]byte
			for {
				if n, _ := unix.Read(t.wakeR, b[:]); n <= 0 {
					break
				}
			}
			return false, nil
		}
		return fds[0].Revents != 0, nil
	}
}

// read reads what the terminal has; its end is io.EOF.
func (t *chatTerm) read() ([]byte, error) {
	var b [256]byte
	for {
		n, err := unix.Read(t.fd, b[:])
		switch {
		case n > 0:
			return b[:n], nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return nil, nil
		}
		return nil, io.EOF // hung up (0, or EIO)
	}
}

// editorKeys translates keys for the line editor: Ctrl-C becomes
// ctrlCKey and Enter, and the cursor keys some terminals send as SS3
// sequences (ESC O A) become the CSI ones the editor knows (ESC [ A); an
// SS3 sequence it would not know (F1: ESC O P) is dropped, never typed.
func editorKeys(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		switch {
		case b[i] == 3:
			out = append(out, string(ctrlCKey)+"\r"...)
		case b[i] == 0x1b && i+2 < len(b) && b[i+1] == 'O':
			if bytes.IndexByte([]byte("ABCDHF"), b[i+2]) >= 0 {
				out = append(out, 0x1b, '[', b[i+2])
			}
			i += 2
		default:
			out = append(out, b[i])
		}
	}
	return out
}
