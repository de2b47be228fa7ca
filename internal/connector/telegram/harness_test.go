package telegram

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"agentd/internal/connector"
	"agentd/internal/connector/chatfake"
	"agentd/internal/connector/telegram/telegramfake"
)

const testToken = "987654:AAsecret-Token_value"

// rig is a fake Bot API and a Platform talking to it.
type rig struct {
	fake *telegramfake.Server
	w    *chatfake.World
	p    *Platform
	url  string
	logs *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// handlerTransport answers HTTP calls by calling a handler in the same
// process: no sockets, so a synctest bubble's clock advances while a long
// poll waits.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	res := rec.Result()
	res.Request = r
	return res, nil
}

type rigOptions struct {
	inMemory bool // no sockets (synctest)
	cfg      connector.Config
}

// newRig starts a fake Bot API with a DM (user and chat 42, "Alice") and
// a group (-100777, forum), and a Platform for it.
func newRig(t *testing.T, o rigOptions) *rig {
	t.Helper()
	w := chatfake.New(nil)
	w.AddUser(chatfake.User{ID: "42", Name: "Alice Smith", Username: "alice"})
	w.AddUser(chatfake.User{ID: "43", Name: "Bob"})
	w.AddChat(chatfake.Chat{ID: "42", Kind: chatfake.DM})
	w.AddChat(chatfake.Chat{ID: "-100777", Kind: chatfake.Group, Title: "team", Forum: true})
	fake := telegramfake.New(&telegramfake.Options{World: w, Token: testToken})
	r := &rig{fake: fake, w: w, logs: &syncBuffer{}}
	var hc *http.Client
	if o.inMemory {
		r.url = "http://telegram.test"
		hc = &http.Client{Transport: handlerTransport{fake}}
	} else {
		srv := httptest.NewUnstartedServer(fake)
		srv.Config.ConnState = w.ConnState
		srv.Start()
		t.Cleanup(srv.Close)
		r.url = srv.URL
		hc = srv.Client()
	}
	t.Cleanup(fake.Close)
	cfg := o.cfg
	cfg.Name, cfg.Token, cfg.APIURL = "tg", testToken, r.url
	p, gotCaps, err := New(cfg, connector.PlatformDeps{
		HTTP:   hc,
		Logger: slog.New(slog.NewTextHandler(r.logs, nil)),
		Redact: func(s string) string { return strings.ReplaceAll(s, testToken, "${env:TG_TOKEN}") },
	})
	if err != nil {
		t.Fatal(err)
	}
	if gotCaps != caps {
		t.Fatalf("caps = %+v", gotCaps)
	}
	r.p = p.(*Platform)
	return r
}

// inbox collects what the platform hands over; fail makes the next n
// calls return an error (not taken).
type inbox struct {
	mu   sync.Mutex
	got  []connector.Inbound
	fail int
	ch   chan struct{}
}

func newInbox() *inbox { return &inbox{ch: make(chan struct{}, 100)} }

func (b *inbox) Inbound(ctx context.Context, m connector.Inbound) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, m)
	b.ch <- struct{}{}
	if b.fail > 0 {
		b.fail--
		return io.ErrUnexpectedEOF
	}
	return nil
}

func (b *inbox) all() []connector.Inbound {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]connector.Inbound(nil), b.got...)
}

// next waits for the next message handed over.
func (b *inbox) next(t *testing.T, ctx context.Context) connector.Inbound {
	t.Helper()
	select {
	case <-b.ch:
	case <-ctx.Done():
		t.Fatalf("no message handed over: %v", ctx.Err())
	}
	all := b.all()
	return all[len(all)-1]
}

// run runs the platform until the test ends.
func (r *rig) run(t *testing.T, h connector.Handler) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.p.Run(ctx, h) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	var once sync.Once
	t.Cleanup(func() { once.Do(stop) })
	return func() { once.Do(stop) }
}
