// Package slack is the Slack platform of agentd's chat connectors: a bot
// that receives over Socket Mode (a WebSocket agentd opens; the default) or
// the Events API (HTTP posts Slack signs, verified before anything is
// read), and answers with chat.postMessage and chat.update through the Web
// API.
//
// Wire facts come from Slack's pages: Socket Mode
// (https://api.slack.com/apis/connections/socket-implement), the Events API
// (https://api.slack.com/apis/connections/events-api), request signing
// (https://api.slack.com/authentication/verifying-requests-from-slack),
// chat.postMessage, chat.update, conversations.history and
// conversations.replies (https://api.slack.com/methods/…) and rate limits
// (https://api.slack.com/docs/rate-limits).
package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"agentd/internal/connector"
	"agentd/internal/connector/markup"
)

// Modes.
const (
	ModeSocket = "socket"
	ModeEvents = "events"
)

// DefaultAPIURL is Slack's Web API.
const DefaultAPIURL = "https://slack.com/api"

// Limits and pacing (https://api.slack.com/docs/rate-limits: chat.update is
// tier 3, chat.postMessage about one a second per channel).
const (
	maxText   = 4000
	editEvery = 1200 * time.Millisecond
)

// Platform is one Slack bot. Run receives; Send, Edit and Find answer
// through the Web API; ServeWebhook takes the Events API's posts.
type Platform struct {
	cfg  Config
	deps connector.PlatformDeps
	log  *slog.Logger

	mu      sync.Mutex
	self    identity          // who the bot is (auth.test), once Run learnt it
	handler connector.Handler // events mode: set by Run, used by ServeWebhook
	threads threadSet         // threads the bot posted in (mention gating)
}

// Config is the part of connector.Config Slack reads.
type Config = connector.Config

// identity is the bot as auth.test names it.
type identity struct {
	User string // the bot's user id (U…): mentions, and our own messages
	Bot  string // the bot id (B…): messages the bot posted
	Team string
	Name string
}

// New makes a Slack Platform. It does no I/O. Mode "" is socket (which
// needs AppToken); events needs SigningSecret.
func New(cfg connector.Config, deps connector.PlatformDeps) (connector.Platform, connector.Caps, error) {
	p, err := newPlatform(cfg, deps)
	if err != nil {
		return nil, connector.Caps{}, err
	}
	return p, Caps(), nil
}

// Caps is what a Slack bot can do and its limits.
func Caps() connector.Caps {
	return connector.Caps{
		MaxText:        maxText,
		Unit:           markup.Runes,
		EditEvery:      editEvery,
		GroupEditEvery: editEvery,
		Dialect:        markup.Slack,
		Nonce:          false, // Find closes the create window instead
	}
}

func newPlatform(cfg connector.Config, deps connector.PlatformDeps) (*Platform, error) {
	if cfg.Mode == "" {
		cfg.Mode = ModeSocket
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	cfg.APIURL = strings.TrimSuffix(cfg.APIURL, "/")
	switch {
	case cfg.Token == "":
		return nil, fmt.Errorf("slack: no bot token: %w", connector.ErrConfig)
	case cfg.Mode == ModeSocket && cfg.AppToken == "":
		return nil, fmt.Errorf("slack: socket mode needs an app-level token (xapp-…): %w", connector.ErrConfig)
	case cfg.Mode == ModeEvents && cfg.SigningSecret == "":
		return nil, fmt.Errorf("slack: events mode needs the app's signing secret: %w", connector.ErrConfig)
	case cfg.Mode != ModeSocket && cfg.Mode != ModeEvents:
		return nil, fmt.Errorf("slack: mode %q: want socket or events: %w", cfg.Mode, connector.ErrConfig)
	}
	if deps.HTTP == nil {
		deps.HTTP = http.DefaultClient
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Redact == nil {
		deps.Redact = func(s string) string { return s }
	}
	if deps.State == nil {
		deps.State = func(string, string, error) {}
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Platform{cfg: cfg, deps: deps, log: log.With("platform", "slack", "connector", cfg.Name), threads: newThreadSet(threadMemory)}, nil
}

// Run receives until ctx ends: over Socket Mode, or (events mode) by
// holding the handler ServeWebhook gives the Events API's posts to.
func (p *Platform) Run(ctx context.Context, h connector.Handler) error {
	p.deps.State(connector.StateConnecting, "", nil)
	id, err := p.start(ctx)
	if err != nil || ctx.Err() != nil {
		return err
	}
	if p.cfg.Mode == ModeEvents {
		p.mu.Lock()
		p.handler = h
		p.mu.Unlock()
		p.deps.State(connector.StateConnected, botName(id), nil)
		<-ctx.Done()
		p.mu.Lock()
		p.handler = nil
		p.mu.Unlock()
		return nil
	}
	return p.runSocket(ctx, h)
}

// start asks auth.test who the bot is, retrying with backoff until it
// answers, ctx ends (nil error) or the token is refused.
func (p *Platform) start(ctx context.Context) (identity, error) {
	var b backoff
	for {
		id, err := p.authTest(ctx)
		if err == nil {
			p.mu.Lock()
			p.self = id
			p.mu.Unlock()
			return id, nil
		}
		if fatal(err) {
			p.deps.State(connector.StateDown, "", err)
			return identity{}, err
		}
		p.deps.State(connector.StateDown, "", err)
		if !b.wait(ctx, err) {
			return identity{}, nil
		}
	}
}

// identity returns who the bot is ("" fields before Run learnt it).
func (p *Platform) identity() identity {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.self
}

// whoami is identity, asking auth.test when Run has not yet.
func (p *Platform) whoami(ctx context.Context) (identity, error) {
	if id := p.identity(); id.User != "" {
		return id, nil
	}
	id, err := p.authTest(ctx)
	if err != nil {
		return identity{}, err
	}
	p.mu.Lock()
	p.self = id
	p.mu.Unlock()
	return id, nil
}

func botName(id identity) string {
	if id.Name != "" {
		return "@" + id.Name
	}
	return id.User
}

// fatal reports whether no reconnect can mend err.
func fatal(err error) bool {
	return errors.Is(err, connector.ErrAuth) || errors.Is(err, connector.ErrConfig)
}
