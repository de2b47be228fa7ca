package connector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// fakePlatform is a scripted Platform: it records every create and edit
// (with the clock's time), can fail the next calls of a method with given
// errors, hold a method's calls until released, and hands the tests'
// inbound messages to the handler Run was given. With Caps.Nonce it
// answers a create of a nonce it has seen with the first message, as
// Discord's enforce_nonce does.
type fakePlatform struct {
	caps Caps
	now  func() time.Time

	mu      sync.Mutex
	h       Handler
	ready   chan struct{}
	msgs    []fakeMsg // every message made, in order
	edits   []fakeEdit
	typing  int
	fails   map[string][]error
	holds   map[string]chan struct{}
	entered map[string]chan struct{}
	nonces  map[string]string
	runs    int
	tries   map[string][]time.Time // every call of a method, failed or not
	lose    int                    // the next sends that make their message and lose the answer
}

// errAnswerLost is a create's answer lost on the way (a dropped
// connection): it says nothing of whether the message was made.
var errAnswerLost = errors.New("fake: connection reset while reading the answer")

type fakeMsg struct {
	ID    string
	Chat  Chat
	Text  string // the text it shows now
	Plain bool
	At    time.Time
	// ReplyTo is the message it answers, as Outgoing.ReplyTo named it.
	ReplyTo string
}

type fakeEdit struct {
	ID   string
	Text string
	At   time.Time
}

func newFakePlatform(caps Caps) *fakePlatform {
	if caps.MaxText == 0 {
		caps.MaxText = 4096
	}
	return &fakePlatform{caps: caps, now: time.Now, ready: make(chan struct{}), fails: map[string][]error{},
		holds: map[string]chan struct{}{}, entered: map[string]chan struct{}{}, nonces: map[string]string{},
		tries: map[string][]time.Time{}}
}

// factory returns p for every instance.
func (p *fakePlatform) factory(Config, PlatformDeps) (Platform, Caps, error) { return p, p.caps, nil }

func (p *fakePlatform) Run(ctx context.Context, h Handler) error {
	p.mu.Lock()
	p.h = h
	p.runs++
	if p.runs == 1 {
		close(p.ready)
	}
	p.mu.Unlock()
	<-ctx.Done()
	return nil
}

// handler waits for Run and returns the handler it was given last.
func (p *fakePlatform) handler(ctx context.Context) Handler {
	select {
	case <-p.ready:
	case <-ctx.Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.h
}

// fail makes the next calls of method ("send", "edit", "typing") fail
// with errs, one each.
func (p *fakePlatform) fail(method string, errs ...error) {
	p.mu.Lock()
	p.fails[method] = append(p.fails[method], errs...)
	p.mu.Unlock()
}

// call takes a scripted error or waits at a hold.
func (p *fakePlatform) call(ctx context.Context, method string) error {
	p.mu.Lock()
	p.tries[method] = append(p.tries[method], p.now())
	hold, entered := p.holds[method], p.entered[method]
	if entered != nil {
		delete(p.entered, method)
		close(entered)
	}
	var err error
	if q := p.fails[method]; len(q) > 0 {
		err, p.fails[method] = q[0], q[1:]
	}
	p.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

func (p *fakePlatform) Send(ctx context.Context, m Outgoing) (Sent, error) {
	if err := p.call(ctx, "send"); err != nil {
		return Sent{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if id, ok := p.nonces[m.Nonce]; ok && p.caps.Nonce && m.Nonce != "" {
		return Sent{ID: id}, nil
	}
	id := fmt.Sprint(len(p.msgs) + 1)
	p.msgs = append(p.msgs, fakeMsg{ID: id, Chat: m.Chat, Text: m.Text, Plain: m.Plain, At: p.now(), ReplyTo: m.ReplyTo})
	if m.Nonce != "" {
		p.nonces[m.Nonce] = id
	}
	if p.lose > 0 {
		p.lose--
		return Sent{}, errAnswerLost
	}
	return Sent{ID: id, At: p.now()}, nil
}

func (p *fakePlatform) Edit(ctx context.Context, m Outgoing, id string) error {
	if err := p.call(ctx, "edit"); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.IndexFunc(p.msgs, func(x fakeMsg) bool { return x.ID == id })
	if i < 0 {
		return fmt.Errorf("fake: edit %s: %w", id, ErrPermanent)
	}
	p.msgs[i].Text = m.Text
	p.edits = append(p.edits, fakeEdit{ID: id, Text: m.Text, At: p.now()})
	return nil
}

func (p *fakePlatform) Typing(ctx context.Context, c Chat) error {
	if err := p.call(ctx, "typing"); err != nil {
		return err
	}
	p.mu.Lock()
	p.typing++
	p.mu.Unlock()
	return nil
}

// calls returns when method was called.
func (p *fakePlatform) calls(method string) []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.tries[method])
}

// messages returns the messages made, as they show now.
func (p *fakePlatform) messages() []fakeMsg {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.msgs)
}

func (p *fakePlatform) editList() []fakeEdit {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.edits)
}

// texts returns the texts the messages show, in order.
func (p *fakePlatform) texts() []string {
	var out []string
	for _, m := range p.messages() {
		out = append(out, m.Text)
	}
	return out
}
