package stream

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
)

// Buffer sizes of a hijacked connection. net/http hands over 4 KiB for
// each direction, which idle connections would hold for nothing: client
// messages are small, and an event frame up to writeBuffer bytes still
// goes out in one write.
const (
	readBuffer  = 256
	writeBuffer = 512
)

// smallBuffers hands the WebSocket library the hijacked connection with
// smaller buffers than net/http's, writing through a corkWriter it leaves
// in *cw.
type smallBuffers struct {
	http.ResponseWriter
	cw **corkWriter
}

func (s smallBuffers) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s smallBuffers) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	rwc, brw, err := http.NewResponseController(s.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if brw.Writer.Buffered() > 0 {
		if err := brw.Writer.Flush(); err != nil {
			rwc.Close()
			return nil, nil, err
		}
	}
	br := brw.Reader
	if br.Buffered() == 0 {
		br = bufio.NewReaderSize(rwc, readBuffer)
	}
	// else the client sent more right after its handshake: keep the
	// reader that holds it (the WebSocket library takes it from there).
	cw := &corkWriter{w: rwc}
	*s.cw = cw
	return rwc, bufio.NewReadWriter(br, bufio.NewWriterSize(cw, writeBuffer)), nil
}

// corkWriter passes writes on to the connection, or, while corked, gathers
// them to send in one write when uncorked: a connection with several
// frames queued sends them with one system call instead of one each,
// which is what keeps a fan-out to many connections from falling behind.
// It is safe for concurrent use (the WebSocket library answers pings from
// its own goroutines).
type corkWriter struct {
	w      io.Writer
	mu     sync.Mutex
	corked bool
	buf    []byte
}

func (c *corkWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	return c.w.Write(p)
}

func (c *corkWriter) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork sends what was gathered.
func (c *corkWriter) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.w.Write(c.buf)
	c.buf = c.buf[:0]
	if cap(c.buf) > 64<<10 {
		c.buf = nil // an idle connection keeps no large buffer
	}
	return err
}
