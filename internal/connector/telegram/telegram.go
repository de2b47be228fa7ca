// Package telegram is the Telegram Bot API's wire for agentd's chat
// connectors (https://core.telegram.org/bots/api): it receives by long
// polling (getUpdates) or by webhook (setWebhook, the secret token header
// checked), turns a message into a connector.Inbound (private chats as DMs,
// groups and forum topics, mentions of the bot found and removed, photos
// and documents as attachments), and sends, edits, shows typing and
// uploads. The bot token travels in every URL's path: every error text
// passes through the instance's redaction, so no token reaches an error, a
// log or an event.
package telegram

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"agentd/internal/connector"
	"agentd/internal/connector/markup"
)

// PublicAPI is the Bot API's public base URL, the default api_url.
const PublicAPI = "https://api.telegram.org"

// Modes.
const (
	ModePolling = "polling"
	ModeWebhook = "webhook"
)

// Caps is what Telegram takes: 4096 UTF-16 code units a message after its
// markup is parsed, MarkdownV2, an edit a second in a private chat and one
// every 3 s in a group (Telegram's guidance of about 20 messages a minute
// in a group; a 429 always wins), no nonce.
var caps = connector.Caps{
	MaxText:        4096,
	Unit:           markup.UTF16,
	EditEvery:      time.Second,
	GroupEditEvery: 3 * time.Second,
	Dialect:        markup.Telegram,
}

// Platform is one Telegram bot. It is a connector.Platform, a Typer, a
// Webhook, an Uploader and a Fetcher.
type Platform struct {
	name   string
	mode   string
	public string // webhook mode: the URL Telegram posts to
	secret string // webhook mode: the X-Telegram-Bot-Api-Secret-Token value
	c      *client
	log    *slog.Logger
	now    func() time.Time
	state  func(state, bot string, err error)

	// mu guards me and h: the bot (after getMe) and the handler while Run
	// runs (webhook mode hands requests to it).
	mu sync.Mutex
	me user
	h  connector.Handler
}

var (
	_ connector.Factory  = New
	_ connector.Typer    = (*Platform)(nil)
	_ connector.Webhook  = (*Platform)(nil)
	_ connector.Uploader = (*Platform)(nil)
	_ connector.Fetcher  = (*Platform)(nil)
)

// New makes a Telegram Platform; it does no I/O (Run connects). cfg.Mode
// "" is polling; webhook mode needs cfg.PublicURL, and its secret is
// cfg.WebhookSecret or, when "", one derived from the token and the
// instance's name (stable across restarts and nodes, never stored).
func New(cfg connector.Config, deps connector.PlatformDeps) (connector.Platform, connector.Caps, error) {
	if cfg.Token == "" {
		return nil, caps, fmt.Errorf("telegram: no bot token: %w", connector.ErrConfig)
	}
	if deps.HTTP == nil {
		return nil, caps, fmt.Errorf("telegram: no HTTP client: %w", connector.ErrConfig)
	}
	p := &Platform{name: cfg.Name, mode: cfg.Mode, public: cfg.PublicURL, secret: cfg.WebhookSecret,
		log: deps.Logger, now: deps.Now, state: deps.State}
	switch p.mode {
	case "":
		p.mode = ModePolling
	case ModePolling:
	case ModeWebhook:
		if p.public == "" {
			return nil, caps, fmt.Errorf("telegram: webhook mode needs a public URL: %w", connector.ErrConfig)
		}
		if p.secret == "" {
			p.secret = DefaultSecret(cfg.Token, cfg.Name)
		}
	default:
		return nil, caps, fmt.Errorf("telegram: mode %q is not polling or webhook: %w", cfg.Mode, connector.ErrConfig)
	}
	api := strings.TrimRight(cfg.APIURL, "/")
	if api == "" {
		api = PublicAPI
	}
	token := cfg.Token
	redact := func(s string) string {
		if deps.Redact != nil {
			s = deps.Redact(s)
		}
		return strings.ReplaceAll(s, token, "[token]") // the token is in every URL: never let it through
	}
	p.c = &client{api: api, token: token, http: deps.HTTP, redact: redact}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.state == nil {
		p.state = func(string, string, error) {}
	}
	return p, caps, nil
}

// DefaultSecret is a webhook's secret token when none is configured:
// base64url(HMAC-SHA256(token, "agentd-telegram-webhook:"+name)), 43
// characters of Telegram's allowed A-Z a-z 0-9 _ -.
func DefaultSecret(token, name string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("agentd-telegram-webhook:" + name))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))[:43]
}

// Run receives until ctx ends: getMe first (ErrAuth on a refused token),
// the bot's commands set (best effort), then the long poll or, in webhook
// mode, setWebhook and ServeWebhook's requests.
func (p *Platform) Run(ctx context.Context, h connector.Handler) error {
	p.state(connector.StateConnecting, "", nil)
	me, err := p.getMe(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	p.mu.Lock()
	p.me = me
	p.mu.Unlock()
	bot := "@" + me.Username
	p.setCommands(ctx)
	if p.mode == ModeWebhook {
		p.setHandler(h) // before setWebhook: Telegram may post at once
		defer p.setHandler(nil)
		if err := p.retry(ctx, bot, func() error { return p.setWebhook(ctx) }); err != nil {
			return err
		}
		p.state(connector.StateConnected, bot, nil)
		<-ctx.Done()
		return nil
	}
	return p.poll(ctx, h, bot)
}

func (p *Platform) setHandler(h connector.Handler) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.h = h
}

func (p *Platform) bot() user {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.me
}

// getMe asks who the bot is, again with backoff until it answers or
// refuses the token.
func (p *Platform) getMe(ctx context.Context) (user, error) {
	var me user
	err := p.retry(ctx, "", func() error { return p.c.call(ctx, "getMe", struct{}{}, &me) })
	return me, err
}

// retry calls f until it succeeds, fails for good (ErrAuth, ErrConfig) or
// ctx ends (nil), waiting a 429's retry_after or a doubling backoff, and
// reporting the connection down meanwhile.
func (p *Platform) retry(ctx context.Context, bot string, f func() error) error {
	var b backoff
	for {
		err := f()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, connector.ErrAuth) || errors.Is(err, connector.ErrConfig) {
			p.state(connector.StateDown, bot, err)
			return err
		}
		p.state(connector.StateDown, bot, err)
		p.log.Warn("telegram: call failed; retrying", "connector", p.name, "err", err.Error())
		if !sleep(ctx, b.next(err)) {
			return nil
		}
	}
}

// builtins are the commands every connector answers, set with
// setMyCommands at start so Telegram's clients offer them.
var builtins = []struct {
	Command     string `json:"command"`
	Description string `json:"description"`
}{
	{"start", "Start talking to the agent"},
	{"reset", "Start a new conversation"},
	{"compact", "Summarise the conversation so far"},
	{"help", "List the commands"},
}

func (p *Platform) setCommands(ctx context.Context) {
	if err := p.c.call(ctx, "setMyCommands", map[string]any{"commands": builtins}, nil); err != nil && ctx.Err() == nil {
		p.log.Warn("telegram: the bot's commands were not set", "connector", p.name, "err", err.Error())
	}
}

// backoff doubles from 1 s to 30 s; a 429 waits its retry_after.
type backoff struct{ d time.Duration }

func (b *backoff) next(err error) time.Duration {
	var ra *connector.RetryAfter
	if errors.As(err, &ra) {
		return ra.D
	}
	b.d = min(max(2*b.d, time.Second), 30*time.Second)
	return b.d
}

func (b *backoff) reset() { b.d = 0 }

// sleep waits d or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
