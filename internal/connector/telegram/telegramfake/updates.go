package telegramfake

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"agentd/internal/connector/chatfake"
)

// getUpdates is the long poll (https://core.telegram.org/bots/api#getupdates):
// it answers the updates not yet confirmed, or waits up to timeout seconds
// for one. An offset confirms every update below it. A second getUpdates
// ends the first with 409, as Telegram ends the older of two pollers; while
// a webhook is set it is a 409 too.
func (s *Server) getUpdates(ctx context.Context, p params) (any, error) {
	offset, err := p.int("offset")
	if err != nil {
		return nil, err
	}
	limit, err := p.int("limit")
	if err != nil {
		return nil, err
	}
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	timeout, err := p.int("timeout")
	if err != nil {
		return nil, err
	}
	var allowed []string
	if err := p.decode("allowed_updates", &allowed); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.hook != nil {
		s.mu.Unlock()
		return nil, &apiError{Code: 409, Desc: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"}
	}
	switch last := s.w.LastSeq(); {
	case offset < 0:
		s.confirmed = max(s.confirmed, last+offset+1)
	case offset > 0:
		s.confirmed = max(s.confirmed, offset-FirstUpdate+1)
	}
	close(s.poll)
	s.poll = make(chan struct{})
	mine := s.poll
	s.mu.Unlock()

	var wait <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(time.Duration(timeout) * time.Second)
		defer t.Stop()
		wait = t.C
	}
	for {
		changed := s.w.Changed()
		s.mu.Lock()
		from := s.confirmed
		s.mu.Unlock()
		posts := s.w.Posts(from)
		if len(allowed) > 0 && !slices.Contains(allowed, "message") {
			posts = nil
		}
		if len(posts) > 0 || wait == nil {
			out := make([]any, 0, min(len(posts), int(limit)))
			for _, post := range posts[:min(len(posts), int(limit))] {
				out = append(out, s.update(post))
			}
			return out, nil
		}
		select {
		case <-changed:
		case <-wait:
			wait = nil
		case <-mine:
			return nil, &apiError{Code: 409, Desc: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

var secretRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`) }) // compiled when first used: agentd starts light

// setWebhook sets the URL updates are posted to
// (https://core.telegram.org/bots/api#setwebhook). Unlike Telegram, the
// fake takes an http:// URL (tests listen on loopback without TLS).
func (s *Server) setWebhook(_ context.Context, p params) (any, error) {
	h := &webhook{URL: p.str("url"), Secret: p.str("secret_token")}
	if err := p.decode("allowed_updates", &h.Allowed); err != nil {
		return nil, err
	}
	mc, err := p.int("max_connections")
	if err != nil {
		return nil, err
	}
	h.MaxConn = int(max(mc, 1))
	if h.Secret != "" && !secretRE().MatchString(h.Secret) {
		return nil, badRequest("secret token contains unallowed characters")
	}
	if p.bool("drop_pending_updates") {
		s.dropPending()
	}
	if h.URL == "" {
		s.setHook(nil)
		return true, nil
	}
	if !strings.HasPrefix(h.URL, "https://") && !strings.HasPrefix(h.URL, "http://") {
		return nil, badRequest("bad webhook: An HTTPS URL must be provided for webhook")
	}
	s.setHook(h)
	return true, nil
}

func (s *Server) deleteWebhook(_ context.Context, p params) (any, error) {
	if p.bool("drop_pending_updates") {
		s.dropPending()
	}
	s.setHook(nil)
	return true, nil
}

func (s *Server) dropPending() {
	last := s.w.LastSeq()
	s.mu.Lock()
	s.confirmed = last + 1
	s.mu.Unlock()
}

func (s *Server) getWebhookInfo(context.Context, params) (any, error) {
	pending := 0
	s.mu.Lock()
	h, from, lastErr := s.hook, s.confirmed, s.lastError
	s.mu.Unlock()
	pending = len(s.w.Posts(from))
	info := map[string]any{"url": "", "has_custom_certificate": false, "pending_update_count": pending}
	if h != nil {
		info["url"] = h.URL
		info["max_connections"] = h.MaxConn
		if len(h.Allowed) > 0 {
			info["allowed_updates"] = h.Allowed
		}
		if lastErr != "" {
			info["last_error_message"] = lastErr
			info["last_error_date"] = s.w.Now().Unix()
		}
	}
	return info, nil
}

// setHook replaces the webhook and its pusher (nil: none).
func (s *Server) setHook(h *webhook) {
	defer s.w.Touch()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopHook != nil {
		s.stopHook()
		s.stopHook = nil
	}
	s.hook, s.lastError = h, ""
	close(s.poll) // a getUpdates in flight ends
	s.poll = make(chan struct{})
	if h == nil {
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.stopHook = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.push(ctx, h)
	}()
}

// push posts the updates to the webhook one at a time, in order, until ctx
// ends: an update is confirmed by a 2xx answer and posted again after
// RetryEvery otherwise, as Telegram does ("In case of an unsuccessful
// request, we will give up after a reasonable amount of attempts" — the
// fake never gives up).
func (s *Server) push(ctx context.Context, h *webhook) {
	for {
		changed := s.w.Changed()
		s.mu.Lock()
		from := s.confirmed
		s.mu.Unlock()
		posts := s.w.Posts(from)
		if len(posts) == 0 {
			select {
			case <-changed:
				continue
			case <-ctx.Done():
				return
			}
		}
		if err := s.post1(ctx, h, posts[0]); err != nil {
			s.mu.Lock()
			s.lastError = err.Error()
			s.mu.Unlock()
			t := time.NewTimer(s.retry)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		s.mu.Lock()
		if s.confirmed <= posts[0].Seq {
			s.confirmed = posts[0].Seq + 1
		}
		s.mu.Unlock()
	}
}

type statusError int

func (e statusError) Error() string {
	return "Wrong response from the webhook: " + http.StatusText(int(e))
}

func (s *Server) post1(ctx context.Context, h *webhook, p chatfake.Post) error {
	body, _ := json.Marshal(s.update(p))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if h.Secret != "" {
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", h.Secret)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return statusError(resp.StatusCode)
	}
	return nil
}

// update is a post as the Bot API's Update.
func (s *Server) update(p chatfake.Post) map[string]any {
	c, _ := s.w.Chat(p.Chat)
	msg := map[string]any{
		"message_id": num(p.ID),
		"from":       s.user(p.User),
		"chat":       s.chatObject(c),
		"date":       p.At.Unix(),
	}
	if p.Thread != "" {
		msg["message_thread_id"] = num(p.Thread)
		msg["is_topic_message"] = true
	}
	if p.ReplyTo != "" {
		if m, ok := s.w.Message(p.Chat, p.ReplyTo); ok {
			msg["reply_to_message"] = map[string]any{
				"message_id": num(m.ID), "from": s.user(s.bot.ID), "chat": s.chatObject(c),
				"date": m.Versions[0].At.Unix(), "text": m.Text(),
			}
		} else if q, ok := s.post(p.Chat, p.ReplyTo); ok {
			msg["reply_to_message"] = map[string]any{
				"message_id": num(q.ID), "from": s.user(q.User), "chat": s.chatObject(c),
				"date": q.At.Unix(), "text": q.Text,
			}
		}
	}
	textKey, entKey := "text", "entities"
	if len(p.Files) > 0 {
		textKey, entKey = "caption", "caption_entities"
		f := p.Files[0]
		if strings.HasPrefix(f.Type, "image/") {
			msg["photo"] = []any{s.photoSize(f)}
		} else {
			msg["document"] = s.document(f)
		}
	}
	if p.Text != "" {
		msg[textKey] = p.Text
		if ents := detectEntities(p.Text); len(ents) > 0 {
			msg[entKey] = ents
		}
	}
	return map[string]any{"update_id": FirstUpdate + p.Seq - 1, "message": msg}
}

func (s *Server) user(id string) map[string]any {
	u, ok := s.w.User(id)
	if id == s.bot.ID {
		u, ok = s.bot, true
	}
	if !ok {
		u = chatfake.User{ID: id, Name: "User " + id}
	}
	first, last, _ := strings.Cut(u.Name, " ")
	o := map[string]any{"id": num(u.ID), "is_bot": u.Bot, "first_name": first}
	if last != "" {
		o["last_name"] = last
	}
	if u.Username != "" {
		o["username"] = u.Username
	}
	return o
}

func (s *Server) chatObject(c chatfake.Chat) map[string]any {
	o := map[string]any{"id": num(c.ID)}
	switch {
	case c.Kind == chatfake.DM:
		o["type"] = "private"
		if u, ok := s.w.User(c.ID); ok {
			first, last, _ := strings.Cut(u.Name, " ")
			o["first_name"] = first
			if last != "" {
				o["last_name"] = last
			}
			if u.Username != "" {
				o["username"] = u.Username
			}
		}
	case c.Forum:
		o["type"], o["title"], o["is_forum"] = "supergroup", c.Title, true
	default:
		o["type"], o["title"] = "group", c.Title
		if strings.HasPrefix(c.ID, "-100") {
			o["type"] = "supergroup"
		}
	}
	return o
}

// botMessage is a message the bot made, as the Bot API's Message.
func (s *Server) botMessage(c chatfake.Chat, m chatfake.Message, plain string, ents []Entity) map[string]any {
	o := map[string]any{
		"message_id": num(m.ID), "from": s.user(s.bot.ID), "chat": s.chatObject(c),
		"date": m.Versions[0].At.Unix(),
	}
	if m.Thread != "" {
		o["message_thread_id"] = num(m.Thread)
		o["is_topic_message"] = true
	}
	if m.File == nil {
		o["text"] = plain
		if len(ents) > 0 {
			o["entities"] = ents
		}
	}
	return o
}

func (s *Server) photoSize(f chatfake.File) map[string]any {
	return map[string]any{"file_id": f.ID, "file_unique_id": "u" + f.ID, "width": 800, "height": 600, "file_size": len(f.Data)}
}

func (s *Server) document(f chatfake.File) map[string]any {
	o := map[string]any{"file_id": f.ID, "file_unique_id": "u" + f.ID, "file_size": len(f.Data)}
	if f.Name != "" {
		o["file_name"] = f.Name
	}
	if f.Type != "" {
		o["mime_type"] = f.Type
	}
	return o
}

var entityRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(^|\s)(@[A-Za-z0-9_]{3,32}|/[A-Za-z0-9_]{1,32}(@[A-Za-z0-9_]{3,32})?)`)
}) // compiled when first used: agentd starts light

// detectEntities finds the mentions and bot commands Telegram marks in a
// person's plain text, with UTF-16 offsets.
func detectEntities(text string) []Entity {
	var out []Entity
	for _, m := range entityRE().FindAllStringSubmatchIndex(text, -1) {
		start, end := m[4], m[5]
		typ := "mention"
		if text[start] == '/' {
			typ = "bot_command"
		}
		out = append(out, Entity{Type: typ, Offset: utf16Len(text[:start]), Length: utf16Len(text[start:end])})
	}
	return out
}
