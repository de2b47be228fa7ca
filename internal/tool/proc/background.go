package proc

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// session is one session's background processes. Its fields are guarded
// by Manager.mu; once out of Manager.sessions (CloseSession, Close) it is
// changed no more, and killAll reads it without the lock.
type session struct {
	next     int                // the number of the last id given
	starting int                // processes being started, not yet in procs
	procs    map[string]*bgProc // by id
	order    []string           // ids, oldest first
}

// bgProc is a background process. Its exit and err are written before done
// is closed; cursor (where the next poll reads) is guarded by Manager.mu.
type bgProc struct {
	id      string
	argv    []string
	dir     string
	started time.Time
	prep    *prepared

	p      Process
	out    *ring
	stdin  *stdin
	done   chan struct{}
	exit   Exit
	err    error
	cursor int64
}

func (b *bgProc) ended() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

func (s *session) killAll() {
	for _, b := range s.procs {
		if !b.ended() {
			b.p.Kill()
		}
	}
}

// running counts the session's processes that have not ended.
func (s *session) running() int {
	n := 0
	for _, b := range s.procs {
		if !b.ended() {
			n++
		}
	}
	return n
}

// prune forgets the oldest ended processes past keep.
func (s *session) prune(keep int) {
	ended := 0
	for _, id := range s.order {
		if s.procs[id].ended() {
			ended++
		}
	}
	for i := 0; i < len(s.order) && ended > keep; {
		id := s.order[i]
		if s.procs[id].ended() {
			delete(s.procs, id)
			s.order = append(s.order[:i], s.order[i+1:]...)
			ended--
			continue
		}
		i++
	}
}

// start runs p in the background for the session at addr with first as
// its first input. The command starts outside Manager.mu (a slot of the
// session's limit is held for it meanwhile), so that starting one never
// holds another session's calls.
func (m *Manager) start(addr string, p *prepared, first string) (*bgProc, error) {
	if len(first) > m.o.StdinBytes {
		return nil, fmt.Errorf("%w: stdin has %d bytes, the most is %d", ErrStdin, len(first), m.o.StdinBytes)
	}
	s, err := m.reserve(addr, p.settings.Exec.MaxProcesses)
	if err != nil {
		return nil, err
	}
	b, err := m.launch(p, first)
	m.mu.Lock()
	s.starting--
	if err == nil && (m.closed || m.sessions[addr] != s) { // Close or CloseSession came meanwhile
		err = ErrClosed
		defer func() { b.p.Kill(); <-b.done }()
	}
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	defer m.mu.Unlock()
	s.next++
	b.id = "p" + strconv.Itoa(s.next)
	s.procs[b.id] = b
	s.order = append(s.order, b.id)
	s.prune(m.o.KeepEnded)
	return b, nil
}

// reserve holds a slot of the session at addr for a process to start.
func (m *Manager) reserve(addr string, most int) (*session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	s := m.sessions[addr]
	if s == nil {
		s = &session{procs: map[string]*bgProc{}}
		m.sessions[addr] = s
	}
	if n := s.running() + s.starting; n >= most {
		return nil, fmt.Errorf("%w: this session runs %d, the most exec.max_processes allows; kill one first", ErrLimit, n)
	}
	s.starting++
	return s, nil
}

// launch starts p's command with its input and output, and the goroutines
// that own them (counted in Manager.wg; they end with the command).
func (m *Manager) launch(p *prepared, first string) (*bgProc, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	b := &bgProc{argv: p.spec.Argv, dir: p.dir, started: m.o.Now(), prep: p,
		out: newRing(m.o.OutputBytes), done: make(chan struct{})}
	b.stdin = newStdin(pw, m.o.StdinBytes)
	p.spec.Stdin, p.spec.Stdout, p.spec.Stderr = pr, b.out, b.out
	b.p, err = m.startIn(m.ctx, p)
	pr.Close() // the command holds its own copy
	if err != nil {
		pw.Close()
		return nil, err
	}
	if first != "" {
		b.stdin.write(first, false) //nolint:errcheck // fits: checked against the bound, the buffer is empty
	}
	m.wg.Add(2)
	go func() { defer m.wg.Done(); b.stdin.pump(b.done) }()
	go func() {
		defer m.wg.Done()
		b.exit, b.err = b.p.Wait()
		b.stdin.stop() // a write to what the command left holding its input ends
		close(b.done)
	}()
	return b, nil
}

// stdin is a background process's input: what write gives is buffered
// (bounded) and written by pump, so that a process that does not read
// never blocks a turn.
type stdin struct {
	mu   sync.Mutex
	f    *os.File
	buf  []byte
	eof  bool
	max  int
	wake chan struct{} // 1-buffered: something to write
}

func newStdin(f *os.File, max int) *stdin {
	return &stdin{f: f, max: max, wake: make(chan struct{}, 1)}
}

// write queues data (and the end of input with eof).
func (s *stdin) write(data string, eof bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.eof {
		return ErrInputClosed
	}
	if len(s.buf)+len(data) > s.max {
		return fmt.Errorf("%w: %d bytes wait to be read, the most is %d", ErrStdin, len(s.buf), s.max)
	}
	s.buf = append(s.buf, data...)
	s.eof = eof
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// stop makes a write blocked in pump, and those after, fail.
func (s *stdin) stop() {
	s.f.SetWriteDeadline(time.Unix(1, 0)) //nolint:errcheck // closed already: nothing to unblock
}

// pump writes what is queued to the process until the end of input or of
// the process (done); it closes the pipe.
func (s *stdin) pump(done <-chan struct{}) {
	defer s.f.Close()
	for {
		s.mu.Lock()
		data, eof := s.buf, s.eof
		s.buf = nil
		s.mu.Unlock()
		if len(data) > 0 {
			if _, err := s.f.Write(data); err != nil {
				return
			}
			continue
		}
		if eof {
			return
		}
		select {
		case <-s.wake:
		case <-done:
			return
		}
	}
}
