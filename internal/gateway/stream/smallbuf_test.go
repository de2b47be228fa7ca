package stream

import (
	"bytes"
	"errors"
	"sync"
	"testing"
)

// countWriter counts the writes that reach it.
type countWriter struct {
	mu     sync.Mutex
	writes int
	buf    bytes.Buffer
	err    error
}

func (w *countWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	w.buf.Write(p)
	return len(p), w.err
}

// While corked, writes are gathered and leave in one write when uncorked;
// otherwise they pass straight through.
func TestCorkWriter(t *testing.T) {
	w := &countWriter{}
	c := &corkWriter{w: w}
	c.Write([]byte("a"))
	c.cork()
	c.Write([]byte("b"))
	c.Write([]byte("c"))
	if w.writes != 1 {
		t.Fatalf("%d writes while corked, want only the one before", w.writes)
	}
	if err := c.uncork(); err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("d"))
	if w.writes != 3 || w.buf.String() != "abcd" {
		t.Errorf("%d writes of %q, want 3 of \"abcd\"", w.writes, w.buf.String())
	}
	// Uncorking with nothing gathered writes nothing.
	c.cork()
	c.uncork()
	if w.writes != 3 {
		t.Errorf("an empty uncork wrote")
	}
	// A failed write is reported by uncork.
	w.err = errors.New("broken")
	c.cork()
	c.Write([]byte("e"))
	if err := c.uncork(); err == nil {
		t.Error("uncork hid a failed write")
	}
}

// Writes from other goroutines (the library's pongs) while corked are
// neither lost nor interleaved inside another write.
func TestCorkWriterConcurrent(t *testing.T) {
	w := &countWriter{}
	c := &corkWriter{w: w}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				c.Write([]byte("xy"))
			}
		})
	}
	for range 50 {
		c.cork()
		c.Write([]byte("xy"))
		c.uncork()
	}
	wg.Wait()
	if got := w.buf.Len(); got != 2*(800+50) {
		t.Errorf("%d bytes written, want %d", got, 2*850)
	}
	if bytes.Contains(w.buf.Bytes(), []byte("xx")) || bytes.Contains(w.buf.Bytes(), []byte("yy")) {
		t.Error("writes interleaved")
	}
}
