// Package chatfake is a chat platform's state for fake servers: people,
// chats, what people said, the bot's messages with every edit, and scripted
// faults. The platform fakes (telegramfake, discordfake, slackfake) keep
// their state here and speak their own wire over it; tests drive a World
// (SendAsUser, Fail, HoldNext, Drop) and read it (Messages, Count, Wait)
// without sleeping.
//
// A World is safe for concurrent use. Its one lock (World.mu) is a leaf:
// nothing is called while it is held, and Wait's predicate runs without it.
package chatfake

import (
	"context"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Chat kinds.
const (
	DM    = "dm"
	Group = "group"
)

// User is a person (or a bot) on the platform.
type User struct {
	ID       string
	Name     string // display name
	Username string // handle without "@" ("" none)
	Bot      bool
}

// Chat is a DM or a group chat. A thread is a Post's or Message's Thread
// inside a chat (Telegram forum topic, Slack thread_ts); a platform whose
// threads are channels of their own (Discord) makes a Chat with Parent.
type Chat struct {
	ID     string
	Kind   string // DM or Group
	Title  string
	Parent string // the chat a thread-channel belongs to ("" none)
	Forum  bool   // a group whose threads are topics (Telegram is_forum)
}

// File is a file a person or the bot sent.
type File struct {
	ID   string
	Name string
	Type string // media type
	Data []byte
	URL  string // the bot sent a URL the platform fetches itself
}

// Post is one message a person sent, as the platform saw it. Seq numbers
// posts from 1 in the order they were sent (a fake's update id or event
// sequence).
type Post struct {
	Seq     int64
	ID      string // message id, unique in the World
	Chat    string
	Thread  string
	User    string
	Text    string
	ReplyTo string // the message id this answers ("" none)
	Files   []File
	At      time.Time
}

// Version is one text of a bot message: what it was created with, then
// every edit that changed it.
type Version struct {
	Text   string
	Markup string // the parse mode / format it was sent with ("" plain)
	At     time.Time
}

// Message is a message the bot made.
type Message struct {
	ID       string
	Chat     string
	Thread   string
	ReplyTo  string
	Nonce    string // the nonce it was created with ("" none)
	Meta     string // platform metadata it was created with ("" none)
	File     *File  // an upload ("" text)
	Versions []Version
}

// Text is the message's current text.
func (m Message) Text() string {
	if len(m.Versions) == 0 {
		return ""
	}
	return m.Versions[len(m.Versions)-1].Text
}

// Edits is how many times the message's text changed after it was made.
func (m Message) Edits() int { return max(len(m.Versions)-1, 0) }

// Fault is a scripted failure of one call. A fake answers it in its own
// wire: Status with Body (or the platform's usual body for Status), a
// rate limit with RetryAfter (Global: for every call of the bot), or with
// Drop the connection is closed without an answer.
type Fault struct {
	Status     int
	RetryAfter time.Duration
	Global     bool
	Body       string
	Drop       bool
}

// Options configures a World.
type Options struct {
	// Now is the clock (default time.Now, which a synctest bubble fakes).
	Now func() time.Time
}

// World is one fake platform's state.
type World struct {
	now func() time.Time

	mu       sync.Mutex
	users    map[string]User
	chats    map[string]Chat
	files    map[string]File
	posts    []Post
	messages []*Message // the bot's, in creation order
	nextID   int64
	counts   map[string]int
	faults   map[string][]Fault
	holds    map[string][]chan struct{}
	conns    map[io.Closer]struct{}
	changed  chan struct{} // closed and replaced on every change
}

// New returns an empty World.
func New(o *Options) *World {
	w := &World{
		now:     time.Now,
		users:   map[string]User{},
		chats:   map[string]Chat{},
		files:   map[string]File{},
		counts:  map[string]int{},
		faults:  map[string][]Fault{},
		holds:   map[string][]chan struct{}{},
		conns:   map[io.Closer]struct{}{},
		changed: make(chan struct{}),
	}
	if o != nil && o.Now != nil {
		w.now = o.Now
	}
	return w
}

// Now is the World's clock.
func (w *World) Now() time.Time { return w.now() }

// Touch wakes every Wait: a fake calls it when state of its own (a
// webhook set, commands) changed.
func (w *World) Touch() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.notify()
}

// notify wakes every Wait; w.mu is held.
func (w *World) notify() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// newID returns a fresh id, unique in the World; w.mu is held.
func (w *World) newID() string {
	w.nextID++
	return strconv.FormatInt(w.nextID, 10)
}

// AddUser adds (or replaces) a person.
func (w *World) AddUser(u User) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.users[u.ID] = u
	w.notify()
}

// User returns the person with id.
func (w *World) User(id string) (User, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	u, ok := w.users[id]
	return u, ok
}

// AddChat adds (or replaces) a chat.
func (w *World) AddChat(c Chat) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.chats[c.ID] = c
	w.notify()
}

// Chat returns the chat with id.
func (w *World) Chat(id string) (Chat, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.chats[id]
	return c, ok
}

// AddFile stores a file and returns it with its new ID.
func (w *World) AddFile(f File) File {
	w.mu.Lock()
	defer w.mu.Unlock()
	f.ID = "f" + w.newID()
	f.Data = slices.Clone(f.Data)
	w.files[f.ID] = f
	return f
}

// File returns the stored file with id.
func (w *World) File(id string) (File, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f, ok := w.files[id]
	return f, ok
}

// SendAsUser is a person's message to a chat, as the platform receives
// it; files are stored (see AddFile) and carried by the post.
func (w *World) SendAsUser(chat, user, text string, files ...File) Post {
	return w.Send(Post{Chat: chat, User: user, Text: text, Files: files})
}

// Send is SendAsUser with every field of the post (Thread, ReplyTo). Seq,
// ID and At are set here; a file without an ID is stored.
func (w *World) Send(p Post) Post {
	for i, f := range p.Files {
		if f.ID == "" {
			p.Files[i] = w.AddFile(f)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	p.Seq = int64(len(w.posts)) + 1
	p.ID = w.newID()
	p.At = w.now()
	p.Files = slices.Clone(p.Files)
	w.posts = append(w.posts, p)
	w.notify()
	return p
}

// Posts returns the posts whose Seq is at least from, in order.
func (w *World) Posts(from int64) []Post {
	w.mu.Lock()
	defer w.mu.Unlock()
	from = max(from, 1)
	if from > int64(len(w.posts)) {
		return nil
	}
	return slices.Clone(w.posts[from-1:])
}

// LastSeq is the Seq of the newest post (0 none).
func (w *World) LastSeq() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return int64(len(w.posts))
}

// Changed returns a channel closed at the World's next change: a fake's
// long poll waits on it.
func (w *World) Changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}

// Create records a message the bot made and returns it with its new ID.
func (w *World) Create(m Message, text, markup string) Message {
	w.mu.Lock()
	defer w.mu.Unlock()
	m.ID = w.newID()
	m.Versions = []Version{{Text: text, Markup: markup, At: w.now()}}
	w.messages = append(w.messages, &m)
	w.notify()
	return clone(&m)
}

// Edit changes the text of the bot's message id in chat. changed is false
// when the text and markup are the ones it has (platforms refuse or ignore
// such an edit); ok is false when there is no such message.
func (w *World) Edit(chat, id, text, markup string) (changed, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.message(chat, id)
	if m == nil {
		return false, false
	}
	last := m.Versions[len(m.Versions)-1]
	if last.Text == text && last.Markup == markup {
		return false, true
	}
	m.Versions = append(m.Versions, Version{Text: text, Markup: markup, At: w.now()})
	w.notify()
	return true, true
}

// message finds the bot's message id in chat; w.mu is held.
func (w *World) message(chat, id string) *Message {
	for _, m := range w.messages {
		if m.ID == id && m.Chat == chat {
			return m
		}
	}
	return nil
}

// Message returns the bot's message id in chat.
func (w *World) Message(chat, id string) (Message, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.message(chat, id)
	if m == nil {
		return Message{}, false
	}
	return clone(m), true
}

// FindNonce returns the bot's first message in chat created with nonce.
func (w *World) FindNonce(chat, nonce string) (Message, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.messages {
		if m.Chat == chat && nonce != "" && m.Nonce == nonce {
			return clone(m), true
		}
	}
	return Message{}, false
}

// Messages returns the bot's messages in chat ("" every chat), in the
// order they were made, each with all its versions.
func (w *World) Messages(chat string) []Message {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Message
	for _, m := range w.messages {
		if chat == "" || m.Chat == chat {
			out = append(out, clone(m))
		}
	}
	return out
}

func clone(m *Message) Message {
	c := *m
	c.Versions = slices.Clone(m.Versions)
	return c
}

// Fail makes the next n calls of method fail with f (after the faults
// already scripted for it).
func (w *World) Fail(method string, n int, f Fault) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for range n {
		w.faults[method] = append(w.faults[method], f)
	}
}

// HoldNext holds the answer to the next call of method until release is
// called (or the call's ctx ends): a test acts while a call is in flight.
// release may be called more than once.
func (w *World) HoldNext(method string) (release func()) {
	ch := make(chan struct{})
	w.mu.Lock()
	w.holds[method] = append(w.holds[method], ch)
	w.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

// Call is what a fake does first on every call of method: it counts the
// call, waits while the call is held, and returns the call's scripted
// fault, if any. It returns ctx's error if ctx ends while held.
func (w *World) Call(ctx context.Context, method string) (*Fault, error) {
	w.mu.Lock()
	w.counts[method]++
	var hold chan struct{}
	if hs := w.holds[method]; len(hs) > 0 {
		hold, w.holds[method] = hs[0], hs[1:]
	}
	w.notify()
	w.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	fs := w.faults[method]
	if len(fs) == 0 {
		return nil, nil
	}
	f := fs[0]
	w.faults[method] = fs[1:]
	return &f, nil
}

// Count is how many calls of method were made.
func (w *World) Count(method string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts[method]
}

// Counts returns the calls made per method.
func (w *World) Counts() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int, len(w.counts))
	for k, v := range w.counts {
		out[k] = v
	}
	return out
}

// Track registers a live connection (a WebSocket, a hijacked HTTP
// connection) for Drop; untrack removes it.
func (w *World) Track(c io.Closer) (untrack func()) {
	w.mu.Lock()
	w.conns[c] = struct{}{}
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		delete(w.conns, c)
		w.mu.Unlock()
	}
}

// ConnState tracks a server's connections for Drop: set it as an
// http.Server's (or httptest.Server.Config's) ConnState.
func (w *World) ConnState(c net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		w.Track(c)
	case http.StateClosed, http.StateHijacked:
		w.mu.Lock()
		delete(w.conns, c)
		w.mu.Unlock()
	}
}

// Drop closes every live connection: long polls and WebSockets end as if
// the network failed.
func (w *World) Drop() {
	w.mu.Lock()
	cs := make([]io.Closer, 0, len(w.conns))
	for c := range w.conns {
		cs = append(cs, c)
	}
	clear(w.conns)
	w.notify()
	w.mu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

// Wait returns once pred is true, checking it at every change of the
// World, or ctx's error. pred runs without the World's lock: it may call
// any of its methods.
func (w *World) Wait(ctx context.Context, pred func() bool) error {
	for {
		ch := w.Changed()
		if pred() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// DropConn answers an HTTP call with a dropped connection (Fault.Drop):
// the client sees the connection end without an answer.
func DropConn(rw http.ResponseWriter) {
	hj, ok := rw.(http.Hijacker)
	if !ok {
		panic("chatfake: the response writer cannot be hijacked")
	}
	c, _, err := hj.Hijack()
	if err == nil {
		c.Close()
	}
}
