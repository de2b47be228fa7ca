package connector

import (
	"errors"
	"fmt"
	"time"
)

// Errors a Platform returns, wrapped with %w and a lowercase prefix. Every
// text a platform returns passes through PlatformDeps.Redact first: a token
// never reaches an error, a log or an event.
var (
	// ErrAuth: the platform refused the token (HTTP 401, Discord close
	// 4004). No reconnect mends it.
	ErrAuth = errors.New("connector: the platform refused the token")
	// ErrConfig: the bot is not set up for what agentd asks (Discord close
	// 4014: the Message Content intent is off; Slack missing_scope; a
	// Telegram webhook set while polling). No reconnect mends it.
	ErrConfig = errors.New("connector: the bot is not set up for this")
	// ErrPermanent: the platform refused this message for good (chat not
	// found, bot blocked by the user, not in channel): no retry.
	ErrPermanent = errors.New("connector: the platform refused the message")
	// ErrMarkup: the platform refused the message's markup (Telegram
	// "can't parse entities"): the same part is sent again as plain text.
	ErrMarkup = errors.New("connector: the platform refused the markup")
	// ErrTooLong: the message passes the platform's length limit.
	ErrTooLong = errors.New("connector: the message is too long")
)

// RetryAfter is a platform's 429: wait D before the next call of the same
// kind (Global: before any call of this bot). Bucket names the platform's
// rate-limit bucket where it has one (Discord).
type RetryAfter struct {
	D      time.Duration
	Global bool
	Bucket string
}

func (e *RetryAfter) Error() string {
	if e.Global {
		return fmt.Sprintf("connector: rate limited (global), retry after %s", e.D)
	}
	return fmt.Sprintf("connector: rate limited, retry after %s", e.D)
}
