// Package sse reads Server-Sent Events streams, the framing both model APIs
// agentd talks to (OpenAI-compatible Chat Completions and Anthropic Messages)
// use for streamed responses.
//
// The Reader follows the parsing rules of the HTML Living Standard's
// "event stream interpretation": lines end in CRLF, LF or CR; lines starting
// with ":" are comments; "data" lines are joined with "\n"; a blank line
// dispatches the event. It does not reconnect, so "retry" is ignored.
//
// It is on the path of every streamed token, so it reuses its buffers and
// allocates only the Data string of each event (and the Type or ID when they
// change).
package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxEventBytes is the largest event data accepted when
// Options.MaxEventBytes is 0.
const DefaultMaxEventBytes = 4 << 20

// ErrEventTooLarge is returned when an event's data, or a single line of the
// stream, exceeds the configured maximum.
var ErrEventTooLarge = errors.New("sse: event too large")

// Options configures a Reader. The zero value (or nil) is ready to use.
type Options struct {
	// MaxEventBytes caps the data of one event (the joined data lines) and
	// the length of any one line. 0 means DefaultMaxEventBytes.
	MaxEventBytes int
}

// Event is one dispatched event.
type Event struct {
	// Type is the value of the "event" field, empty when the event has none
	// (browsers call such events "message").
	Type string
	// Data is the event's data lines joined with "\n".
	Data string
	// ID is the last event ID seen on the stream; as in the standard, it
	// persists from one event to the next until an "id" field changes it.
	ID string
}

// lineSlack is how much longer than MaxEventBytes a line may be, to make room
// for the field name and separator ("data: ") of a line carrying the largest
// allowed data.
const lineSlack = 64

const initialBufSize = 4096

// Reader reads events from a stream. It is not safe for concurrent use.
type Reader struct {
	r       io.Reader
	max     int
	buf     []byte
	start   int  // first unread byte in buf
	end     int  // end of valid bytes in buf
	scanned int  // bytes after start known to hold no line terminator
	skipLF  bool // the last line ended in CR: a following LF belongs to it
	bomDone bool
	rerr    error // error from r, reported once buffered lines are used up
	err     error // sticky error returned by Next

	data    []byte // data buffer of the event being assembled
	hasData bool   // a data field was seen (data may still be empty)
	typ     []byte // event type buffer
	pending bool   // a field has been seen since the last dispatch

	lastType string // string form of the last dispatched type, reused
	id       string // last event ID
}

// NewReader returns a Reader reading events from r.
func NewReader(r io.Reader, opts *Options) *Reader {
	limit := DefaultMaxEventBytes
	if opts != nil && opts.MaxEventBytes > 0 {
		limit = opts.MaxEventBytes
	}
	size := min(initialBufSize, limit+lineSlack)
	return &Reader{r: r, max: limit, buf: make([]byte, size)}
}

// maxKept bounds the buffers Reset keeps: one that grew for an unusually
// large event is left to the garbage collector.
const maxKept = 64 << 10

// Reset makes r read events from src as a new Reader would, with the same
// options, keeping its buffers: a Reader can serve stream after stream
// (Reset(nil) drops its hold on the last one).
func (r *Reader) Reset(src io.Reader) {
	buf, data, typ := r.buf, r.data[:0], r.typ[:0]
	if size := min(initialBufSize, r.max+lineSlack); len(buf) > maxKept || len(buf) < size {
		buf = make([]byte, size)
	}
	if cap(data) > maxKept {
		data = nil
	}
	*r = Reader{r: src, max: r.max, buf: buf, data: data, typ: typ}
}

// Next returns the next event. It returns io.EOF when the stream ends
// cleanly between events, io.ErrUnexpectedEOF when it ends in the middle of
// an event (which is then discarded, as the standard says), ErrEventTooLarge
// (wrapped) when an event or line exceeds the maximum, and the underlying
// reader's error otherwise. After an error every call returns the same error.
func (r *Reader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	for {
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF && r.pending {
				err = io.ErrUnexpectedEOF
			}
			r.err = err
			return Event{}, err
		}
		if len(line) == 0 {
			if ev, ok := r.dispatch(); ok {
				return ev, nil
			}
			continue
		}
		if err := r.field(line); err != nil {
			r.err = err
			return Event{}, err
		}
	}
}

// dispatch ends the event being assembled. It reports false when there is
// nothing to dispatch (no data field), in which case the event is dropped.
func (r *Reader) dispatch() (Event, bool) {
	r.pending = false
	if !r.hasData {
		r.typ = r.typ[:0]
		return Event{}, false
	}
	ev := Event{Data: string(r.data), ID: r.id}
	if len(r.typ) > 0 {
		if string(r.typ) != r.lastType {
			r.lastType = string(r.typ)
		}
		ev.Type = r.lastType
	}
	r.data = r.data[:0]
	r.hasData = false
	r.typ = r.typ[:0]
	return ev, true
}

// field processes one non-empty line.
func (r *Reader) field(line []byte) error {
	if line[0] == ':' {
		return nil // comment
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	r.pending = true
	switch string(name) {
	case "data":
		n := len(r.data) + len(value)
		if r.hasData {
			n++
		}
		if n > r.max {
			return fmt.Errorf("%w: data exceeds %d bytes", ErrEventTooLarge, r.max)
		}
		if r.hasData {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, value...)
		r.hasData = true
	case "event":
		r.typ = append(r.typ[:0], value...)
	case "id":
		if bytes.IndexByte(value, 0) < 0 && string(value) != r.id {
			r.id = string(value)
		}
	}
	return nil
}

// readLine returns the next line without its terminator. The slice is valid
// until the next call. At the end of input, leftover bytes without a line
// terminator are an unfinished line and so an unfinished event.
func (r *Reader) readLine() ([]byte, error) {
	for {
		if r.skipLF && r.start < r.end {
			if r.buf[r.start] == '\n' {
				r.start++
			}
			r.skipLF = false
		}
		if !r.bomDone {
			b := r.buf[r.start:r.end]
			switch {
			case bytes.HasPrefix(b, bom):
				r.start += len(bom)
				r.bomDone = true
			case len(b) < len(bom) && bytes.HasPrefix(bom, b) && r.rerr == nil:
				// Possibly the start of a byte order mark: read more.
				if err := r.fill(); err != nil {
					return nil, err
				}
				continue
			default:
				r.bomDone = true
			}
		}
		b := r.buf[r.start:r.end]
		if i := indexEOL(b[r.scanned:]); i >= 0 {
			i += r.scanned
			r.scanned = 0
			r.start += i + 1
			if b[i] == '\r' {
				r.skipLF = true
			}
			return b[:i], nil
		}
		r.scanned = len(b)
		if r.rerr != nil {
			if len(b) > 0 {
				r.pending = true
				r.start, r.scanned = r.end, 0
			}
			return nil, r.rerr
		}
		if err := r.fill(); err != nil {
			return nil, err
		}
	}
}

var bom = []byte("\xEF\xBB\xBF")

// indexEOL returns the index of the first CR or LF in b, or -1.
func indexEOL(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	lim := b
	if i >= 0 {
		lim = b[:i]
	}
	if j := bytes.IndexByte(lim, '\r'); j >= 0 {
		return j
	}
	return i
}

// fill reads more input into buf, compacting or growing it as needed.
func (r *Reader) fill() error {
	if r.start > 0 {
		n := copy(r.buf, r.buf[r.start:r.end])
		r.start, r.end = 0, n
	}
	if r.end == len(r.buf) {
		lim := r.max + lineSlack
		if len(r.buf) >= lim {
			return fmt.Errorf("%w: line exceeds %d bytes", ErrEventTooLarge, lim)
		}
		size := 2 * len(r.buf)
		if size > lim {
			size = lim
		}
		nb := make([]byte, size)
		copy(nb, r.buf[:r.end])
		r.buf = nb
	}
	for range 100 {
		n, err := r.r.Read(r.buf[r.end:])
		if n < 0 || n > len(r.buf)-r.end {
			return errors.New("sse: reader returned an invalid count")
		}
		r.end += n
		if err != nil {
			r.rerr = err
			return nil
		}
		if n > 0 {
			return nil
		}
	}
	r.rerr = io.ErrNoProgress
	return nil
}
