package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"agentd/internal/connector"
)

// maxAnswer bounds a Web API answer agentd reads (a history page of 50
// messages is far below it).
const maxAnswer = 4 << 20

// replyEvent is the event_type of the metadata agentd puts on every message
// it creates: its event_payload carries the outbox's nonce, which Find
// looks for after a crash.
const replyEvent = "agentd_reply"

// answer is what every Web API method answers.
type answer struct {
	OK               bool   `json:"ok"`
	Error            string `json:"error"`
	ResponseMetadata struct {
		Messages []string `json:"messages"`
	} `json:"response_metadata"`
}

// errorKinds maps Slack's error codes to what agentd does about them
// (https://api.slack.com/methods/chat.postMessage#errors and the other
// methods' tables). A code not here is worth a retry.
var errorKinds = map[string]error{
	"invalid_auth":           connector.ErrAuth,
	"not_authed":             connector.ErrAuth,
	"account_inactive":       connector.ErrAuth,
	"token_revoked":          connector.ErrAuth,
	"token_expired":          connector.ErrAuth,
	"missing_scope":          connector.ErrConfig,
	"not_allowed_token_type": connector.ErrConfig,
	"no_permission":          connector.ErrConfig,
	"channel_not_found":      connector.ErrPermanent,
	"not_in_channel":         connector.ErrPermanent,
	"is_archived":            connector.ErrPermanent,
	"message_not_found":      connector.ErrPermanent,
	"cant_update_message":    connector.ErrPermanent,
	"restricted_action":      connector.ErrPermanent,
	"msg_too_long":           connector.ErrTooLong,
	"no_text":                connector.ErrPermanent,
	"invalid_arguments":      connector.ErrPermanent,
}

// wireError is an error whose text has passed Redact, wrapping one of
// connector's sentinels (or none).
type wireError struct {
	text string
	kind error
}

func (e *wireError) Error() string { return e.text }
func (e *wireError) Unwrap() error { return e.kind }

// fail returns an error of kind (nil: none) whose text is redacted.
func (p *Platform) fail(kind error, format string, args ...any) error {
	text := p.deps.Redact(fmt.Sprintf(format, args...))
	if kind != nil {
		text += ": " + kind.Error()
	}
	return &wireError{text: text, kind: kind}
}

// call invokes Web API method with token in the Authorization header (the
// only place a token goes: never a URL or a body). body is url.Values (sent
// form-encoded: the read methods take only that) or a value sent as JSON.
// out receives the answer when it is ok.
func (p *Platform) call(ctx context.Context, method, token string, body, out any) error {
	var (
		rd    io.Reader
		ctype string
	)
	switch b := body.(type) {
	case url.Values:
		rd, ctype = strings.NewReader(b.Encode()), "application/x-www-form-urlencoded"
	case nil:
		rd, ctype = strings.NewReader(""), "application/x-www-form-urlencoded"
	default:
		js, err := json.Marshal(b)
		if err != nil {
			return fmt.Errorf("slack: %s: %w", method, err)
		}
		rd, ctype = bytes.NewReader(js), "application/json; charset=utf-8"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.cfg.APIURL+"/"+method, rd)
	if err != nil {
		return p.fail(connector.ErrConfig, "slack: %s: %v", method, err)
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := p.deps.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return p.fail(nil, "slack: %s: %v", method, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return p.fail(nil, "slack: %s: reading the answer: %v", method, err)
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return &connector.RetryAfter{D: retryAfter(resp.Header.Get("Retry-After"))}
	}
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		return p.fail(nil, "slack: %s: HTTP %d: %v", method, resp.StatusCode, err)
	}
	if !a.OK {
		return p.apiError(method, resp, a)
	}
	if resp.StatusCode/100 != 2 {
		return p.fail(nil, "slack: %s: HTTP %d", method, resp.StatusCode)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return p.fail(nil, "slack: %s: %v", method, err)
	}
	return nil
}

// apiError is an ok:false answer as agentd's error.
func (p *Platform) apiError(method string, resp *http.Response, a answer) error {
	if a.Error == "ratelimited" || a.Error == "rate_limited" {
		return &connector.RetryAfter{D: retryAfter(resp.Header.Get("Retry-After"))}
	}
	detail := a.Error
	if len(a.ResponseMetadata.Messages) > 0 {
		detail += " (" + strings.Join(a.ResponseMetadata.Messages, "; ") + ")"
	}
	if resp.StatusCode/100 == 5 {
		return p.fail(nil, "slack: %s: HTTP %d: %s", method, resp.StatusCode, detail)
	}
	return p.fail(errorKinds[a.Error], "slack: %s: %s", method, detail)
}

// retryAfter reads a Retry-After header's seconds (1 s when absent or
// unreadable: Slack always sends one with a 429).
func retryAfter(h string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(h))
	if err != nil || n < 1 {
		return time.Second
	}
	return time.Duration(n) * time.Second
}

// authTest asks Slack who the bot is.
func (p *Platform) authTest(ctx context.Context) (identity, error) {
	var a struct {
		UserID string `json:"user_id"`
		BotID  string `json:"bot_id"`
		TeamID string `json:"team_id"`
		User   string `json:"user"`
	}
	if err := p.call(ctx, "auth.test", p.cfg.Token, nil, &a); err != nil {
		return identity{}, err
	}
	if a.UserID == "" {
		return identity{}, p.fail(connector.ErrConfig, "slack: auth.test: the token is not a bot's (no user_id)")
	}
	return identity{User: a.UserID, Bot: a.BotID, Team: a.TeamID, Name: a.User}, nil
}

// metadata is a message's metadata (https://api.slack.com/metadata).
type metadata struct {
	EventType    string `json:"event_type"`
	EventPayload struct {
		Nonce string `json:"nonce,omitempty"`
	} `json:"event_payload"`
}

// postMessage is chat.postMessage's body.
type postMessage struct {
	Channel     string    `json:"channel"`
	Text        string    `json:"text"`
	ThreadTS    string    `json:"thread_ts,omitempty"`
	Mrkdwn      bool      `json:"mrkdwn"`
	UnfurlLinks bool      `json:"unfurl_links"`
	Metadata    *metadata `json:"metadata,omitempty"`
}

// Send creates a message with chat.postMessage, in the chat's thread when
// it has one, carrying the nonce in the message's metadata (see Find).
func (p *Platform) Send(ctx context.Context, m connector.Outgoing) (connector.Sent, error) {
	body := postMessage{Channel: m.Chat.ID, Text: m.Text, ThreadTS: m.Chat.Thread, Mrkdwn: !m.Plain}
	if m.Nonce != "" {
		body.Metadata = &metadata{EventType: replyEvent}
		body.Metadata.EventPayload.Nonce = m.Nonce
	}
	var a struct {
		TS string `json:"ts"`
	}
	if err := p.call(ctx, "chat.postMessage", p.cfg.Token, body, &a); err != nil {
		return connector.Sent{}, err
	}
	if a.TS == "" {
		return connector.Sent{}, p.fail(nil, "slack: chat.postMessage: the answer has no ts")
	}
	if m.Chat.Thread != "" {
		p.threads.add(m.Chat.ID + "/" + m.Chat.Thread)
	}
	return connector.Sent{ID: a.TS, At: tsTime(a.TS, p.deps.Now)}, nil
}

// Edit replaces message id's text with chat.update. Slack answers ok to an
// edit that changes nothing.
func (p *Platform) Edit(ctx context.Context, m connector.Outgoing, id string) error {
	body := struct {
		Channel string `json:"channel"`
		TS      string `json:"ts"`
		Text    string `json:"text"`
	}{m.Chat.ID, id, m.Text}
	return p.call(ctx, "chat.update", p.cfg.Token, body, nil)
}

// tsTime reads a Slack ts ("1700000000.000100") as a time; now() when it
// cannot.
func tsTime(ts string, now func() time.Time) time.Time {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return now()
	}
	us, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	return time.Unix(s, us*1000)
}
