package telegram

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/connector"
	"agentd/internal/connector/chatfake"
	"agentd/internal/connector/telegram/telegramfake"
)

func TestPollHandsOverInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, rigOptions{inMemory: true})
		var states []string
		r.p.state = func(state, bot string, err error) { states = append(states, state+" "+bot) }
		b := newInbox()
		stop := r.run(t, b)
		for i := range 3 {
			r.w.SendAsUser("42", "42", "m"+strconv.Itoa(i))
		}
		synctest.Wait()
		stop()
		var got []string
		for _, m := range b.all() {
			got = append(got, m.Key+" "+m.Text)
		}
		want := []string{
			"tg:" + strconv.Itoa(telegramfake.FirstUpdate) + " m0",
			"tg:" + strconv.Itoa(telegramfake.FirstUpdate+1) + " m1",
			"tg:" + strconv.Itoa(telegramfake.FirstUpdate+2) + " m2",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("handed over (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"connecting ", "connected @agentd_bot"}, states); diff != "" {
			t.Fatalf("states (-want +got):\n%s", diff)
		}
		if got := r.fake.Commands(); len(got) != len(builtins) {
			t.Fatalf("commands set = %v", got)
		}
	})
}

// An update the handler did not take comes again, and nothing after it is
// confirmed before it: the offset moves only past what was taken.
func TestPollOffsetOnlyPastTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, rigOptions{inMemory: true})
		b := newInbox()
		b.fail = 2
		stop := r.run(t, b)
		r.w.SendAsUser("42", "42", "first")
		r.w.SendAsUser("42", "42", "second")
		synctest.Wait()
		for i := 0; i < 10 && len(b.all()) < 4; i++ {
			time.Sleep(time.Second) // the backoff after a refusal
			synctest.Wait()
		}
		stop()
		var got []string
		for _, m := range b.all() {
			got = append(got, m.Text)
		}
		if diff := cmp.Diff([]string{"first", "first", "first", "second"}, got); diff != "" {
			t.Fatalf("handed over (-want +got):\n%s", diff)
		}
		// A new poller (a restart) gets nothing again: the poll after
		// "second" confirmed both.
		r2 := newInbox()
		stop2 := r.run(t, r2)
		synctest.Wait()
		stop2()
		if n := len(r2.all()); n != 0 {
			t.Fatalf("after a restart %d messages came again", n)
		}
	})
}

// A 429 on getUpdates waits retry_after, then polls again: nothing lost.
func TestPoll429WaitsRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, rigOptions{inMemory: true})
		r.w.Fail("getUpdates", 1, chatfake.Fault{Status: 429, RetryAfter: 5 * time.Second})
		b := newInbox()
		stop := r.run(t, b)
		r.w.SendAsUser("42", "42", "hello")
		synctest.Wait()
		if n := r.w.Count("getUpdates"); n != 1 {
			t.Fatalf("getUpdates calls before retry_after = %d", n)
		}
		time.Sleep(4*time.Second + 900*time.Millisecond)
		synctest.Wait()
		if n := r.w.Count("getUpdates"); n != 1 {
			t.Fatalf("getUpdates calls before retry_after = %d", n)
		}
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		stop()
		if got := b.all(); len(got) != 1 || got[0].Text != "hello" {
			t.Fatalf("handed over %v", got)
		}
	})
}

// Errors back off 1 s, 2 s, 4 s …: a server that fails keeps no poller
// spinning.
func TestPollBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, rigOptions{inMemory: true})
		r.w.Fail("getUpdates", 3, chatfake.Fault{Status: 502, Body: "Bad Gateway"})
		b := newInbox()
		start := time.Now()
		stop := r.run(t, b)
		r.w.SendAsUser("42", "42", "hello")
		b.next(t, context.Background())
		elapsed := time.Since(start)
		stop()
		if elapsed != 7*time.Second { // 1 + 2 + 4, on the bubble's clock
			t.Fatalf("handed over after %s of backoff, want 7s", elapsed)
		}
	})
}

func TestRunStopsOnRefusedToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, rigOptions{inMemory: true})
		r.p.c.token = "1:wrong"
		var last error
		r.p.state = func(state, bot string, err error) { last = err }
		err := r.p.Run(context.Background(), newInbox())
		if !errors.Is(err, connector.ErrAuth) || !errors.Is(last, connector.ErrAuth) {
			t.Fatalf("Run = %v, state err %v; want ErrAuth", err, last)
		}
	})
}

// A webhook set by someone else while polling is a configuration error.
func TestPollWebhookSetMeanwhile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, rigOptions{inMemory: true})
		r.w.Fail("getUpdates", 1, chatfake.Fault{Status: 409, Body: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"})
		err := r.p.Run(context.Background(), newInbox())
		if !errors.Is(err, connector.ErrConfig) {
			t.Fatalf("Run = %v, want ErrConfig", err)
		}
	})
}

// A poll whose connection drops: the poller reconnects and loses nothing.
func TestPollConnectionDrop(t *testing.T) {
	r := newRig(t, rigOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newInbox()
	r.run(t, b)
	if err := r.w.Wait(ctx, func() bool { return r.w.Count("getUpdates") >= 1 }); err != nil {
		t.Fatal(err)
	}
	r.w.Drop()
	r.w.SendAsUser("42", "42", "after the drop")
	if m := b.next(t, ctx); m.Text != "after the drop" {
		t.Fatalf("got %+v", m)
	}
}

// A webhook left set is deleted before polling.
func TestPollDeletesWebhook(t *testing.T) {
	r := newRig(t, rigOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "gone", http.StatusGone)
	}))
	defer hook.Close()
	if err := r.p.c.call(ctx, "setWebhook", map[string]any{"url": hook.URL}, nil); err != nil {
		t.Fatal(err)
	}
	b := newInbox()
	r.run(t, b)
	r.w.SendAsUser("42", "42", "hi")
	if m := b.next(t, ctx); m.Text != "hi" {
		t.Fatalf("got %+v", m)
	}
	if url, _ := r.fake.Webhook(); url != "" {
		t.Fatalf("webhook %q left set", url)
	}
}
