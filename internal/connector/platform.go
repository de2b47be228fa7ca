package connector

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"agentd/internal/connector/markup"
)

// Platform is one chat platform's wire, for one bot. Implementations live
// in connector/telegram, connector/discord and connector/slack.
type Platform interface {
	// Run receives until ctx ends: it connects (and reconnects, resumes,
	// backs off) on its own and hands every inbound message to h, one
	// chat at a time in order. It acknowledges a message to the platform
	// only after h returned nil (the message is durable, or refused on
	// purpose). It returns nil on ctx's end, or an error wrapping ErrAuth
	// or ErrConfig that no reconnect can mend. Run reports its
	// connection's state through PlatformDeps.State.
	Run(ctx context.Context, h Handler) error
	// Send creates one message (one part of a reply) and returns its id.
	Send(ctx context.Context, m Outgoing) (Sent, error)
	// Edit replaces the text of message id. Editing to the same text is
	// success.
	Edit(ctx context.Context, m Outgoing, id string) error
}

// Handler takes an inbound message. It returns nil once the message is
// durable (submitted) or refused on purpose; an error means "not handled:
// do not acknowledge, the platform redelivers".
type Handler interface {
	Inbound(ctx context.Context, m Inbound) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, m Inbound) error

// Inbound calls f.
func (f HandlerFunc) Inbound(ctx context.Context, m Inbound) error { return f(ctx, m) }

// Typer shows a typing indicator in a chat for a few seconds (Telegram
// sendChatAction, Discord POST /typing). Optional.
type Typer interface {
	Typing(ctx context.Context, c Chat) error
}

// Webhook is a platform that receives over HTTP (Telegram webhook mode,
// Slack Events API): the gateway's public route POST
// /connectors/{name}/webhook hands it the request, and it verifies the
// request itself (secret header, signature) before anything else. It
// answers 2xx only after the handler returned nil. Optional.
type Webhook interface {
	ServeWebhook(w http.ResponseWriter, r *http.Request)
}

// Finder finds a message this bot created in a chat since since whose
// nonce is nonce: it closes the crash window between a create the platform
// made and its id recorded (Slack message metadata). ok false: not found,
// the create is made again. An error wrapping ErrConfig or ErrAuth (a
// missing scope) says it cannot look: the create is made again, marked in
// doubt. Optional.
type Finder interface {
	Find(ctx context.Context, c Chat, nonce string, since time.Time) (id string, ok bool, err error)
}

// Uploader sends a file (photo or document) to a chat. Optional.
type Uploader interface {
	Upload(ctx context.Context, c Chat, f File) (Sent, error)
}

// Fetcher downloads an inbound attachment, at most max bytes, and returns
// its bytes and media type. Optional.
type Fetcher interface {
	Fetch(ctx context.Context, a Attachment, max int64) ([]byte, string, error)
}

// Factory makes a Platform for one connector instance and says what it can
// do. It does no I/O: Run connects.
type Factory func(cfg Config, deps PlatformDeps) (Platform, Caps, error)

// Config is one connector instance's settings for its platform, with its
// secrets resolved (never logged, never stored).
type Config struct {
	Name          string // the integration row's name
	Token         string // the bot token (Slack: the xoxb- bot token)
	APIURL        string // the API base URL; "" is the platform's public one
	Mode          string // telegram: polling | webhook; slack: socket | events; discord: gateway ("" is the first)
	AppToken      string // slack socket mode: the xapp- app-level token
	SigningSecret string // slack events mode: the signing secret
	WebhookSecret string // telegram webhook mode: the secret token header's value
	PublicURL     string // webhook modes: the URL the platform posts to
	GatewayURL    string // discord: the gateway's wss base ("" asks GET /gateway/bot)
}

// PlatformDeps is what a Platform is given to reach out and report.
type PlatformDeps struct {
	HTTP   *http.Client // through the SSRF guard; its timeout is the platform's to set per call with ctx
	Dialer *net.Dialer  // through the SSRF guard, for WebSocket dials
	Logger *slog.Logger
	Now    func() time.Time
	// Redact replaces every secret of the instance in s with its reference
	// (secret.Redact over the resolved values). Every error text and log
	// line a platform makes passes through it.
	Redact func(s string) string
	// State reports the connection's state: StateConnecting,
	// StateConnected (with the bot's name, "@name" or its id), StateDown
	// (with the error, already redacted).
	State func(state, bot string, err error)
}

// Connection states, as ConnectorState.State shows them.
const (
	StateConnecting = "connecting"
	StateConnected  = "connected"
	StateDegraded   = "degraded" // connected, but sending is paused or failing
	StateDown       = "down"     // not connected; retrying (or, ErrAuth/ErrConfig, waiting for the row to change)
	StateDisabled   = "disabled"
	StateStandby    = "standby" // another node runs this connector
)

// Caps is what a platform can do and its limits.
type Caps struct {
	MaxText        int            // a message's length limit in Unit (4096 telegram, 2000 discord, 4000 slack)
	Unit           markup.Unit    // how MaxText counts (Telegram: UTF-16 code units of the text after parsing)
	EditEvery      time.Duration  // the least time between two edits of one message in a DM
	GroupEditEvery time.Duration  // the same in a group
	Dialect        markup.Dialect // the markup Send and Edit take when Outgoing.Plain is false
	// Nonce: Send sends Outgoing.Nonce and the platform returns the first
	// message for a nonce sent again (Discord enforce_nonce), so a create
	// made again after a crash makes no second message.
	Nonce bool
}

// Chat is where a message is: a DM or a group chat, and a thread in it.
type Chat struct {
	ID     string `json:"id"`               // telegram chat id, discord channel id, slack channel id
	Thread string `json:"thread,omitempty"` // telegram message_thread_id, slack thread_ts ("" none; a discord thread is its own channel)
	Kind   string `json:"kind"`             // ChatDM or ChatGroup
	Team   string `json:"team,omitempty"`   // slack team id, discord guild id
}

// Chat kinds.
const (
	ChatDM    = "dm"
	ChatGroup = "group"
)

// Key is the chat's conversation key: its id, and "/" + thread when it has
// one.
func (c Chat) Key() string {
	if c.Thread == "" {
		return c.ID
	}
	return c.ID + "/" + c.Thread
}

// Inbound is one message a person sent, as the platform gave it.
type Inbound struct {
	// Key is the idempotency key: "tg:<update_id>", "dc:<message id>",
	// "sl:<channel>:<ts>". A redelivery carries the same key.
	Key         string
	Chat        Chat
	User        string // the platform's user id
	Name        string // the sender's display name
	Bot         bool   // sent by a bot (ignored)
	MessageID   string
	Text        string // with the mention of the bot removed
	Mentioned   bool   // the bot was mentioned (or a /command@bot named it)
	ReplyToBot  bool   // a reply to one of the bot's messages
	Attachments []Attachment
	At          time.Time
}

// Outgoing is one message (one part of a reply) to create or edit.
type Outgoing struct {
	Chat    Chat
	Text    string // rendered in Caps.Dialect, or plain when Plain
	Plain   bool   // send without markup
	ReplyTo string // the message id this answers ("" none)
	Nonce   string // see Caps.Nonce and Finder ("" none)
}

// Sent is a message the platform made.
type Sent struct {
	ID string
	At time.Time
}

// Attachment is a file a person sent. URL is never logged (it may carry a
// credential: Slack's url_private, Telegram's file path).
type Attachment struct {
	ID   string
	Name string
	Type string // media type, "" unknown
	Size int64
	URL  string
}

// File is a file to send: Data, or a URL the platform fetches itself.
type File struct {
	Name    string
	Type    string
	Data    []byte
	URL     string
	Caption string
}
