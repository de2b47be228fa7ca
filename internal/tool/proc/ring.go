package proc

import (
	"fmt"
	"sync"
	"unicode/utf8"
)

// ring keeps a command's output within a bound: its first headCap bytes
// and its last tailCap bytes, with a count of all written, so a reader
// sees the start (how it began, the usage message) and the end (how it
// ended) of an output of any length. It is safe for concurrent writers
// (stdout and stderr) and readers (poll); changed is closed and renewed on
// each write, for a poll that waits.
type ring struct {
	mu      sync.Mutex
	headCap int
	tailCap int
	head    []byte
	tail    []byte // its last min(len, tailCap) bytes are kept; it is compacted past 2*tailCap
	n       int64  // bytes written in all
	changed chan struct{}
}

func newRing(limit int) *ring {
	if limit < 2 {
		limit = 2
	}
	return &ring{headCap: limit / 2, tailCap: limit - limit/2, changed: make(chan struct{})}
}

// Write keeps what fits the head, then the tail; it never fails.
func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(p)
	if room := r.headCap - len(r.head); room > 0 {
		k := min(room, len(p))
		r.head = append(r.head, p[:k]...)
		p = p[k:]
	}
	if len(p) > r.tailCap {
		p = p[len(p)-r.tailCap:]
	}
	r.tail = append(r.tail, p...)
	if len(r.tail) > 2*r.tailCap {
		r.tail = append(r.tail[:0:0], r.tail[len(r.tail)-r.tailCap:]...)
	}
	r.n += int64(n)
	if n > 0 {
		close(r.changed)
		r.changed = make(chan struct{})
	}
	return n, nil
}

// chunk is a read of a ring: Data, with Lost bytes no longer kept left
// out at Data[GapAt], and the offset to read from next.
type chunk struct {
	Data  []byte
	GapAt int
	Lost  int64
	Next  int64
}

// Since returns what is kept of the output from offset off on, at most
// limit bytes of it (limit <= 0: all), and a channel closed at the next
// write.
func (r *ring) Since(off int64, limit int) (chunk, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var c chunk
	off = min(max(off, 0), r.n)
	full := func() bool { return limit > 0 && len(c.Data) >= limit }
	take := func(b []byte) {
		if limit > 0 && len(c.Data)+len(b) > limit {
			b = b[:limit-len(c.Data)]
		}
		c.Data = append(c.Data, b...)
		off += int64(len(b))
	}
	if off < int64(len(r.head)) {
		take(r.head[off:])
	}
	kept := min(int64(len(r.tail)), int64(r.tailCap))
	if lo := r.n - kept; off < lo && !full() {
		c.GapAt, c.Lost = len(c.Data), lo-off
		off = lo
	}
	if !full() {
		take(r.tail[int64(len(r.tail))-(r.n-off):])
	}
	c.Next = off
	return c, r.changed
}

// Len is the count of bytes written.
func (r *ring) Len() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// String is the whole output as kept: the head, a line saying how many
// bytes were left out, the tail.
func (r *ring) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := min(int64(len(r.tail)), int64(r.tailCap))
	tail := r.tail[int64(len(r.tail))-kept:]
	lost := r.n - int64(len(r.head)) - kept
	if lost == 0 {
		return string(r.head) + string(tail)
	}
	head := r.head
	// The cuts fall on whole characters: a character cut in two is left
	// out and counted.
	if i := lastRuneStart(head); i >= 0 && !utf8.FullRune(head[i:]) {
		lost += int64(len(head) - i)
		head = head[:i]
	}
	for k := 0; k < utf8.UTFMax-1 && len(tail) > 0 && !utf8.RuneStart(tail[0]); k++ {
		tail = tail[1:]
		lost++
	}
	return string(head) + lostNote(lost) + string(tail)
}

// lastRuneStart is the index of the start of b's last character among its
// last bytes, -1 when there is none.
func lastRuneStart(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			return i
		}
	}
	return -1
}

// lostNote is the line between the head and the tail of a capped output.
func lostNote(lost int64) string {
	return fmt.Sprintf("\n… %d bytes left out …\n", lost)
}
