package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// exerciseClient runs every Client method against a server whose runtime is e's.
func exerciseClient(t *testing.T, e *env, c *gateway.Client) {
	ctx := t.Context()
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	ags, err := c.Agents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ags) != 2 || ags[0].ID != "a" || ags[1].ID != "b" || ags[0].Model != "m1" {
		t.Errorf("Agents: %+v", ags)
	}

	rc, err := c.Submit(ctx, "a/chat:bob", gateway.MessageRequest{Text: "hello", IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Session != "a/chat:bob" || rc.Turn <= 0 || rc.Duplicate {
		t.Errorf("Submit: %+v", rc)
	}
	e.wait(rc.Turn)
	if again, err := c.Submit(ctx, "a/chat:bob", gateway.MessageRequest{Text: "hello", IdempotencyKey: "k1"}); err != nil || !again.Duplicate || again.Turn != rc.Turn {
		t.Errorf("Submit again: %+v, %v", again, err)
	}

	list, err := c.Sessions(ctx, store.SessionFilter{Agent: "a", State: store.StateIdle, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := []gateway.SessionInfo{{ID: rc.SessionID, Address: "a/chat:bob", Agent: "a", Key: "chat:bob", State: store.StateIdle, Title: "hello", TitleBy: store.TitleByInput}}
	if diff := cmp.Diff(want, list, sessionInfoOpts); diff != "" {
		t.Errorf("Sessions (-want +got):\n%s", diff)
	}
	if list, err := c.Sessions(ctx, store.SessionFilter{Agent: "b"}); err != nil || len(list) != 0 {
		t.Errorf("Sessions of b: %+v, %v", list, err)
	}

	all, err := e.st.Events(ctx, rc.SessionID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.Events(ctx, "a/chat:bob", 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(all, page.Events); diff != "" {
		t.Errorf("Events (-want +got):\n%s", diff)
	}
	page, err = c.Events(ctx, "a/chat:bob", 1, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(all[1:3], page.Events); diff != "" || page.Next != all[2].Seq {
		t.Errorf("Events page, next %d (-want +got):\n%s", page.Next, diff)
	}
	// A long poll returns when the next event is logged.
	polled := make(chan error, 1)
	var next gateway.EventsPage
	go func() {
		var err error
		next, err = c.Events(ctx, "a/chat:bob", all[len(all)-1].Seq, 0, time.Minute)
		polled <- err
	}()

	var streamed []event.Event
	rc2, end, err := c.Stream(ctx, "a/chat:bob", gateway.MessageRequest{Text: "streamed words"}, func(ev event.Event) error {
		streamed = append(streamed, ev)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rc2.Session != "a/chat:bob" || rc2.Turn <= rc.Turn || end.Reply != "re: streamed words" || end.Status != event.StatusDone {
		t.Errorf("Stream: %+v %+v", rc2, end)
	}
	turnEvs, err := e.st.TurnEvents(ctx, rc2.SessionID, rc2.Turn)
	if err != nil {
		t.Fatal(err)
	}
	var logged []event.Event
	for _, ev := range streamed {
		if ev.Seq > 0 {
			logged = append(logged, ev)
		}
	}
	if diff := cmp.Diff(turnEvs, logged); diff != "" {
		t.Errorf("Stream events (-log +streamed):\n%s", diff)
	}
	if err := recv(t, "the long poll", polled); err != nil {
		t.Fatalf("long poll: %v", err)
	}
	if len(next.Events) == 0 || next.Events[0].Seq != all[len(all)-1].Seq+1 {
		t.Errorf("long poll page %+v", next)
	}

	// fn's error ends the stream.
	stop := errors.New("enough")
	if _, _, err := c.Stream(ctx, "a/chat:bob", gateway.MessageRequest{Text: "more"}, func(event.Event) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("Stream with failing fn: %v", err)
	}

	// API errors come back typed.
	var ae *gateway.APIError
	if err := c.Cancel(ctx, "a/idle"); !errors.As(err, &ae) || ae.Status != 409 || ae.Code != "no_turn" || ae.Msg == "" {
		t.Errorf("Cancel without a turn: %#v", err)
	}
	if _, err := c.Submit(ctx, "ghost/k", gateway.MessageRequest{Text: "x"}); !errors.As(err, &ae) || ae.Status != 404 || ae.Code != "not_found" {
		t.Errorf("Submit to an unknown agent: %#v", err)
	}
	if _, _, err := c.Stream(ctx, "a/k", gateway.MessageRequest{Text: ""}, func(event.Event) error { return nil }); !errors.As(err, &ae) || ae.Status != 400 {
		t.Errorf("Stream of empty text: %#v", err)
	}
	if _, err := c.Events(ctx, "a/nobody", 0, 0, 0); !errors.As(err, &ae) || ae.Status != 404 {
		t.Errorf("Events of a missing session: %#v", err)
	}
	// Bad addresses are refused before any request.
	for _, bad := range []string{"a", "a/b/c", "/k"} {
		if _, err := c.Submit(ctx, bad, gateway.MessageRequest{Text: "x"}); !errors.Is(err, runtime.ErrBadAddress) {
			t.Errorf("Submit(%q): %v", bad, err)
		}
		if _, err := c.Events(ctx, bad, 0, 0, 0); !errors.Is(err, runtime.ErrBadAddress) {
			t.Errorf("Events(%q): %v", bad, err)
		}
		if err := c.Reset(ctx, bad); !errors.Is(err, runtime.ErrBadAddress) {
			t.Errorf("Reset(%q): %v", bad, err)
		}
		if err := c.Cancel(ctx, bad); !errors.Is(err, runtime.ErrBadAddress) {
			t.Errorf("Cancel(%q): %v", bad, err)
		}
		if _, _, err := c.Stream(ctx, bad, gateway.MessageRequest{Text: "x"}, nil); !errors.Is(err, runtime.ErrBadAddress) {
			t.Errorf("Stream(%q): %v", bad, err)
		}
	}

	// Cancel a running turn.
	g := e.p.Gate("slow")
	rc3, err := c.Submit(ctx, "a/chat:bob", gateway.MessageRequest{Text: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	recv(t, "the turn to reach the model", g.Entered)
	if err := c.Cancel(ctx, "a/chat:bob"); err != nil {
		t.Errorf("Cancel: %v", err)
	}
	if end := e.wait(rc3.Turn); end.Status != event.StatusCancelled {
		t.Errorf("cancelled turn: %+v", end)
	}

	// Reset.
	if err := c.Reset(ctx, "a/chat:bob"); err != nil {
		t.Fatal(err)
	}
	evs, err := e.st.Events(ctx, rc.SessionID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if last := evs[len(evs)-1]; last.Kind != event.Reset {
		t.Errorf("last event after Reset: %s", last.Kind)
	}
}

func TestClientOverPipe(t *testing.T) {
	e := newEnv(t, setup{})
	c, stop := gateway.Pipe(e.srv)
	exerciseClient(t, e, c)
	stop()
	if err := c.Ping(t.Context()); err == nil {
		t.Error("Ping after the pipe was stopped")
	}
}

func TestClientStreamError(t *testing.T) {
	e := newEnv(t, setup{wrap: func(st store.Store) store.Store { return &brokenStore{Store: st, turnEvents: true} }})
	c, stop := gateway.Pipe(e.srv)
	defer stop()
	_, _, err := c.Stream(t.Context(), "a/k", gateway.MessageRequest{Text: "x"}, func(event.Event) error { return nil })
	var ae *gateway.APIError
	if !errors.As(err, &ae) || ae.Code == "" {
		t.Errorf("Stream over a failing store: %#v", err)
	}
}

// failingStream is a runtime whose streamed turns send one event and then
// fail with err.
type failingStream struct {
	*runtime.Runtime
	err error
}

func (f failingStream) Stream(ctx context.Context, in runtime.Input, fn func(event.Event) error) (runtime.Receipt, event.TurnEndData, error) {
	if err := fn(event.Event{Kind: event.TurnStart}); err != nil {
		return runtime.Receipt{}, event.TurnEndData{}, err
	}
	return runtime.Receipt{}, event.TurnEndData{}, f.err
}

// A stream that fails after it started keeps its error's status, code and
// Retry-After: the client's error is the one the request would have had
// before the stream started.
func TestClientStreamErrorStatus(t *testing.T) {
	for _, c := range []struct {
		err    error
		status int
		code   string
		retry  time.Duration
	}{
		{fmt.Errorf("%w: turn 7 did not end before it stopped", runtime.ErrClosed), 503, "shutting_down", gateway.ShutdownRetryAfter},
		{fmt.Errorf("runtime: accept input: %w", store.ErrFull), 503, "storage_full", gateway.FullRetryAfter},
		{runtime.ErrSessionClosed, 409, "session_closed", 0},
		{errors.New("disk I/O error at " + secret), 500, "internal", 0},
	} {
		e := newEnv(t, setup{runtime: func(r *runtime.Runtime) gateway.Runtime { return failingStream{r, c.err} }})
		cl, stop := gateway.Pipe(e.srv)
		_, _, err := cl.Stream(t.Context(), "a/k", gateway.MessageRequest{Text: "x"}, func(event.Event) error { return nil })
		stop()
		want, _ := gateway.Describe(c.err)
		var ae *gateway.APIError
		if !errors.As(err, &ae) || ae.Status != c.status || ae.Code != c.code || ae.Msg != want.Body.Error || ae.RetryAfter != c.retry {
			t.Errorf("a stream failing with %v: %#v, want %d %s (Retry-After %v)", c.err, err, c.status, c.code, c.retry)
		}
	}
}

// serveUnix serves e's API on a unix socket and returns a function that
// stops it and returns what ServeUnix returned.
func serveUnix(t *testing.T, srv *gateway.Server, path string) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- srv.ServeUnix(ctx, path, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("ServeUnix: %v", err)
	case <-time.After(waitLimit):
		t.Fatal("ServeUnix never became ready")
	}
	stopped := false
	var err error
	stop := func() error {
		if !stopped {
			stopped = true
			cancel()
			err = recv(t, "ServeUnix to return", done)
		}
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// sockPath returns a short socket path (unix socket paths are limited to
// about 100 bytes).
func sockPath(t *testing.T) string {
	dir, err := os.MkdirTemp("", "gw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "agentd.sock")
}

func TestServeUnix(t *testing.T) {
	e := newEnv(t, setup{})
	path := sockPath(t)
	stop := serveUnix(t, e.srv, path)
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want a socket with 0600", fi.Mode())
	}
	c := gateway.NewUnixClient(path)
	exerciseClient(t, e, c)

	// A second server on the same path refuses to start and leaves the
	// first one alone.
	readied := false
	err = e.srv.ServeUnix(t.Context(), path, func() { readied = true })
	if err == nil || readied {
		t.Errorf("second ServeUnix: %v (ready called: %v), want an error", err, readied)
	}
	if err := c.Ping(t.Context()); err != nil {
		t.Errorf("the first server stopped answering: %v", err)
	}

	if err := stop(); err != nil {
		t.Errorf("ServeUnix: %v", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket after shutdown: %v, want it removed", err)
	}
	if err := gateway.NewUnixClient(path).Ping(t.Context()); err == nil {
		t.Error("Ping after shutdown")
	}
}

func TestServeUnixStaleSocket(t *testing.T) {
	e := newEnv(t, setup{})
	path := sockPath(t)
	// A process that died left its socket file behind.
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	stop := serveUnix(t, e.srv, path)
	if err := gateway.NewUnixClient(path).Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
	if err := stop(); err != nil {
		t.Errorf("ServeUnix: %v", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket after shutdown: %v, want it removed", err)
	}
}

// Stopping the server ends requests that wait for events, so that
// shutdown neither hangs on them nor fails.
func TestServeUnixShutdownWithLongPoll(t *testing.T) {
	spy := &busSpy{waiting: make(chan struct{})}
	e := newEnv(t, setup{runtime: func(r *runtime.Runtime) gateway.Runtime { spy.Runtime = r; return spy }})
	path := sockPath(t)
	stop := serveUnix(t, e.srv, path)
	c := gateway.NewUnixClient(path)
	if _, _, err := e.rt.Send(t.Context(), runtime.Input{Session: "a/k", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	polled := make(chan error, 1)
	go func() {
		_, err := c.Events(ctx, "a/k", 1000, 0, 10*time.Minute)
		polled <- err
	}()
	recv(t, "the long poll to wait", spy.waiting)
	if err := stop(); err != nil {
		t.Fatalf("ServeUnix with a long poll open: %v", err)
	}
	recv(t, "the long poll to end", polled)
}
