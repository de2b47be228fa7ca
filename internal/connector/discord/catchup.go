package discord

import (
	"context"
	"errors"
	"time"

	"agentd/internal/connector"
)

// Catch-up bounds: how far back, and how many messages a chat at most.
const (
	catchupBack  = time.Hour
	catchupPage  = 50
	catchupPages = 20
)

// catchup hands h what each chat it knows received after its last inbound
// message (at most catchupBack ago), oldest first, as if dispatched. It
// runs after a fresh IDENTIFY: Discord replays nothing then. A chat this
// bot can no longer read is skipped; any other error ends it (it runs
// again after the next connection's READY or RESUMED).
func (p *Platform) catchup(ctx context.Context, h connector.Handler) error {
	c, ok := h.(Catchup)
	if !ok {
		return nil
	}
	last, err := c.LastInbound(ctx)
	if err != nil {
		return p.redactErr(err)
	}
	floor := snowflakeAt(p.deps.Now().Add(-catchupBack))
	for _, l := range last {
		after := l.MessageID
		if after == "" || idLess(after, floor) {
			after = floor
		}
		if err := p.catchupChat(ctx, h, l.Chat, after); err != nil {
			if errors.Is(err, connector.ErrPermanent) {
				p.log.Warn("discord: catch-up skips a chat", "chat", l.Chat.ID, "err", err)
				continue
			}
			return err
		}
	}
	return nil
}

func (p *Platform) catchupChat(ctx context.Context, h connector.Handler, c connector.Chat, after string) error {
	for range catchupPages {
		ms, err := p.messagesAfter(ctx, c.ID, after, catchupPage)
		if err != nil {
			return err
		}
		for _, m := range ms {
			after = m.ID
			if m.GuildID == "" {
				m.GuildID = c.Team // REST messages do not carry it
			}
			in, ok := p.inbound(m)
			if !ok {
				continue
			}
			if err := h.Inbound(ctx, in); err != nil {
				return p.redactErr(err)
			}
		}
		if len(ms) < catchupPage {
			return nil
		}
	}
	return nil
}
