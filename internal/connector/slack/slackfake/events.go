package slackfake

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"agentd/internal/connector/chatfake"
)

// pump starts (once) the goroutine that turns the World's posts into
// events: over the newest Socket Mode link, or posted to the request URL.
func (s *Server) pump() {
	s.pumpOnce.Do(func() {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for {
				ch := s.w.Changed()
				s.deliverNew()
				select {
				case <-ch:
				case <-s.ctx.Done():
					return
				}
			}
		}()
	})
}

// Pump starts turning posts into events: a test that drives ServeHTTP through httptest calls it, or
// any first request does.
func (s *Server) Pump() { s.pump() }

// deliverNew makes events of the posts not yet made ones.
func (s *Server) deliverNew() {
	s.mu.Lock()
	from := s.seen + 1
	s.mu.Unlock()
	posts := s.w.Posts(from)
	if len(posts) == 0 {
		return
	}
	s.mu.Lock()
	s.seen = posts[len(posts)-1].Seq
	s.mu.Unlock()
	for _, p := range posts {
		for _, cb := range s.callbacks(p) {
			s.deliver(cb, postTS(p))
		}
	}
}

// callbacks are the event_callbacks a post makes: a message event (for the
// bot's channels: Slack sends the bot message.im and message.channels),
// and an app_mention too when it names the bot outside a DM
// (https://api.slack.com/events/app_mention).
func (s *Server) callbacks(p chatfake.Post) []json.RawMessage {
	chat, ok := s.w.Chat(p.Chat)
	if !ok || p.User == s.o.Bot.ID {
		return nil
	}
	ts := postTS(p)
	base := map[string]any{"user": p.User, "text": p.Text, "ts": ts, "channel": p.Chat, "event_ts": ts, "team": s.o.Team}
	if p.Thread != "" {
		base["thread_ts"] = p.Thread
		base["parent_user_id"] = s.parentUser(p.Chat, p.Thread)
	}
	if len(p.Files) > 0 {
		s.mu.Lock()
		files := s.base
		s.mu.Unlock()
		if files == "" {
			files = "https://files.slack.com"
		}
		var list []map[string]any
		for _, f := range p.Files {
			list = append(list, map[string]any{"id": f.ID, "name": f.Name, "mimetype": f.Type, "size": len(f.Data), "url_private": files + "/files-pri/" + s.o.Team + "-" + f.ID + "/" + f.Name})
		}
		base["files"] = list
		base["subtype"] = "file_share"
	}
	msg := clone(base)
	msg["type"] = "message"
	msg["channel_type"] = "channel"
	if chat.Kind == chatfake.DM {
		msg["channel_type"] = "im"
	}
	evs := []map[string]any{msg}
	if chat.Kind != chatfake.DM && strings.Contains(p.Text, "<@"+s.o.Bot.ID+">") {
		m := clone(base)
		m["type"] = "app_mention"
		delete(m, "subtype")
		evs = append(evs, m)
	}
	var out []json.RawMessage
	for _, ev := range evs {
		s.mu.Lock()
		id := s.newID("Ev")
		s.mu.Unlock()
		raw, _ := json.Marshal(map[string]any{
			"token": "fake-verification-token", "team_id": s.o.Team, "api_app_id": "AFAKE",
			"event": ev, "type": "event_callback", "event_id": id, "event_time": p.At.Unix(),
			"authorizations": []map[string]any{{"team_id": s.o.Team, "user_id": s.o.Bot.ID, "is_bot": true}},
		})
		out = append(out, raw)
	}
	return out
}

// parentUser is who posted thread's parent message in channel.
func (s *Server) parentUser(channel, thread string) string {
	id, ok := tsID(thread)
	if !ok {
		return ""
	}
	if _, ok := s.w.Message(channel, id); ok {
		return s.o.Bot.ID
	}
	if p, ok := s.post(channel, id); ok {
		return p.User
	}
	return ""
}

func clone(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// deliver sends one event callback: posted when there is a request URL,
// else as an envelope over Socket Mode (kept until acknowledged).
func (s *Server) deliver(cb json.RawMessage, ts string) {
	s.mu.Lock()
	url := s.eventsURL
	if url != "" {
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.postEvent(url, cb, ts)
		}()
		return
	}
	e := &envelope{ID: s.newID("env-"), EventTS: ts, Payload: cb}
	s.envelopes = append(s.envelopes, e)
	var newest *link
	if len(s.links) > 0 {
		newest = s.links[len(s.links)-1]
	}
	s.mu.Unlock()
	if newest != nil {
		s.send(newest, e)
	}
}

// postEvent posts cb to url, signed, and again (at most 3 times, with
// X-Slack-Retry-Num) while the answer is not 2xx.
func (s *Server) postEvent(url string, cb json.RawMessage, ts string) {
	for retry := 0; retry <= 3; retry++ {
		if retry > 0 {
			t := time.NewTimer(s.o.RetryEvery)
			select {
			case <-s.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		status, _, err := s.postSigned(s.ctx, url, cb, retry)
		s.mu.Lock()
		s.deliveries = append(s.deliveries, Delivery{EventTS: ts, Retry: retry, Status: status})
		s.mu.Unlock()
		s.touch()
		if err == nil && status/100 == 2 {
			return
		}
	}
}

// postSigned makes one signed Events API post and returns agentd's answer.
func (s *Server) postSigned(ctx context.Context, url string, body []byte, retry int) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	ts := strconv.FormatInt(s.w.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", Sign(s.o.SigningSecret, ts, body))
	if retry > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(retry))
		req.Header.Set("X-Slack-Retry-Reason", "http_error")
	}
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	ans, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, ans, err
}

// Sign is Slack's request signature: "v0=" + hex(HMAC-SHA256(secret,
// "v0:" + ts + ":" + body))
// (https://api.slack.com/authentication/verifying-requests-from-slack).
func Sign(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "v0:%s:", ts)
	m.Write(body)
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}

// SetEventsURL makes the fake an Events API app whose request URL is url
// ("" back to Socket Mode). Like Slack, it first posts a url_verification
// and takes the URL only if the answer is 200 with the challenge.
func (s *Server) SetEventsURL(ctx context.Context, url string) error {
	if url != "" {
		s.mu.Lock()
		challenge := s.newID("challenge-")
		s.mu.Unlock()
		body, _ := json.Marshal(map[string]any{"token": "fake-verification-token", "challenge": challenge, "type": "url_verification"})
		status, ans, err := s.postSigned(ctx, url, body, 0)
		if err != nil {
			return err
		}
		if status != http.StatusOK || !bytes.Contains(ans, []byte(challenge)) {
			return errors.New("slackfake: the request URL did not answer the challenge: HTTP " + strconv.Itoa(status) + ": " + string(ans))
		}
	}
	s.pump()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eventsURL = url
	return nil
}

// Deliveries returns the Events API posts made, in order.
func (s *Server) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Delivery(nil), s.deliveries...)
}
