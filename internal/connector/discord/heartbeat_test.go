package discord

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = 40 * time.Second
		hb := newHeartbeat(interval)
		beats := make(chan struct{}, 10)
		done := make(chan error, 1)
		go func() {
			done <- hb.run(context.Background(), func(context.Context) error {
				beats <- struct{}{}
				return nil
			})
		}()
		// The first beat comes within one interval (jittered); each acked
		// one is followed by another an interval later.
		time.Sleep(interval)
		synctest.Wait()
		if len(beats) != 1 {
			t.Fatalf("beats after one interval = %d, want 1", len(beats))
		}
		for range 3 {
			hb.ack()
			time.Sleep(interval)
			synctest.Wait()
		}
		if len(beats) != 4 {
			t.Fatalf("beats = %d, want 4", len(beats))
		}
		// The gateway asks for a beat: it goes at once.
		hb.ack()
		hb.beatNow()
		synctest.Wait()
		if len(beats) != 5 {
			t.Fatalf("beats after op 1 = %d, want 5", len(beats))
		}
		// No ack before the next beat is due: a zombie.
		time.Sleep(interval)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("run ended early: %v", err)
		default:
		}
		time.Sleep(interval)
		if err := <-done; !errors.Is(err, errZombie) {
			t.Fatalf("run = %v, want errZombie", err)
		}
	})
}
