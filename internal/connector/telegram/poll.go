package telegram

import (
	"context"
	"errors"
	"time"

	"agentd/internal/connector"
)

// pollTimeout is getUpdates' long-poll timeout; the HTTP call waits
// pollSlack more before it gives up on the connection.
const (
	pollTimeout = 50 * time.Second
	pollSlack   = 10 * time.Second
)

// poll is the long poll (https://core.telegram.org/bots/api#getupdates).
// Telegram keeps an update until a getUpdates' offset passes it, so agentd
// stores no offset: the next call's offset is the update after the last
// one the handler took (returned nil for), and an update it did not take
// comes again. A webhook left set by an earlier webhook mode is deleted
// first (getUpdates refuses to run beside one).
func (p *Platform) poll(ctx context.Context, h connector.Handler, bot string) error {
	var info struct {
		URL string `json:"url"`
	}
	if err := p.retry(ctx, bot, func() error { return p.c.call(ctx, "getWebhookInfo", struct{}{}, &info) }); err != nil || ctx.Err() != nil {
		return err
	}
	if info.URL != "" {
		if err := p.retry(ctx, bot, func() error { return p.c.call(ctx, "deleteWebhook", struct{}{}, nil) }); err != nil || ctx.Err() != nil {
			return err
		}
	}
	p.state(connector.StateConnected, bot, nil)
	var (
		offset int64
		b      backoff
		down   bool
	)
	for {
		var ups []update
		cctx, cancel := context.WithTimeout(ctx, pollTimeout+pollSlack)
		err := p.c.call(cctx, "getUpdates", map[string]any{
			"offset": offset, "timeout": int(pollTimeout / time.Second), "allowed_updates": []string{"message"},
		}, &ups)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			p.state(connector.StateDown, bot, err)
			if errors.Is(err, connector.ErrAuth) || errors.Is(err, connector.ErrConfig) {
				return err
			}
			p.log.Warn("telegram: getUpdates failed; retrying", "connector", p.name, "err", err.Error())
			down = true
			if !sleep(ctx, b.next(err)) {
				return nil
			}
			continue
		}
		if down {
			p.state(connector.StateConnected, bot, nil)
			down = false
		}
		b.reset()
		for _, u := range ups {
			if err := p.take(ctx, h, u); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				// Not taken: the offset stays on it, Telegram gives it again.
				p.log.Warn("telegram: an update was not taken; it comes again", "connector", p.name, "update", u.UpdateID, "err", p.c.redact(err.Error()))
				if !sleep(ctx, b.next(err)) {
					return nil
				}
				break
			}
			offset = u.UpdateID + 1
		}
	}
}

// take hands an update's message to h; an update that is no message for
// the bot is taken as it is.
func (p *Platform) take(ctx context.Context, h connector.Handler, u update) error {
	m, ok := p.inbound(u)
	if !ok {
		return nil
	}
	return h.Inbound(ctx, m)
}
