package slack

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"agentd/internal/connector"
	"agentd/internal/connector/slack/slackfake"
)

// fixture is a fake Slack on a loopback server and a Platform talking to it.
type fixture struct {
	fake *slackfake.Server
	srv  *httptest.Server
	p    *Platform
	in   chan connector.Inbound
	up   chan struct{} // closed at the first StateConnected
	// fail, when set, makes the handler refuse a message (not durable).
	mu   sync.Mutex
	fail func(connector.Inbound) error
}

// redactTokens replaces the fake's secrets as secret.Redact would.
func redactTokens(o slackfake.Options) func(string) string {
	return strings.NewReplacer(o.BotToken, "${secret:SLACK_BOT}", o.AppToken, "${secret:SLACK_APP}", o.SigningSecret, "${secret:SLACK_SIGNING}").Replace
}

func newFixture(t *testing.T, mode string, o *slackfake.Options) *fixture {
	t.Helper()
	if o == nil {
		o = &slackfake.Options{}
	}
	if o.RedeliverAfter == 0 {
		o.RedeliverAfter = 100 * time.Millisecond
	}
	if o.RetryEvery == 0 {
		o.RetryEvery = 10 * time.Millisecond
	}
	fake := slackfake.New(o)
	srv := httptest.NewUnstartedServer(fake)
	srv.Config.ConnState = fake.World().ConnState
	srv.Start()
	fake.SetBaseURL(srv.URL)
	fake.Pump()
	t.Cleanup(func() {
		fake.Close()
		srv.Close()
	})
	fo := fake.Options()
	p, err := newPlatform(connector.Config{
		Name: "slack", Token: fo.BotToken, AppToken: fo.AppToken, SigningSecret: fo.SigningSecret,
		APIURL: srv.URL + "/api", Mode: mode,
	}, connector.PlatformDeps{HTTP: srv.Client(), Redact: redactTokens(fo)})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{fake: fake, srv: srv, p: p, in: make(chan connector.Inbound, 16), up: make(chan struct{})}
	var once sync.Once
	p.deps.State = func(state, _ string, _ error) {
		if state == connector.StateConnected {
			once.Do(func() { close(f.up) })
		}
	}
	return f
}

// Inbound is the fixture's handler: it records the message unless fail
// refuses it.
func (f *fixture) Inbound(ctx context.Context, m connector.Inbound) error {
	f.mu.Lock()
	fail := f.fail
	f.mu.Unlock()
	if fail != nil {
		if err := fail(m); err != nil {
			return err
		}
	}
	f.in <- m
	return nil
}

func (f *fixture) setFail(fn func(connector.Inbound) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = fn
}

// run runs the platform until the test ends; the returned func waits for
// Run's result.
func (f *fixture) run(t *testing.T) (result func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.p.Run(ctx, f) }()
	result = sync.OnceValue(func() error { return <-done })
	t.Cleanup(func() {
		cancel()
		if err := result(); err != nil {
			t.Logf("run: %v", err)
		}
	})
	return result
}

// next returns the next inbound message the handler took.
func (f *fixture) next(t *testing.T) connector.Inbound {
	t.Helper()
	select {
	case m := <-f.in:
		return m
	case <-time.After(20 * time.Second):
		t.Fatal("no inbound message")
		return connector.Inbound{}
	}
}

// wait waits until pred holds (checked at every change of the fake).
func (f *fixture) wait(t *testing.T, what string, pred func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := f.fake.World().Wait(ctx, pred); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// connected waits until the platform reported itself connected.
func (f *fixture) connected(t *testing.T) {
	t.Helper()
	select {
	case <-f.up:
	case <-time.After(20 * time.Second):
		t.Fatal("not connected")
	}
	if f.p.cfg.Mode == ModeSocket {
		// The fake counts a link once it said hello.
		f.wait(t, "the fake's link", func() bool { return f.fake.Links() > 0 })
	}
}
