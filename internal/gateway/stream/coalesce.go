package stream

import (
	"encoding/json"
	"strconv"
	"sync"

	"agentd/internal/event"
	"agentd/internal/jsonstr"
)

// Coalescing: when a connection's writer finds several text deltas of one
// step queued one after the other for the same subscription, it sends them
// as one event frame whose text is theirs joined, and whose "deltas" field
// says how many it stands for. A connection that keeps up sees one frame a
// delta; one that falls behind (a fan-out to many clients, a slow network)
// catches up with fewer, larger frames instead of a frame each, and a
// client that appends each delta's text to the step's text reads the same
// text either way.

// delta is what coalescing needs of a text-delta event. It is shared by
// every connection the event is queued for and decoded only when one of
// them has a delta to join it to.
type delta struct {
	head int   // the frame body's length before its data field
	turn int64 // the event's turn
	raw  json.RawMessage

	once sync.Once
	d    event.DeltaData
	ok   bool // raw decoded
}

func newDelta(e *event.Event, head int) *delta {
	return &delta{head: head, turn: e.Turn, raw: e.Data}
}

func (d *delta) data() (*event.DeltaData, bool) {
	d.once.Do(func() { d.ok = json.Unmarshal(d.raw, &d.d) == nil })
	return &d.d, d.ok
}

// joins reports whether b's text delta may be joined to a's in one frame:
// the same subscription, session, turn, step, attempt and kind of text.
func joins(a, b *frame) bool {
	if a.delta == nil || b.delta == nil || a.session != b.session || a.delta.turn != b.delta.turn ||
		len(a.pre) == 0 || len(b.pre) == 0 || &a.pre[0] != &b.pre[0] { // one subscription's prefix
		return false
	}
	da, ok := a.delta.data()
	if !ok {
		return false
	}
	db, ok := b.delta.data()
	return ok && da.Step == db.Step && da.Attempt == db.Attempt && da.Reasoning == db.Reasoning
}

// coalesce joins each run of text deltas in batch that may be joined into
// one frame, in place, and returns the batch that is left. A joined frame
// records how many queued frames it stands for and what they cost the
// queue (parts, partsCost).
func (c *conn) coalesce(batch []frame) []frame {
	out := batch[:0]
	for i := 0; i < len(batch); {
		j := i + 1
		for j < len(batch) && joins(&batch[j-1], &batch[j]) {
			j++
		}
		if j-i == 1 {
			out = append(out, batch[i])
			i++
			continue
		}
		f := batch[i]
		cost := 0
		for k := i; k < j; k++ {
			cost += c.cost(&batch[k])
		}
		f.body = joinDeltas(batch[i:j])
		f.delta, f.parts, f.partsCost = nil, j-i, cost
		out = append(out, f)
		i = j
	}
	return out
}

// joinDeltas encodes the fields of one event frame (after the prefix) for
// a run of text deltas that join: the first one's fields up to its data,
// "deltas" (how many), and data with their text joined and the step,
// attempt and kind they share, as the engine writes a delta's data.
func joinDeltas(run []frame) []byte {
	first := run[0]
	d, _ := first.delta.data()
	n := 0
	for i := range run {
		t, _ := run[i].delta.data()
		n += len(t.Text)
	}
	b := make([]byte, 0, first.delta.head+n+n/8+80)
	b = append(b, first.body[:first.delta.head]...)
	b = append(b, `,"deltas":`...)
	b = strconv.AppendInt(b, int64(len(run)), 10)
	b = append(b, `,"data":{"text":"`...)
	for i := range run {
		t, _ := run[i].delta.data()
		b = jsonstr.AppendEscaped(b, t.Text)
	}
	b = append(b, '"')
	if d.Reasoning {
		b = append(b, `,"reasoning":true`...)
	}
	b = append(b, `,"step":`...)
	b = strconv.AppendInt(b, int64(d.Step), 10)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(d.Attempt), 10)
	return append(b, "}}"...)
}
