package discord

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"agentd/internal/connector"
	"agentd/internal/connector/chatfake"
	"agentd/internal/connector/discord/discordfake"
)

// rig is a Discord platform against a fake Discord in this process.
type rig struct {
	t    *testing.T
	fake *discordfake.Server
	p    *Platform
	cfg  connector.Config
	h    *recorder

	mu     sync.Mutex
	states []string // "state bot err"
}

// ref is what the token is redacted to.
const ref = "${env:DISCORD_TOKEN}"

func newRig(t *testing.T, opts *discordfake.Options, edit func(*connector.Config)) *rig {
	t.Helper()
	fake := discordfake.New(opts)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	t.Cleanup(fake.Close)
	fake.SetBase(srv.URL)
	r := &rig{t: t, fake: fake, h: newRecorder()}
	r.cfg = connector.Config{Name: "dc", Token: fake.Token(), APIURL: fake.APIURL()}
	if edit != nil {
		edit(&r.cfg)
	}
	tok := r.cfg.Token
	p, c, err := New(r.cfg, connector.PlatformDeps{
		HTTP:   srv.Client(),
		Redact: func(s string) string { return strings.ReplaceAll(s, tok, ref) },
		State: func(state, bot string, err error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			s := state + " " + bot
			if err != nil {
				s += " " + err.Error()
			}
			r.states = append(r.states, s)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxText != 2000 || !c.Nonce {
		t.Fatalf("caps = %+v", c)
	}
	r.p = p.(*Platform)
	return r
}

// run runs the platform until the test ends and returns Run's result.
func (r *rig) run(h connector.Handler) <-chan error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.p.Run(ctx, h) }()
	r.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			r.t.Errorf("Run = %v", err)
		}
	})
	return done
}

// wait waits for cond on the fake's changes, or fails after a minute.
func (r *rig) wait(what string, cond func() bool) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.fake.Wait(ctx, cond); err != nil {
		r.t.Fatalf("waiting for %s: %v", what, err)
	}
}

func (r *rig) stateLog() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.states...)
}

// recorder is a Handler that keeps what it was given, and the last
// message of each chat for the catch-up.
type recorder struct {
	mu   sync.Mutex
	got  []connector.Inbound
	fail int // refuse the next fail messages
	more chan struct{}
}

func newRecorder() *recorder { return &recorder{more: make(chan struct{}, 1)} }

func (h *recorder) Inbound(ctx context.Context, m connector.Inbound) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fail > 0 {
		h.fail--
		return context.DeadlineExceeded
	}
	for _, g := range h.got {
		if g.Key == m.Key {
			return nil // a redelivery: already durable
		}
	}
	h.got = append(h.got, m)
	select {
	case h.more <- struct{}{}:
	default:
	}
	return nil
}

func (h *recorder) texts() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, g := range h.got {
		out = append(out, g.Text)
	}
	return out
}

// waitFor waits until the handler holds n messages.
func (h *recorder) waitFor(t *testing.T, n int) []connector.Inbound {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		h.mu.Lock()
		got := append([]connector.Inbound(nil), h.got...)
		h.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-h.more:
		case <-deadline:
			t.Fatalf("handler got %d messages, want %d: %q", len(got), n, h.texts())
		}
	}
}

// catchupRecorder is a recorder with the Catchup ability.
type catchupRecorder struct{ *recorder }

func (h catchupRecorder) LastInbound(ctx context.Context) ([]connector.Inbound, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	last := map[string]connector.Inbound{}
	var order []string
	for _, g := range h.got {
		if _, ok := last[g.Chat.ID]; !ok {
			order = append(order, g.Chat.ID)
		}
		last[g.Chat.ID] = g
	}
	var out []connector.Inbound
	for _, id := range order {
		out = append(out, last[id])
	}
	return out, nil
}

var alice = chatfake.User{ID: "2000000000000000002", Name: "Alice", Username: "alice"}
