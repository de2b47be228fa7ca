// Package discord is Discord's wire for agentd's chat connectors: the
// gateway WebSocket that receives (IDENTIFY, heartbeats, RESUME after a
// drop, a REST catch-up after a reconnect that could not resume) and the
// REST API that creates, edits and uploads messages within Discord's
// rate-limit buckets.
//
// Discord has no redelivery: a message is "acknowledged" by the sequence
// number this client resumes from, which moves past a dispatch only once
// the handler returned nil. A handler error closes the connection and
// resumes from the last message handled, so Discord replays the rest.
package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"agentd/internal/connector"
	"agentd/internal/connector/markup"
)

// DefaultAPIURL is Discord's REST base when Config.APIURL is "".
const DefaultAPIURL = "https://discord.com/api/v10"

// Intents IDENTIFY asks for: GUILDS (1<<0), GUILD_MESSAGES (1<<9),
// DIRECT_MESSAGES (1<<12) and the privileged MESSAGE_CONTENT (1<<15).
const Intents = 1<<0 | 1<<9 | 1<<12 | 1<<15

// Caps are Discord's: 2000 characters a message, one edit every 1.2 s, its
// own markdown, and nonce + enforce_nonce so a create made again after a
// crash returns the first message.
var caps = connector.Caps{
	MaxText:        2000,
	Unit:           markup.Runes,
	EditEvery:      1200 * time.Millisecond,
	GroupEditEvery: 1200 * time.Millisecond,
	Dialect:        markup.Discord,
	Nonce:          true,
}

// Catchup is an ability of the Handler given to Run, found by type
// assertion: it lists the chats this connector talks in with the last
// message received in each (Chat and MessageID set; At when known).
// Discord redelivers nothing a client missed while its session could not
// be resumed, so after every fresh IDENTIFY the platform reads each chat's
// messages after that one (at most an hour back) and hands them to the
// handler in order, as if dispatched; their keys dedup what was seen.
type Catchup interface {
	LastInbound(ctx context.Context) ([]connector.Inbound, error)
}

// Platform is one Discord bot. Run owns the gateway connection; Send,
// Edit, Typing, Upload and Fetch may be called from any goroutine.
type Platform struct {
	cfg    connector.Config
	deps   connector.PlatformDeps
	api    string
	rest   *http.Client
	limits *limiter
	log    *slog.Logger

	mu      sync.Mutex // guards bot and botName
	bot     string     // the bot's user id, from READY
	botName string     // "@" + its username
}

// New is the Discord connector.Factory. It does no I/O.
func New(cfg connector.Config, deps connector.PlatformDeps) (connector.Platform, connector.Caps, error) {
	p, err := newPlatform(cfg, deps)
	if err != nil {
		return nil, connector.Caps{}, err
	}
	return p, caps, nil
}

func newPlatform(cfg connector.Config, deps connector.PlatformDeps) (*Platform, error) {
	if cfg.Token == "" {
		return nil, fmt.Errorf("discord: no token: %w", connector.ErrConfig)
	}
	if cfg.Mode != "" && cfg.Mode != "gateway" {
		return nil, fmt.Errorf("discord: mode %q: only gateway: %w", cfg.Mode, connector.ErrConfig)
	}
	api := strings.TrimRight(cfg.APIURL, "/")
	if api == "" {
		api = DefaultAPIURL
	}
	if deps.HTTP == nil {
		deps.HTTP = &http.Client{}
	}
	if deps.Dialer == nil {
		deps.Dialer = &net.Dialer{}
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Redact == nil {
		tok := cfg.Token
		deps.Redact = func(s string) string { return strings.ReplaceAll(s, tok, "[token]") }
	}
	if deps.State == nil {
		deps.State = func(string, string, error) {}
	}
	return &Platform{
		cfg: cfg, deps: deps, api: api, rest: deps.HTTP,
		limits: newLimiter(), log: deps.Logger,
	}, nil
}

// botID is the bot's user id once READY came ("" before).
func (p *Platform) botID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bot
}

func (p *Platform) setBot(id, name string) {
	p.mu.Lock()
	p.bot, p.botName = id, "@"+name
	p.mu.Unlock()
}

// name is the bot's name for PlatformDeps.State.
func (p *Platform) name() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.botName
}

// kept are the errors a redacted error still wraps: what callers decide
// by, never a text that could hold a secret.
var kept = []error{
	connector.ErrAuth, connector.ErrConfig, connector.ErrPermanent,
	connector.ErrMarkup, connector.ErrTooLong,
	context.Canceled, context.DeadlineExceeded,
}

// redactErr returns err's text with every secret replaced. It wraps only
// the sentinels and the *connector.RetryAfter err wrapped (so errors.Is
// and errors.As still decide), never err itself: nothing unwrapped from it
// can show a secret.
func (p *Platform) redactErr(err error) error {
	if err == nil {
		return nil
	}
	r := &redacted{text: p.deps.Redact(err.Error())}
	for _, k := range kept {
		if errors.Is(err, k) {
			r.errs = append(r.errs, k)
		}
	}
	if ra, ok := errors.AsType[*connector.RetryAfter](err); ok {
		r.errs = append(r.errs, ra)
	}
	return r
}

type redacted struct {
	text string
	errs []error
}

func (r *redacted) Error() string   { return r.text }
func (r *redacted) Unwrap() []error { return r.errs }

var (
	_ connector.Typer    = (*Platform)(nil)
	_ connector.Uploader = (*Platform)(nil)
	_ connector.Fetcher  = (*Platform)(nil)
)
