package permit

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func req(id string, ttl time.Duration) Request {
	now := time.Now()
	return Request{ID: id, Tool: "t", CreatedAt: now, ExpiresAt: now.Add(ttl)}
}

func TestGrantAndDeny(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New()
		for _, want := range []Decision{{Granted: true, By: "cli"}, {Granted: false, Reason: "not today", By: "api"}} {
			got := make(chan Decision)
			go func() {
				d, err := b.Wait(context.Background(), req("a1", time.Hour))
				if err != nil {
					t.Error(err)
				}
				got <- d
			}()
			synctest.Wait()
			if l := b.List(); len(l) != 1 || l[0].ID != "a1" {
				t.Fatalf("List = %+v", l)
			}
			if err := b.Resolve("a1", want); err != nil {
				t.Fatal(err)
			}
			if d := <-got; !cmp.Equal(d, want) {
				t.Errorf("decision %+v, want %+v", d, want)
			}
			if len(b.List()) != 0 {
				t.Error("still listed after Resolve")
			}
		}
	})
}

func TestExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New()
		start := time.Now()
		d, err := b.Wait(context.Background(), req("a1", 10*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if !d.Expired || d.Granted {
			t.Errorf("decision %+v, want expired denial", d)
		}
		if el := time.Since(start); el != 10*time.Minute {
			t.Errorf("expired after %s", el)
		}
		if err := b.Resolve("a1", Decision{Granted: true}); !errors.Is(err, ErrNotFound) {
			t.Errorf("Resolve after expiry: %v, want ErrNotFound", err)
		}
	})
}

func TestCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New()
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error)
		go func() {
			_, err := b.Wait(ctx, req("a1", time.Hour))
			errc <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("Wait = %v, want context.Canceled", err)
		}
		if _, ok := b.Get("a1"); ok {
			t.Error("cancelled request still waiting")
		}
	})
}

func TestDuplicateAndUnknown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New()
		go b.Wait(context.Background(), req("a1", time.Minute))
		synctest.Wait()
		if _, err := b.Wait(context.Background(), req("a1", time.Minute)); err == nil {
			t.Error("second Wait with the same id succeeded")
		}
		if err := b.Resolve("nope", Decision{}); !errors.Is(err, ErrNotFound) {
			t.Errorf("Resolve(unknown) = %v", err)
		}
		b.Resolve("a1", Decision{})
	})
}
