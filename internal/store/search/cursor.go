package search

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"unicode/utf8"

	"agentd/internal/store"
)

// Paging cursors are opaque to callers. A history cursor holds the
// snapshot a first page fixed (the newest event id it could find), the
// offset of the next page and a sum of the query it belongs to; a thread
// cursor holds the last listed session's updated time and id. Both stores
// write the same format.

// Cursor prefixes, one per kind of cursor and format.
const (
	historyCursorPrefix = "h1"
	threadCursorPrefix  = "t1"
)

// QuerySum identifies a query for its cursors: match is the store's form
// of the query, agents the agents it is limited to (as JSON), since and
// until its time range in unix nanoseconds.
func QuerySum(match, agents string, since, until int64) uint32 {
	h := fnv.New32a()
	h.Write([]byte(match))
	h.Write([]byte{0})
	h.Write([]byte(agents))
	h.Write(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, uint64(since)), uint64(until)))
	return h.Sum32()
}

// EncodeHistoryCursor returns the cursor of the page at offset in
// snapshot snap of the query with sum.
func EncodeHistoryCursor(snap, offset int64, sum uint32) string {
	b := binary.AppendUvarint(nil, uint64(snap))
	b = binary.AppendUvarint(b, uint64(offset))
	b = binary.LittleEndian.AppendUint32(b, sum)
	return historyCursorPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// DecodeHistoryCursor reads a history cursor of the query with sum; a
// malformed one, or one of another query, is store.ErrBadCursor.
func DecodeHistoryCursor(c string, sum uint32) (snap, offset int64, err error) {
	b, err := cursorBytes(c, historyCursorPrefix)
	if err != nil {
		return 0, 0, err
	}
	s, n := binary.Uvarint(b)
	if n <= 0 || s > math.MaxInt64 {
		return 0, 0, fmt.Errorf("%w %q", store.ErrBadCursor, c)
	}
	b = b[n:]
	o, n := binary.Uvarint(b)
	if n <= 0 || o > math.MaxInt32 {
		return 0, 0, fmt.Errorf("%w %q", store.ErrBadCursor, c)
	}
	b = b[n:]
	if len(b) != 4 {
		return 0, 0, fmt.Errorf("%w %q", store.ErrBadCursor, c)
	}
	if binary.LittleEndian.Uint32(b) != sum {
		return 0, 0, fmt.Errorf("%w: it belongs to another query", store.ErrBadCursor)
	}
	return int64(s), int64(o), nil
}

// EncodeThreadCursor returns the cursor of the threads listed after the
// session with this updated time (unix nanoseconds) and id.
func EncodeThreadCursor(updated, id int64) string {
	b := binary.AppendVarint(nil, updated)
	b = binary.AppendUvarint(b, uint64(id))
	return threadCursorPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// DecodeThreadCursor reads a thread cursor; a malformed one is
// store.ErrBadCursor.
func DecodeThreadCursor(c string) (updated, id int64, err error) {
	b, err := cursorBytes(c, threadCursorPrefix)
	if err != nil {
		return 0, 0, err
	}
	u, n := binary.Varint(b)
	if n <= 0 {
		return 0, 0, fmt.Errorf("%w %q", store.ErrBadCursor, c)
	}
	i, m := binary.Uvarint(b[n:])
	if m <= 0 || n+m != len(b) || i > math.MaxInt64 {
		return 0, 0, fmt.Errorf("%w %q", store.ErrBadCursor, c)
	}
	return u, int64(i), nil
}

func cursorBytes(c, prefix string) ([]byte, error) {
	rest, ok := strings.CutPrefix(c, prefix)
	if !ok || len(rest) > 64 {
		return nil, fmt.Errorf("%w %q", store.ErrBadCursor, c)
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return nil, fmt.Errorf("%w %q", store.ErrBadCursor, c)
	}
	return b, nil
}

// EventText returns the "text" field of an event payload ("" if none):
// what a history search indexes of input, system_message and text events.
func EventText(data []byte) string {
	var p struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(data, &p) != nil {
		return ""
	}
	return p.Text
}

// Thread titles are cut to this many bytes.
const maxTitle = 120

// ThreadTitle makes a one-line title of at most maxTitle bytes from text
// (a thread's first input).
func ThreadTitle(text string) string {
	t := strings.Join(strings.Fields(text), " ")
	if len(t) <= maxTitle {
		return t
	}
	cut := maxTitle
	for cut > 0 && !utf8.RuneStart(t[cut]) {
		cut--
	}
	return t[:cut] + "…"
}
