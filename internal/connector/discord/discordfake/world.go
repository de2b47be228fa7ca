package discordfake

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"
)

// world is the chat side of the fake: channels and their messages, every
// edit of the bot's messages, the nonces it saw. Its mu is a leaf lock:
// never held while writing to a connection.
type world struct {
	mu       sync.Mutex
	last     uint64                // the last snowflake made
	channels map[string]*channel   // channel id → channel
	nonces   map[string]nonceEntry // channel + "\x00" + author + "\x00" + nonce
	changed  chan struct{}         // closed and replaced on every change (Wait)
}

type channel struct {
	guild    string
	messages []*Message
}

type nonceEntry struct {
	id string
	at time.Time
}

// nonceWindow is how long an enforced nonce returns its first message:
// Discord says "the past few minutes".
const nonceWindow = 5 * time.Minute

func newWorld() *world {
	return &world{channels: map[string]*channel{}, nonces: map[string]nonceEntry{}, changed: make(chan struct{})}
}

// User is a Discord user.
type User struct {
	ID       string `json:"id"`
	Username string `json:"username"`
	Bot      bool   `json:"bot,omitempty"`
}

// Attachment is a file on a message. Data is what was uploaded (bot
// messages); URL where a person's file can be fetched.
type Attachment struct {
	ID          string `json:"id"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type,omitempty"`
	Size        int64  `json:"size"`
	URL         string `json:"url"`
	Data        []byte `json:"-"`
}

// Message is a message in a channel, as the fake keeps it.
type Message struct {
	ID        string
	ChannelID string
	GuildID   string
	Author    User
	Content   string
	Nonce     string
	// Edits is every content the message had, the first one created.
	Edits       []string
	ReplyTo     string // the message it answers
	Mentions    []User
	Attachments []Attachment
	At          time.Time
	// Mentioned says allowed_mentions let it ping someone: false when its
	// create asked for parse: [].
	Pings bool
}

func (m *Message) clone() Message {
	c := *m
	c.Edits = slices.Clone(m.Edits)
	c.Mentions = slices.Clone(m.Mentions)
	c.Attachments = slices.Clone(m.Attachments)
	return c
}

// discordEpoch: snowflakes count milliseconds from 2015.
const discordEpoch = 1420070400000

// id makes a snowflake after every one made before. w.mu is held.
func (w *world) id(now time.Time) string {
	n := uint64(now.UnixMilli()-discordEpoch) << 22
	if n <= w.last {
		n = w.last + 1
	}
	w.last = n
	return strconv.FormatUint(n, 10)
}

// bump wakes every Wait. w.mu is held.
func (w *world) bump() {
	close(w.changed)
	w.changed = make(chan struct{})
}

func (w *world) channel(id, guild string) *channel {
	c := w.channels[id]
	if c == nil {
		c = &channel{guild: guild}
		w.channels[id] = c
	}
	return c
}

func (w *world) find(ch, id string) *Message {
	c := w.channels[ch]
	if c == nil {
		return nil
	}
	for _, m := range c.messages {
		if m.ID == id {
			return m
		}
	}
	return nil
}

// wait returns once cond is true (checked now and after every change) or
// ctx ends.
func (w *world) wait(ctx context.Context, cond func() bool) error {
	for {
		w.mu.Lock()
		ch := w.changed
		w.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}
