package slack

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"agentd/internal/connector"
)

// findLimit is how many messages Find reads: the create window is one
// round trip, so the message sought is among the newest.
const findLimit = 50

// Find looks for the message this bot created in c since since with
// nonce in its metadata (see Send): conversations.replies in a thread,
// conversations.history otherwise. A bot without the history scope finds
// nothing (the create is made again, and the outbox marks it in doubt).
func (p *Platform) Find(ctx context.Context, c connector.Chat, nonce string, since time.Time) (string, bool, error) {
	if nonce == "" {
		return "", false, nil
	}
	q := url.Values{
		"channel":              {c.ID},
		"oldest":               {fmt.Sprintf("%d.%06d", since.Unix(), since.Nanosecond()/1000)},
		"inclusive":            {"true"},
		"include_all_metadata": {"true"},
		"limit":                {fmt.Sprint(findLimit)},
	}
	method := "conversations.history"
	if c.Thread != "" {
		method = "conversations.replies"
		q.Set("ts", c.Thread)
	}
	var a struct {
		Messages []struct {
			TS       string    `json:"ts"`
			User     string    `json:"user"`
			BotID    string    `json:"bot_id"`
			Metadata *metadata `json:"metadata"`
		} `json:"messages"`
	}
	if err := p.call(ctx, method, p.cfg.Token, q, &a); err != nil {
		if errors.Is(err, connector.ErrConfig) {
			p.log.Warn("cannot look for a reply made before a crash; it is sent again, marked in doubt", "method", method, "err", err)
		}
		return "", false, err
	}
	self, err := p.whoami(ctx)
	if err != nil {
		return "", false, err
	}
	for _, m := range a.Messages {
		ours := (self.User != "" && m.User == self.User) || (self.Bot != "" && m.BotID == self.Bot)
		if ours && m.Metadata != nil && m.Metadata.EventType == replyEvent && m.Metadata.EventPayload.Nonce == nonce {
			return m.TS, true, nil
		}
	}
	return "", false, nil
}
