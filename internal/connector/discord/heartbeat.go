package discord

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// errZombie: no HEARTBEAT_ACK came between two heartbeats: the connection
// is dead though no one closed it. The client drops it and resumes.
var errZombie = errors.New("discord: no heartbeat ack: the connection is a zombie")

// heartbeat keeps one gateway connection alive. Its owner is the
// connection: it ends when ctx does (the connection closed) or on a zombie.
type heartbeat struct {
	interval time.Duration
	acked    atomic.Bool   // the last beat was acknowledged (op 11)
	now      chan struct{} // the gateway asked for a beat (op 1)
}

func newHeartbeat(interval time.Duration) *heartbeat {
	hb := &heartbeat{interval: interval, now: make(chan struct{}, 1)}
	hb.acked.Store(true)
	return hb
}

// ack records a HEARTBEAT_ACK.
func (hb *heartbeat) ack() { hb.acked.Store(true) }

// beatNow asks for a beat at once (the gateway's op 1).
func (hb *heartbeat) beatNow() {
	select {
	case hb.now <- struct{}{}:
	default:
	}
}

// run sends the first beat after interval × a random jitter in [0, 1) (as
// Discord asks, so that clients reconnecting together do not beat
// together), then one every interval. A beat due while the one before is
// unacknowledged is a zombie: run returns errZombie. send's error ends run
// with it; ctx's end ends it with nil.
func (hb *heartbeat) run(ctx context.Context, send func(context.Context) error) error {
	t := time.NewTimer(time.Duration(rand.Float64() * float64(hb.interval)))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hb.now:
		case <-t.C:
			if !hb.acked.Swap(false) {
				return errZombie
			}
			t.Reset(hb.interval)
		}
		if err := send(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}
