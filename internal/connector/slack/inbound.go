package slack

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync"

	"agentd/internal/connector"
)

// eventCallback is the Events API's outer event
// (https://api.slack.com/apis/connections/events-api#callback-field), the
// same in an HTTP post and in a Socket Mode envelope's payload.
type eventCallback struct {
	Type      string          `json:"type"` // event_callback, url_verification
	Challenge string          `json:"challenge"`
	TeamID    string          `json:"team_id"`
	EventID   string          `json:"event_id"`
	Event     json.RawMessage `json:"event"`
}

// messageEvent is a message or app_mention event
// (https://api.slack.com/events/message, /events/app_mention).
type messageEvent struct {
	Type         string `json:"type"`
	Subtype      string `json:"subtype"`
	Channel      string `json:"channel"`
	ChannelType  string `json:"channel_type"` // im, mpim, group, channel (message only)
	User         string `json:"user"`
	BotID        string `json:"bot_id"`
	Text         string `json:"text"`
	TS           string `json:"ts"`
	ThreadTS     string `json:"thread_ts"`
	ParentUserID string `json:"parent_user_id"`
	Team         string `json:"team"`
	UserProfile  *struct {
		DisplayName string `json:"display_name"`
		RealName    string `json:"real_name"`
		Name        string `json:"name"`
	} `json:"user_profile"`
	Files []struct {
		ID         string `json:"id"`
		Name       string `json:"name"`
		Mimetype   string `json:"mimetype"`
		Size       int64  `json:"size"`
		URLPrivate string `json:"url_private"`
	} `json:"files"`
}

// subtypes a person's message may have; every other subtype (edits,
// deletions, joins, a bot's message) is not a message to answer.
var personSubtypes = map[string]bool{"": true, "file_share": true, "thread_broadcast": true}

// inbound turns an event callback into the message agentd takes, or ok
// false when it is not one to take (another event type, a bot's or our
// own message, an edit or a join).
func (p *Platform) inbound(cb eventCallback) (connector.Inbound, bool) {
	self := p.identity()
	if cb.Type != "event_callback" || len(cb.Event) == 0 {
		return connector.Inbound{}, false
	}
	var e messageEvent
	if err := json.Unmarshal(cb.Event, &e); err != nil {
		return connector.Inbound{}, false
	}
	if e.Type != "message" && e.Type != "app_mention" {
		return connector.Inbound{}, false
	}
	if e.BotID != "" || !personSubtypes[e.Subtype] || e.User == "" || e.User == self.User || e.Channel == "" || e.TS == "" {
		return connector.Inbound{}, false
	}
	chat := connector.Chat{ID: e.Channel, Kind: chatKind(e), Team: firstOf(e.Team, cb.TeamID)}
	switch {
	case e.ThreadTS != "":
		chat.Thread = e.ThreadTS
	case chat.Kind == connector.ChatGroup:
		// A top-level message in a channel is answered in its own
		// thread, and that thread is the conversation from then on.
		chat.Thread = e.TS
	}
	text, named := stripMention(e.Text, self.User)
	in := connector.Inbound{
		Key:        "sl:" + e.Channel + ":" + e.TS,
		Chat:       chat,
		User:       e.User,
		Name:       e.User,
		MessageID:  e.TS,
		Text:       text,
		Mentioned:  e.Type == "app_mention" || named,
		ReplyToBot: e.ThreadTS != "" && (e.ParentUserID == self.User || p.threads.has(e.Channel+"/"+e.ThreadTS)),
		At:         tsTime(e.TS, p.deps.Now),
	}
	if pr := e.UserProfile; pr != nil {
		in.Name = firstOf(pr.DisplayName, pr.RealName, pr.Name, e.User)
	}
	for _, f := range e.Files {
		in.Attachments = append(in.Attachments, connector.Attachment{ID: f.ID, Name: f.Name, Type: f.Mimetype, Size: f.Size, URL: f.URLPrivate})
	}
	return in, true
}

// chatKind is a DM for an im (a D… channel for app_mention, which carries
// no channel_type), a group otherwise.
func chatKind(e messageEvent) string {
	if e.ChannelType == "im" || (e.ChannelType == "" && strings.HasPrefix(e.Channel, "D")) {
		return connector.ChatDM
	}
	return connector.ChatGroup
}

// mentionRE matches a user mention as Slack writes it: <@U123> or
// <@U123|name>.
var mentionRE = regexp.MustCompile(`<@([A-Z0-9]+)(?:\|[^>]*)?>`)

// stripMention removes the mentions of user from text and reports whether
// there was one.
func stripMention(text, user string) (string, bool) {
	if user == "" {
		return strings.TrimSpace(text), false
	}
	named := false
	drop := func(m string) string {
		if mentionRE.FindStringSubmatch(m)[1] != user {
			return m
		}
		named = true
		return ""
	}
	// Again until none is left: removing one can join another
	// ("<@<@U>U>").
	for out := text; ; {
		next := mentionRE.ReplaceAllStringFunc(out, drop)
		if next == out {
			return strings.Join(strings.Fields(out), " "), named
		}
		out = next
	}
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// threadMemory is how many threads the bot posted in it remembers.
const threadMemory = 4096

// threadSet remembers the threads (channel/thread_ts) the bot posted in, so
// a reply in one counts as addressed to the bot; the oldest are forgotten
// first. After a restart it is empty: a reply in such a thread is then
// taken only when it names the bot or its parent is the bot's (Slack's
// parent_user_id).
type threadSet struct {
	mu    sync.Mutex
	max   int
	set   map[string]bool
	order []string
}

func newThreadSet(n int) threadSet { return threadSet{max: n, set: map[string]bool{}} }

func (t *threadSet) add(k string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.set[k] {
		return
	}
	if len(t.order) >= t.max {
		delete(t.set, t.order[0])
		t.order = t.order[1:]
	}
	t.set[k] = true
	t.order = append(t.order, k)
}

func (t *threadSet) has(k string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.set[k]
}
