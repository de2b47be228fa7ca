package postgres

import (
	"context"
	"encoding/json"
	"time"

	"agentd/internal/event"
)

// LiveChannel carries a JSON array of live-only events (text deltas, tool
// starts and ends, turn starts, session states: never stored) from the
// node whose turn made them to the others, so that a client watching a
// session on another node sees its text as it streams. A payload stays
// under MaxLivePayload bytes; a live event larger than that alone is not
// relayed (the stored text is what counts).
const LiveChannel = "agentd_live"

// MaxLivePayload bounds a LiveChannel payload (PostgreSQL's limit is
// 8,000 bytes).
const MaxLivePayload = 7000

// liveEvery is how long the relay gathers live events before it sends
// them: one notification per interval while turns stream.
const liveEvery = 20 * time.Millisecond

const qNotifyLive = `SELECT pg_notify('agentd_live', $1)`

// LiveSource is where Relay takes this node's live events from: an
// event.Bus.
type LiveSource interface {
	SubscribeLocal(session int64, size int) *event.Subscription
}

// Relay sends this node's live-only events to the other nodes' listeners
// (LiveChannel) until ctx is done, gathered every 20 ms into payloads of
// at most MaxLivePayload bytes. It is best effort: what it cannot send
// (the database unreachable, the bus too fast for it) is dropped.
func (s *Store) Relay(ctx context.Context, src LiveSource) error {
	sub := src.SubscribeLocal(0, 4096)
	defer func() { sub.Close() }()
	t := time.NewTicker(liveEvery)
	defer t.Stop()
	var batch []json.RawMessage
	size := 2
	flush := func() {
		if len(batch) == 0 {
			return
		}
		payload, _ := json.Marshal(batch) // raw messages: cannot fail
		batch, size = batch[:0], 2
		if _, err := s.pool.Exec(ctx, qNotifyLive, string(payload)); err != nil && ctx.Err() == nil {
			s.log.Debug("live events not relayed", "err", err)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			flush()
		case e, ok := <-sub.C:
			if !ok {
				sub = src.SubscribeLocal(0, 4096) // dropped as too slow: what was missed is lost
				continue
			}
			if !e.Kind.Live() {
				continue
			}
			b, err := json.Marshal(e)
			if err != nil || len(b)+2 > MaxLivePayload {
				continue
			}
			if size+len(b)+1 > MaxLivePayload {
				flush()
			}
			batch = append(batch, b)
			size += len(b) + 1
		}
	}
}

// liveEvents reads a LiveChannel payload, keeping only live-only events.
func liveEvents(payload string) ([]event.Event, error) {
	var evs []event.Event
	if err := json.Unmarshal([]byte(payload), &evs); err != nil {
		return nil, err
	}
	out := evs[:0]
	for _, e := range evs {
		if e.Kind.Live() && e.Session > 0 {
			e.Seq = 0
			out = append(out, e)
		}
	}
	return out, nil
}
