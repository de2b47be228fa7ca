package stream

import (
	"bufio"
	"net"
	"net/http"
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
// smaller buffers than net/http's.
type smallBuffers struct {
	http.ResponseWriter
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
	return rwc, bufio.NewReadWriter(br, bufio.NewWriterSize(rwc, writeBuffer)), nil
}
