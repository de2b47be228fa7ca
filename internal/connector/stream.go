package connector

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"agentd/internal/connector/markup"
	"agentd/internal/event"
	"agentd/internal/store"
)

// TypingEvery is how often the typing indicator is shown again while a
// turn runs (platforms show it about 5 s).
const TypingEvery = 4 * time.Second

// stream follows the turns of one chat's session while a person waits:
// it shows the typing indicator and, once the reply has min_chars or has
// run first_after, makes its message (the create protocol of the outbox)
// and edits it at most every stream.every with the newest text, pausing
// as a 429 asks. At the turn's end it hands the row to the worker with
// the final text from the durable turn_end. While its row is streaming
// only it moves the row.
type stream struct {
	in      *instance
	session int64
	chat    Chat
	sub     *event.Subscription
	nudge   chan struct{}
	// want and expected are guarded by in.mu: the streamer ends once the
	// turn of the last message it was told of (expected) has ended.
	want     int64
	expected bool
}

// turnState is one turn being streamed.
type turnState struct {
	turn          int64
	started       time.Time
	text          string // the reply so far (of the current step and attempt)
	step, attempt int
	row           *store.OutboxItem // nil until the message is made
	off           bool              // not streamed further (the final reply still goes out)
	shown         string            // the text the message shows
	lastEdit      time.Time
	paused        time.Time // a 429 asked to wait until then
	typed         time.Time
}

// watch returns the session's streamer, starting one (subscribed at
// once, so that a turn that starts after this call is seen whole). nil
// when the instance is not running.
func (in *instance) watch(session int64, c Chat) *stream {
	if !*in.spec.Typing && !*in.spec.Stream.Edit {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.sctx == nil || in.sctx.Err() != nil {
		return nil
	}
	if s := in.streams[session]; s != nil {
		s.expected = false
		return s
	}
	s := &stream{in: in, session: session, chat: c, sub: in.m.events.Subscribe(session, 256), nudge: make(chan struct{}, 1)}
	in.streams[session] = s
	ctx := in.sctx
	in.swg.Go(func() { s.run(ctx) })
	return s
}

// expect tells the streamer the turn a message started (0: none, it was a
// duplicate or refused).
func (s *stream) expect(turn int64) {
	if s == nil {
		return
	}
	s.in.mu.Lock()
	s.want, s.expected = max(s.want, turn), true
	s.in.mu.Unlock()
	select {
	case s.nudge <- struct{}{}:
	default:
	}
}

// done reports, and if so unlists the streamer, whether the turns it was
// told of have ended.
func (s *stream) done(lastEnded int64) bool {
	s.in.mu.Lock()
	defer s.in.mu.Unlock()
	if !s.expected || s.want > lastEnded {
		return false
	}
	delete(s.in.streams, s.session)
	return true
}

// stopStreams ends every streamer and waits for them.
func (in *instance) stopStreams() {
	in.mu.Lock()
	cancel := in.scancel
	in.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	in.swg.Wait()
}

func (s *stream) run(ctx context.Context) {
	defer s.sub.Close()
	var t turnState
	var lastEnded int64
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if t.turn == 0 && s.done(lastEnded) {
			return
		}
		select {
		case <-ctx.Done():
			s.leave()
			return
		case <-s.nudge:
		case e, ok := <-s.sub.C:
			if !ok { // too slow a reader: the worker or the sweep finishes the row
				s.leave()
				s.settle(ctx, t)
				return
			}
			if e.Kind == event.TurnEnd && e.Turn > lastEnded {
				lastEnded = e.Turn
			}
			s.event(ctx, &t, e)
		case <-timer.C:
			s.tick(ctx, &t)
		}
		timer.Reset(s.next(&t))
	}
}

// leave unlists the streamer.
func (s *stream) leave() {
	s.in.mu.Lock()
	if s.in.streams[s.session] == s {
		delete(s.in.streams, s.session)
	}
	s.in.mu.Unlock()
}

// settle hands a row left streaming to the worker if its turn has ended.
func (s *stream) settle(ctx context.Context, t turnState) {
	if t.row == nil {
		return
	}
	evs, err := s.in.m.st.TurnEvents(ctx, s.session, t.turn)
	if err != nil {
		return
	}
	for _, e := range evs {
		var end event.TurnEndData
		if e.Kind == event.TurnEnd && e.Decode(&end) == nil {
			s.in.open(ctx, ended{session: s.session, turn: t.turn, end: end, chat: s.chat})
		}
	}
}

func (s *stream) event(ctx context.Context, t *turnState, e event.Event) {
	now := s.in.m.o.Now()
	switch {
	case e.Kind == event.TurnStart:
		*t = turnState{turn: e.Turn, started: now}
		s.tick(ctx, t)
	case e.Turn != t.turn || t.turn == 0:
	case e.Kind == event.TextDelta:
		var d event.DeltaData
		if e.Decode(&d) != nil || d.Reasoning {
			return
		}
		if d.Step != t.step || d.Attempt != t.attempt {
			t.text, t.step, t.attempt = "", d.Step, d.Attempt
		}
		t.text += d.Text
		s.tick(ctx, t)
	case e.Kind == event.TurnEnd:
		var end event.TurnEndData
		if e.Decode(&end) == nil {
			s.finish(ctx, t, end)
		}
		*t = turnState{}
	}
}

// tick shows typing and edits when they are due.
func (s *stream) tick(ctx context.Context, t *turnState) {
	if t.turn == 0 {
		return
	}
	now := s.in.m.o.Now()
	if *s.in.spec.Typing && !now.Before(t.typed.Add(TypingEvery)) {
		t.typed = now
		if ty, ok := s.in.platform().(Typer); ok {
			if err := ty.Typing(ctx, s.chat); err != nil {
				s.pause(t, err)
			}
		}
	}
	if due, ok := s.flushAt(t); ok && !now.Before(due) {
		s.flush(ctx, t)
	}
}

// next is how long until tick has something to do.
func (s *stream) next(t *turnState) time.Duration {
	if t.turn == 0 {
		return time.Hour
	}
	at := t.started.Add(time.Hour)
	if *s.in.spec.Typing {
		at = t.typed.Add(TypingEvery)
	}
	if due, ok := s.flushAt(t); ok && due.Before(at) {
		at = due
	}
	return max(at.Sub(s.in.m.o.Now()), time.Millisecond)
}

// flushAt is when the message is next to be made or edited; false: it
// has nothing new to show.
func (s *stream) flushAt(t *turnState) (time.Time, bool) {
	sp := s.in.spec
	if !*sp.Stream.Edit || t.off || t.text == "" {
		return time.Time{}, false
	}
	var at time.Time
	switch {
	case t.row == nil || len(t.row.MessageIDs) == 0 || t.row.MessageIDs[0] == "":
		if utf8.RuneCountInString(t.text) < sp.Stream.MinChars {
			at = t.started.Add(sp.Stream.FirstAfter.D())
		}
	case s.part(t.text) == t.shown:
		return time.Time{}, false
	default:
		at = t.lastEdit.Add(sp.every(s.chat, s.in.capsNow()))
	}
	if t.paused.After(at) {
		at = t.paused
	}
	return at, true
}

// part is the first part of the text (a reply past the platform's limit
// streams its first part; the worker makes the others).
func (s *stream) part(text string) string {
	c := s.in.capsNow()
	if parts := markup.Split(c.Dialect, text, c.MaxText, c.Unit); len(parts) > 0 {
		return parts[0]
	}
	return text
}

// flush makes the message or edits it to the newest text.
func (s *stream) flush(ctx context.Context, t *turnState) {
	now := s.in.m.o.Now()
	part := s.part(t.text)
	if t.row == nil && !s.open(ctx, t) {
		return
	}
	if len(t.row.MessageIDs) == 0 || t.row.MessageIDs[0] == "" {
		s.create(ctx, t, part)
		return
	}
	t.lastEdit = now
	if err := s.in.edit(ctx, s.chat, part, t.row.MessageIDs[0]); err != nil {
		s.pause(t, err)
		return
	}
	t.shown = part
}

// open makes the turn's row, streaming; a row that exists is adopted when
// it is streaming with a message (a turn run again after a restart edits
// the same message), otherwise the turn is not streamed.
func (s *stream) open(ctx context.Context, t *turnState) bool {
	it, created, err := s.in.m.st.OpenOutbox(ctx, store.OutboxItem{Connector: s.in.name, Chat: s.chat.Key(), SessionID: s.session,
		Turn: t.turn, Kind: store.OutReply, State: store.OutStreaming, SendingPart: -1, NextAt: s.in.m.o.Now()})
	if err != nil || !created && (it.State != store.OutStreaming || len(it.MessageIDs) == 0 || it.MessageIDs[0] == "") {
		t.off = true
		return false
	}
	t.row = &it
	return true
}

// create makes the message by the outbox's create protocol: the create
// is marked (part 0, its nonce) before the call and its id recorded
// after; an answer that may have made it leaves the mark for the worker.
func (s *stream) create(ctx context.Context, t *turnState, part string) {
	it := t.row
	from := store.OutStreaming
	it.SendingPart, it.Nonce = 0, fmt.Sprintf("a%dp0", it.ID)
	if err := s.in.move(ctx, it, &from, store.OutStreaming); err != nil {
		t.off = true
		return
	}
	t.lastEdit = s.in.m.o.Now()
	sent, err := s.in.send(ctx, s.chat, part, it.Nonce)
	if err != nil {
		if !definite(err) {
			t.off = true // the worker finds out whether it was made
			return
		}
		it.SendingPart = -1
		if s.in.move(ctx, it, &from, store.OutStreaming) != nil {
			t.off = true
		}
		s.pause(t, err)
		return
	}
	it.MessageIDs, it.SendingPart = []string{sent.ID}, -1
	if s.in.move(ctx, it, &from, store.OutStreaming) != nil {
		t.off = true
		return
	}
	t.shown = part
}

// pause waits as a 429 asks; a permanent refusal stops the streaming.
func (s *stream) pause(t *turnState, err error) {
	var ra *RetryAfter
	switch {
	case errors.As(err, &ra):
		t.paused = s.in.m.o.Now().Add(ra.D)
		s.in.count(func(f *figures) { f.rateUntil = t.paused })
	case errors.Is(err, ErrPermanent), errors.Is(err, ErrAuth), errors.Is(err, ErrConfig):
		t.off = true
	}
}

// finish hands the streamed row to the worker with the final text.
func (s *stream) finish(ctx context.Context, t *turnState, end event.TurnEndData) {
	if t.row == nil {
		return // the worker makes the row from the Ended hook
	}
	it := *t.row
	text, skip := finalText(s.in.spec, end)
	it.State, it.Text, it.NextAt = store.OutPending, text, s.in.m.o.Now()
	if skip && len(it.MessageIDs) == 0 {
		it.State = store.OutSkipped
	}
	if skip && it.State == store.OutPending {
		it.Text = t.shown // the message stays as it was shown
	}
	if ok, err := s.in.m.st.MoveOutbox(ctx, it.ID, store.OutStreaming, it); err == nil && ok {
		s.in.wake()
	}
}
