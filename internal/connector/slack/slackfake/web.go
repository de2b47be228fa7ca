package slackfake

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"agentd/internal/connector/chatfake"
)

type method struct {
	app bool // takes the app-level token (else the bot token)
	fn  func(r *http.Request, a args) any
}

func (s *Server) methods() map[string]method {
	return map[string]method{
		"auth.test":             {fn: s.authTest},
		"apps.connections.open": {app: true, fn: s.connectionsOpen},
		"chat.postMessage":      {fn: s.postMessage},
		"chat.update":           {fn: s.update},
		"conversations.history": {fn: s.history},
		"conversations.replies": {fn: s.replies},
	}
}

// args are a call's arguments: a JSON object, or a form whose object
// values are JSON-serialized (https://api.slack.com/web#posting_json).
type args map[string]json.RawMessage

func readArgs(r *http.Request) (args, error) {
	a := args{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	body := io.LimitReader(r.Body, 1<<20)
	switch ct {
	case "application/json":
		if err := json.NewDecoder(body).Decode(&a); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
	default:
		raw, err := io.ReadAll(body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(strings.NewReader(string(raw)))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if err := r.ParseForm(); err != nil {
			return nil, err
		}
		for k, vs := range r.PostForm {
			a[k], _ = json.Marshal(vs[0])
		}
	}
	return a, nil
}

func (a args) str(k string) string {
	raw, ok := a[k]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(raw))
}

func (a args) bool(k string, def bool) bool {
	switch strings.ToLower(a.str(k)) {
	case "":
		return def
	case "true", "1":
		return true
	}
	return false
}

// object decodes argument k (an object, or a JSON-serialized one).
func (a args) object(k string, v any) error {
	raw, ok := a[k]
	if !ok {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = []byte(s)
	}
	return json.Unmarshal(raw, v)
}

func ok(fields map[string]any) map[string]any {
	fields["ok"] = true
	return fields
}

func (s *Server) authTest(r *http.Request, _ args) any {
	return ok(map[string]any{
		"url": "https://fake.slack.com/", "team": "Fake", "user": s.o.Bot.Name,
		"team_id": s.o.Team, "user_id": s.o.Bot.ID, "bot_id": s.o.BotID,
	})
}

// connectionsOpen hands out a single-use Socket Mode URL.
func (s *Server) connectionsOpen(r *http.Request, _ args) any {
	s.mu.Lock()
	t := s.newID("ticket-")
	s.tickets[t] = true
	s.mu.Unlock()
	return ok(map[string]any{"url": "ws://" + r.Host + "/link/?ticket=" + t})
}

// Metadata is a message's metadata (https://api.slack.com/metadata).
type Metadata struct {
	EventType    string         `json:"event_type"`
	EventPayload map[string]any `json:"event_payload"`
}

// postable says why the bot cannot post in channel ("" it can).
func (s *Server) postable(channel string) string {
	if _, ok := s.w.Chat(channel); !ok {
		return "channel_not_found"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.archived[channel]:
		return "is_archived"
	case s.outside[channel]:
		return "not_in_channel"
	}
	return ""
}

func (s *Server) postMessage(r *http.Request, a args) any {
	channel, text := a.str("channel"), a.str("text")
	if e := s.postable(channel); e != "" {
		return fail(e)
	}
	if text == "" {
		return fail("no_text")
	}
	if utf8.RuneCountInString(text) > s.o.MaxText {
		return fail("msg_too_long")
	}
	var md *Metadata
	if err := a.object("metadata", &md); err != nil {
		return fail("invalid_metadata_format")
	}
	m := chatfake.Message{Chat: channel, Thread: a.str("thread_ts")}
	if md != nil {
		if md.EventType == "" {
			return fail("invalid_metadata_schema")
		}
		raw, _ := json.Marshal(md)
		m.Meta = string(raw)
		m.Nonce, _ = md.EventPayload["nonce"].(string)
	}
	markup := ""
	if a.bool("mrkdwn", true) {
		markup = "mrkdwn"
	}
	m = s.w.Create(m, text, markup)
	out := s.wireMessage(m, true)
	return ok(map[string]any{"channel": channel, "ts": out["ts"], "message": out})
}

func (s *Server) update(r *http.Request, a args) any {
	channel, ts, text := a.str("channel"), a.str("ts"), a.str("text")
	if e := s.postable(channel); e != "" {
		return fail(e)
	}
	if utf8.RuneCountInString(text) > s.o.MaxText {
		return fail("msg_too_long")
	}
	id, okID := tsID(ts)
	m, found := s.w.Message(channel, id)
	if !okID || !found {
		if _, isPost := s.post(channel, id); okID && isPost {
			return fail("cant_update_message")
		}
		return fail("message_not_found")
	}
	if text == "" {
		return fail("no_text")
	}
	markup := m.Versions[len(m.Versions)-1].Markup
	s.w.Edit(channel, id, text, markup)
	return ok(map[string]any{"channel": channel, "ts": ts, "text": text})
}

// history is conversations.history: the channel's top-level messages
// (people's and the bot's), newest first, at or after oldest.
func (s *Server) history(r *http.Request, a args) any {
	channel := a.str("channel")
	if _, ok := s.w.Chat(channel); !ok {
		return fail("channel_not_found")
	}
	msgs := s.channelMessages(channel, a.bool("include_all_metadata", false), func(thread, ts string) bool {
		return thread == "" || thread == ts
	})
	return ok(map[string]any{"messages": page(msgs, a), "has_more": false})
}

// replies is conversations.replies: a thread's parent and replies, oldest
// first.
func (s *Server) replies(r *http.Request, a args) any {
	channel, parent := a.str("channel"), a.str("ts")
	if _, ok := s.w.Chat(channel); !ok {
		return fail("channel_not_found")
	}
	if parent == "" {
		return fail("thread_not_found")
	}
	msgs := s.channelMessages(channel, a.bool("include_all_metadata", false), func(thread, ts string) bool {
		return ts == parent || thread == parent
	})
	slices.Reverse(msgs)
	return ok(map[string]any{"messages": page(msgs, a), "has_more": false})
}

// page keeps the messages at or after the oldest argument, at most limit.
// A fake ts's fraction is a World id, not a time: oldest is compared by
// its seconds.
func page(msgs []map[string]any, a args) []map[string]any {
	oldest := a.str("oldest")
	out := []map[string]any{}
	for _, m := range msgs {
		if oldest != "" && tsSeconds(m["ts"].(string)) < tsSeconds(oldest) {
			continue
		}
		out = append(out, m)
	}
	if n, err := strconv.Atoi(a.str("limit")); err == nil && n > 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

// channelMessages returns the messages of channel (people's posts and the
// bot's) that keep says to, newest first.
func (s *Server) channelMessages(channel string, meta bool, keep func(thread, ts string) bool) []map[string]any {
	var out []map[string]any
	for _, p := range s.w.Posts(1) {
		if p.Chat == channel && keep(p.Thread, postTS(p)) {
			out = append(out, map[string]any{"type": "message", "user": p.User, "text": p.Text, "ts": postTS(p), "thread_ts": p.Thread})
		}
	}
	for _, m := range s.w.Messages(channel) {
		if w := s.wireMessage(m, meta); keep(m.Thread, w["ts"].(string)) {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(x, y map[string]any) int {
		return -strings.Compare(padTS(x["ts"].(string)), padTS(y["ts"].(string)))
	})
	return out
}

// wireMessage is the bot's message as the Web API shows it.
func (s *Server) wireMessage(m chatfake.Message, meta bool) map[string]any {
	out := map[string]any{"type": "message", "user": s.o.Bot.ID, "bot_id": s.o.BotID, "text": m.Text(), "ts": makeTS(m.Versions[0].At, m.ID)}
	if m.Thread != "" {
		out["thread_ts"] = m.Thread
	}
	if m.Edits() > 0 {
		out["edited"] = map[string]any{"user": s.o.Bot.ID, "ts": makeTS(m.Versions[len(m.Versions)-1].At, m.ID)}
	}
	if meta && m.Meta != "" {
		out["metadata"] = json.RawMessage(m.Meta)
	}
	return out
}

// post returns the person's post id in channel.
func (s *Server) post(channel, id string) (chatfake.Post, bool) {
	for _, p := range s.w.Posts(1) {
		if p.Chat == channel && p.ID == id {
			return p, true
		}
	}
	return chatfake.Post{}, false
}

// makeTS is the ts of World id made at t.
func makeTS(t time.Time, id string) string {
	n, _ := strconv.Atoi(id)
	return fmt.Sprintf("%d.%06d", t.Unix(), n)
}

func postTS(p chatfake.Post) string { return makeTS(p.At, p.ID) }

// tsID is the World id a ts names.
func tsID(ts string) (string, bool) {
	_, frac, ok := strings.Cut(ts, ".")
	n, err := strconv.Atoi(frac)
	if !ok || err != nil {
		return "", false
	}
	return strconv.Itoa(n), true
}

// padTS makes ts compare as text in time order.
func padTS(ts string) string {
	sec, frac, _ := strings.Cut(ts, ".")
	return fmt.Sprintf("%020s.%-6s", sec, frac)
}

func tsSeconds(ts string) int64 {
	sec, _, _ := strings.Cut(ts, ".")
	n, _ := strconv.ParseInt(sec, 10, 64)
	return n
}

// TS is the ts of the bot's message m (what chat.postMessage answered).
func TS(m chatfake.Message) string { return makeTS(m.Versions[0].At, m.ID) }

// PostTS is the ts of a person's post p.
func PostTS(p chatfake.Post) string { return postTS(p) }
