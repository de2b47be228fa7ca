package discord

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"agentd/internal/connector"
)

func headers(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// waits starts a wait for r; done reports, once every goroutine of the
// bubble is blocked, whether it returned.
func waits(t *testing.T, l *limiter, r route) (done func() bool) {
	ch := make(chan error, 1)
	go func() { ch <- l.wait(context.Background(), r) }()
	return func() bool {
		synctest.Wait()
		select {
		case err := <-ch:
			if err != nil {
				t.Errorf("wait = %v", err)
			}
			return true
		default:
			return false
		}
	}
}

func TestBucketWaitsForReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter()
		r := channelRoute("POST", "300", "/messages")
		other := channelRoute("POST", "301", "/messages")
		l.update(r, headers("X-RateLimit-Bucket", "abc", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset-After", "2.5"), 200, nil, time.Now())
		l.update(other, headers("X-RateLimit-Bucket", "abc", "X-RateLimit-Remaining", "3", "X-RateLimit-Reset-After", "2.5"), 200, nil, time.Now())

		done := waits(t, l, r)
		if done() {
			t.Fatal("a call on a spent bucket did not wait")
		}
		if !waits(t, l, other)() {
			t.Error("a call on the same bucket of another channel waited")
		}
		time.Sleep(2499 * time.Millisecond)
		if done() {
			t.Fatal("the call went before the bucket's reset")
		}
		time.Sleep(time.Millisecond)
		if !done() {
			t.Fatal("the call still waits after the bucket's reset")
		}
	})
}

func TestTooManyRequestsPauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter()
		r := channelRoute("PATCH", "300", "/messages/{id}")
		ra := l.update(r, headers("X-RateLimit-Scope", "user"), 429, []byte(`{"message":"You are being rate limited.","retry_after":1.25,"global":false}`), time.Now())
		if ra == nil || ra.D != 1250*time.Millisecond || ra.Global {
			t.Fatalf("RetryAfter = %+v", ra)
		}
		done := waits(t, l, r)
		time.Sleep(1249 * time.Millisecond)
		if done() {
			t.Fatal("the route went before retry_after")
		}
		time.Sleep(time.Millisecond)
		if !done() {
			t.Fatal("the route still waits after retry_after")
		}

		ra = l.update(r, headers("X-RateLimit-Scope", "global", "X-RateLimit-Global", "true"), 429, []byte(`{"retry_after":3,"global":true}`), time.Now())
		if ra == nil || !ra.Global {
			t.Fatalf("global RetryAfter = %+v", ra)
		}
		done = waits(t, l, route{key: "GET /gateway/bot"})
		time.Sleep(2999 * time.Millisecond)
		if done() {
			t.Fatal("a call went during a global pause")
		}
		time.Sleep(time.Millisecond)
		if !done() {
			t.Fatal("a call still waits after the global pause")
		}
	})
}

func TestGlobalFiftyASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter()
		for i := range globalPerSecond {
			r := channelRoute("POST", string(rune('a'+i%26))+string(rune('a'+i/26)), "/messages")
			if !waits(t, l, r)() {
				t.Fatalf("call %d waited", i)
			}
		}
		done := waits(t, l, channelRoute("POST", "zz", "/messages"))
		if done() {
			t.Fatal("the 51st call in a second went")
		}
		time.Sleep(time.Second)
		if !done() {
			t.Fatal("the 51st call still waits a second later")
		}
	})
}

func TestInvalidRequestBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter()
		r := channelRoute("POST", "300", "/messages")
		for range invalidStop {
			l.update(r, nil, 403, nil, time.Now())
		}
		err := l.wait(context.Background(), r)
		if ra, ok := errors.AsType[*connector.RetryAfter](err); !ok || !ra.Global {
			t.Fatalf("wait past the budget = %v, want a global RetryAfter", err)
		}
		// Shared-scope 429s do not count; the budget frees as minutes pass.
		time.Sleep(invalidWindow)
		l.update(r, headers("X-RateLimit-Scope", "shared"), 429, []byte(`{"retry_after":0.001}`), time.Now())
		time.Sleep(time.Millisecond)
		if err := l.wait(context.Background(), r); err != nil {
			t.Errorf("wait ten minutes later = %v", err)
		}
	})
}
