package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"time"

	"agentd/internal/connector"
)

// userAgent is what Discord asks bots to send:
// "DiscordBot ($url, $versionNumber)".
const userAgent = "DiscordBot (https://github.com/agentd, 1)"

// maxBody bounds an answer read from Discord's REST API.
const maxBody = 4 << 20

// apiError is Discord's error body: {"message": "...", "code": 50001}.
type apiError struct {
	Message string `json:"message"`
	Code    int    `json:"code"`
}

// call makes one REST call through the limiter and decodes a 2xx answer
// into out (nil: ignored). body is JSON unless contentType says otherwise.
func (p *Platform) call(ctx context.Context, method, path string, r route, body []byte, contentType string, out any) error {
	if err := p.limits.wait(ctx, r); err != nil {
		if errors.Is(err, errSpent) {
			// Discord bans an IP past 10,000 in 10 minutes: say so.
			p.deps.State(connector.StateDegraded, p.name(), err)
		}
		return p.redactErr(err)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.api+path, bytes.NewReader(body))
	if err != nil {
		return p.redactErr(fmt.Errorf("discord: %s %s: %w", method, r.key, err))
	}
	req.Header.Set("Authorization", "Bot "+p.cfg.Token)
	req.Header.Set("User-Agent", userAgent)
	if body != nil {
		if contentType == "" {
			contentType = "application/json"
		}
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := p.rest.Do(req)
	if err != nil {
		return p.redactErr(fmt.Errorf("discord: %s %s: %w", method, r.key, err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return p.redactErr(fmt.Errorf("discord: %s %s: reading the answer: %w", method, r.key, err))
	}
	if ra := p.limits.update(r, resp.Header, resp.StatusCode, data, time.Now()); ra != nil {
		return p.redactErr(fmt.Errorf("discord: %s %s: %w", method, r.key, ra))
	}
	if resp.StatusCode/100 != 2 {
		return p.redactErr(statusError(method, r.key, resp.StatusCode, data))
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return p.redactErr(fmt.Errorf("discord: %s %s: the answer: %w", method, r.key, err))
	}
	return nil
}

// statusError maps a refused call to the connector's sentinels.
func statusError(method, key string, status int, body []byte) error {
	var e apiError
	_ = json.Unmarshal(body, &e)
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(status)
	}
	var kind error
	switch {
	case status == http.StatusUnauthorized:
		kind = connector.ErrAuth
	case e.Code == 50035 && strings.Contains(strings.ToLower(msg), "length"),
		e.Code == 50035 && strings.Contains(string(body), "BASE_TYPE_MAX_LENGTH"):
		kind = connector.ErrTooLong
	case status == http.StatusForbidden, status == http.StatusNotFound, status == http.StatusBadRequest:
		kind = connector.ErrPermanent
	default:
		return fmt.Errorf("discord: %s %s: %d %s (code %d)", method, key, status, msg, e.Code)
	}
	return fmt.Errorf("discord: %s %s: %d %s (code %d): %w", method, key, status, msg, e.Code, kind)
}

// message is the part of Discord's message object agentd reads.
type message struct {
	ID        string `json:"id"`
	ChannelID string `json:"channel_id"`
	GuildID   string `json:"guild_id,omitempty"`
	Author    user   `json:"author"`
	Content   string `json:"content"`
	Timestamp string `json:"timestamp"`
	Mentions  []user `json:"mentions"`
	Nonce     any    `json:"nonce,omitempty"`
	// MessageReference and ReferencedMessage say what this answers.
	MessageReference  *messageReference `json:"message_reference,omitempty"`
	ReferencedMessage *message          `json:"referenced_message,omitempty"`
	Attachments       []attachment      `json:"attachments"`
}

type user struct {
	ID         string `json:"id"`
	Username   string `json:"username"`
	GlobalName string `json:"global_name,omitempty"`
	Bot        bool   `json:"bot,omitempty"`
}

type messageReference struct {
	MessageID       string `json:"message_id,omitempty"`
	ChannelID       string `json:"channel_id,omitempty"`
	FailIfNotExists *bool  `json:"fail_if_not_exists,omitempty"`
}

type attachment struct {
	ID          string `json:"id"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type,omitempty"`
	Size        int64  `json:"size"`
	URL         string `json:"url"`
}

// createBody is POST /channels/{id}/messages's JSON (or payload_json).
type createBody struct {
	Content          string            `json:"content,omitempty"`
	Nonce            string            `json:"nonce,omitempty"`
	EnforceNonce     bool              `json:"enforce_nonce,omitempty"`
	AllowedMentions  allowedMentions   `json:"allowed_mentions"`
	MessageReference *messageReference `json:"message_reference,omitempty"`
	Attachments      []attachment      `json:"attachments,omitempty"`
}

// allowedMentions with an empty parse pings nobody: a reply never
// notifies @everyone, a role or a user its text names.
type allowedMentions struct {
	Parse []string `json:"parse"`
}

func channelRoute(method, channel, rest string) route {
	return route{key: method + " /channels/{id}" + rest, major: channel}
}

// Send creates one message: with its nonce enforced, so a create made
// again (after a crash) returns the first message, pinging nobody, and
// answering m.ReplyTo when set.
func (p *Platform) Send(ctx context.Context, m connector.Outgoing) (connector.Sent, error) {
	b := p.createBody(m.Text, m)
	body, err := json.Marshal(b)
	if err != nil {
		return connector.Sent{}, fmt.Errorf("discord: send: %w", err)
	}
	var out message
	err = p.call(ctx, http.MethodPost, "/channels/"+url.PathEscape(m.Chat.ID)+"/messages",
		channelRoute(http.MethodPost, m.Chat.ID, "/messages"), body, "", &out)
	if err != nil {
		return connector.Sent{}, err
	}
	return connector.Sent{ID: out.ID, At: parseTime(out.Timestamp, p.deps.Now())}, nil
}

func (p *Platform) createBody(text string, m connector.Outgoing) createBody {
	b := createBody{Content: text, AllowedMentions: allowedMentions{Parse: []string{}}}
	if m.Nonce != "" {
		b.Nonce, b.EnforceNonce = nonce(m.Nonce), true
	}
	if m.ReplyTo != "" {
		f := false
		b.MessageReference = &messageReference{MessageID: m.ReplyTo, FailIfNotExists: &f}
	}
	return b
}

// nonce fits a nonce into Discord's: at most 25 characters.
func nonce(n string) string {
	if len(n) > 25 {
		return n[len(n)-25:]
	}
	return n
}

// Edit replaces message id's text. Discord accepts an edit to the same
// text.
func (p *Platform) Edit(ctx context.Context, m connector.Outgoing, id string) error {
	body, err := json.Marshal(struct {
		Content         string          `json:"content"`
		AllowedMentions allowedMentions `json:"allowed_mentions"`
	}{m.Text, allowedMentions{Parse: []string{}}})
	if err != nil {
		return fmt.Errorf("discord: edit: %w", err)
	}
	return p.call(ctx, http.MethodPatch,
		"/channels/"+url.PathEscape(m.Chat.ID)+"/messages/"+url.PathEscape(id),
		channelRoute(http.MethodPatch, m.Chat.ID, "/messages/{id}"), body, "", nil)
}

// Typing shows the bot typing in c for about 10 seconds.
func (p *Platform) Typing(ctx context.Context, c connector.Chat) error {
	return p.call(ctx, http.MethodPost, "/channels/"+url.PathEscape(c.ID)+"/typing",
		channelRoute(http.MethodPost, c.ID, "/typing"), nil, "", nil)
}

// Upload sends f to c as a message with one attachment: multipart with
// payload_json and files[0]. A File with only a URL is sent as a link.
func (p *Platform) Upload(ctx context.Context, c connector.Chat, f connector.File) (connector.Sent, error) {
	if len(f.Data) == 0 {
		return p.Send(ctx, connector.Outgoing{Chat: c, Text: strings.TrimSpace(f.Caption + "\n" + f.URL), Plain: true})
	}
	b := createBody{Content: f.Caption, AllowedMentions: allowedMentions{Parse: []string{}},
		Attachments: []attachment{{ID: "0", Filename: f.Name}}}
	payload, err := json.Marshal(b)
	if err != nil {
		return connector.Sent{}, fmt.Errorf("discord: upload: %w", err)
	}
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	pj, err := w.CreateFormField("payload_json")
	if err == nil {
		_, err = pj.Write(payload)
	}
	if err == nil {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", multipart.FileContentDisposition("files[0]", f.Name))
		if f.Type != "" {
			h.Set("Content-Type", f.Type)
		}
		var fw io.Writer
		if fw, err = w.CreatePart(h); err == nil {
			_, err = fw.Write(f.Data)
		}
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return connector.Sent{}, fmt.Errorf("discord: upload: %w", err)
	}
	var out message
	err = p.call(ctx, http.MethodPost, "/channels/"+url.PathEscape(c.ID)+"/messages",
		channelRoute(http.MethodPost, c.ID, "/messages"), buf.Bytes(), w.FormDataContentType(), &out)
	if err != nil {
		return connector.Sent{}, err
	}
	return connector.Sent{ID: out.ID, At: parseTime(out.Timestamp, p.deps.Now())}, nil
}

// Fetch downloads an attachment from Discord's CDN (its URL carries no
// credential, but is not logged either), at most max bytes.
func (p *Platform) Fetch(ctx context.Context, a connector.Attachment, max int64) ([]byte, string, error) {
	if a.Size > max {
		return nil, "", fmt.Errorf("discord: attachment %q is %d bytes, more than %d: %w", a.Name, a.Size, max, connector.ErrTooLong)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL, nil)
	if err != nil {
		return nil, "", fmt.Errorf("discord: attachment %q: bad url", a.Name)
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := p.rest.Do(req)
	if err != nil {
		// url.Error names the URL: keep only what went wrong.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return nil, "", p.redactErr(fmt.Errorf("discord: attachment %q: %w", a.Name, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, "", fmt.Errorf("discord: attachment %q: %d", a.Name, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, "", p.redactErr(fmt.Errorf("discord: attachment %q: %w", a.Name, err))
	}
	if int64(len(data)) > max {
		return nil, "", fmt.Errorf("discord: attachment %q is more than %d bytes: %w", a.Name, max, connector.ErrTooLong)
	}
	typ := a.Type
	if typ == "" {
		typ = http.DetectContentType(data)
	}
	return data, typ, nil
}

// gatewayBot asks where the gateway is: GET /gateway/bot.
func (p *Platform) gatewayBot(ctx context.Context) (string, error) {
	var out struct {
		URL string `json:"url"`
	}
	if err := p.call(ctx, http.MethodGet, "/gateway/bot", route{key: "GET /gateway/bot"}, nil, "", &out); err != nil {
		return "", err
	}
	if out.URL == "" {
		return "", fmt.Errorf("discord: GET /gateway/bot: no url")
	}
	return out.URL, nil
}

// messagesAfter lists up to limit messages of channel after id, oldest
// first (Discord answers newest first).
func (p *Platform) messagesAfter(ctx context.Context, channel, after string, limit int) ([]message, error) {
	q := url.Values{"after": {after}, "limit": {fmt.Sprint(limit)}}
	var out []message
	err := p.call(ctx, http.MethodGet, "/channels/"+url.PathEscape(channel)+"/messages?"+q.Encode(),
		channelRoute(http.MethodGet, channel, "/messages"), nil, "", &out)
	if err != nil {
		return nil, err
	}
	sortByID(out)
	return out, nil
}

func parseTime(s string, def time.Time) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return def
	}
	return t
}
