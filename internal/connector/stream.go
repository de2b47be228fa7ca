package connector

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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
// as a 429 asks. A reply past the platform's limit grows across parts:
// a part that is full is edited to its last text and the next part's
// message is made. At the turn's end it hands the row to the worker with
// the final text from the durable turn_end. While its row is streaming
// only it moves the row.
type stream struct {
	in      *instance
	session int64
	chat    Chat
	sub     *event.Subscription // the session's events; every session's for a chat's first message (firstWatch)
	nudge   chan struct{}
	logEnd  chan event.Event  // a turn_end the sweep read from the log (endedInLog)
	adopted *store.OutboxItem // a row left streaming by a process that stopped (adopt)
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
	partial       bool              // joined midway: text lacks the step's start, so it is not shown
	row           *store.OutboxItem // nil until the message is made
	off           bool              // not streamed further (the final reply still goes out)
	shown         []string          // the text each part's message shows
	lastEdit      time.Time
	paused        time.Time // a 429 asked to wait until then
	typed         time.Time
}

// firstBuffer is the buffer of a new chat's first subscription: it holds
// every session's events until the streamer reads them.
const firstBuffer = 1024

// watch returns the session's streamer, starting one (see startStream).
// nil when the instance is not running.
func (in *instance) watch(session int64, c Chat) *stream {
	return in.watchFrom(session, c, nil)
}

// firstWatch subscribes, for a chat whose session is not known yet, to
// every session's events, before its message is submitted: its first
// turn may start (and stream) before Contact names the session. nil when
// the connector neither types nor streams.
func (in *instance) firstWatch() *event.Subscription {
	if !*in.spec.Typing && !*in.spec.Stream.Edit {
		return nil
	}
	return in.m.events.Subscribe(0, firstBuffer)
}

// watchFrom is watch for a streamer that reads sub (firstWatch's, nil:
// its own subscription to the session), which it closes when it is not
// used (a streamer holds the session already, or none runs).
func (in *instance) watchFrom(session int64, c Chat, sub *event.Subscription) *stream {
	if !*in.spec.Typing && !*in.spec.Stream.Edit {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if s := in.streams[session]; s != nil {
		if sub != nil {
			sub.Close()
		}
		s.expected = false
		return s
	}
	s := in.startStream(&stream{in: in, session: session, chat: c, sub: sub})
	if s == nil && sub != nil {
		sub.Close()
	}
	return s
}

// adopt starts a streamer for a row left streaming with a message by a
// process that stopped while the row's turn ran: the runtime's recovery
// runs the turn again, and its new text edits the row's messages (one
// message on the platform, not a second). The streamer hands the row to
// the worker when the turn has ended, before or after this call. false:
// no streamer was started (streaming is off, the instance stops, or one
// holds the session already).
func (in *instance) adopt(it store.OutboxItem, c Chat) bool {
	if !*in.spec.Stream.Edit {
		return false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.streams[it.SessionID] != nil {
		return false
	}
	return in.startStream(&stream{in: in, session: it.SessionID, chat: c, adopted: &it, want: it.Turn, expected: true}) != nil
}

// startStream subscribes s unless it has a subscription (at once, so
// that a turn that starts after this call is seen whole) and runs it;
// nil when the instance is not running. in.mu is held.
func (in *instance) startStream(s *stream) *stream {
	if in.sctx == nil || in.sctx.Err() != nil {
		return nil
	}
	if s.sub == nil {
		s.sub = in.m.events.Subscribe(s.session, 256)
	}
	s.nudge, s.logEnd = make(chan struct{}, 1), make(chan event.Event, 1)
	in.streams[s.session] = s
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

// stopStreams ends every streamer and waits for them. The cancel is
// under in.mu, as startStream's check and Add are: a streamer is either
// added before the Wait or not started (a webhook's Inbound may come at
// any time).
func (in *instance) stopStreams() {
	in.mu.Lock()
	if in.scancel != nil {
		in.scancel()
	}
	in.mu.Unlock()
	in.swg.Wait()
}

func (s *stream) run(ctx context.Context) {
	defer s.sub.Close()
	var t turnState
	var lastEnded int64
	if s.adopted != nil {
		t, lastEnded = s.resume(ctx)
	}
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
			if e.Session != s.session {
				continue // a first contact's subscription has every session's
			}
			lastEnded = s.take(ctx, &t, e, lastEnded)
		case e := <-s.logEnd:
			lastEnded = s.take(ctx, &t, e, lastEnded)
		case <-timer.C:
			s.tick(ctx, &t)
		}
		timer.Reset(s.next(&t))
	}
}

// resume is the state of an adopted row's turn. Subscribed before this
// read, the streamer misses no end: a turn that has ended is in the log,
// one that ends later comes on the bus. The turn may have run again
// since the start of its step: what it says is shown from its next step
// or its next run on (turn_start).
func (s *stream) resume(ctx context.Context) (turnState, int64) {
	it := *s.adopted
	evs, err := s.in.m.st.TurnEvents(ctx, s.session, it.Turn)
	if err != nil {
		return turnState{}, it.Turn // the sweep finds the row again
	}
	t := turnState{turn: it.Turn, started: s.in.m.o.Now(), row: &it, step: -1, partial: true}
	for _, e := range evs {
		var end event.TurnEndData
		if e.Kind == event.TurnEnd && e.Decode(&end) == nil {
			s.finish(ctx, &t, end)
			return turnState{}, it.Turn
		}
	}
	return t, 0
}

// take handles event e and returns the last turn ended.
func (s *stream) take(ctx context.Context, t *turnState, e event.Event, lastEnded int64) int64 {
	if e.Kind == event.TurnEnd && e.Turn > lastEnded {
		lastEnded = e.Turn
	}
	s.event(ctx, t, e)
	return lastEnded
}

// endedInLog hands the streamer the turn_end of turn if the log has it:
// an end the bus did not bring (a notification of another node lost)
// would leave the row streaming while the streamer waits. The sweep
// calls it for the rows a streamer holds.
func (s *stream) endedInLog(ctx context.Context, turn int64) {
	evs, err := s.in.m.st.TurnEvents(ctx, s.session, turn)
	if err != nil {
		return
	}
	for _, e := range evs {
		if e.Kind == event.TurnEnd {
			select {
			case s.logEnd <- e:
			default: // one is waiting already
			}
			return
		}
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
		var row *store.OutboxItem
		if e.Turn == t.turn {
			row = t.row // a turn run again (a restart's recovery) edits its messages
		}
		*t = turnState{turn: e.Turn, started: now, row: row}
		s.tick(ctx, t)
	case e.Turn != t.turn || t.turn == 0:
	case e.Kind == event.TextDelta:
		var d event.DeltaData
		if e.Decode(&d) != nil || d.Reasoning {
			return
		}
		if d.Step != t.step || d.Attempt != t.attempt {
			t.partial = t.partial && t.step == -1 // the first step seen may have begun unseen
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
	if !*sp.Stream.Edit || t.off || t.partial || t.text == "" {
		return time.Time{}, false
	}
	var at time.Time
	switch {
	case t.row == nil || len(t.row.MessageIDs) == 0 || t.row.MessageIDs[0] == "":
		if utf8.RuneCountInString(t.text) < sp.Stream.MinChars {
			at = t.started.Add(sp.Stream.FirstAfter.D())
		}
	case slices.Equal(s.parts(t.text), t.shown):
		return time.Time{}, false
	default:
		at = t.lastEdit.Add(sp.every(s.chat, s.in.capsNow()))
	}
	if t.paused.After(at) {
		at = t.paused
	}
	return at, true
}

// parts cuts the text at the platform's limit, as the worker cuts the
// final text.
func (s *stream) parts(text string) []string {
	c := s.in.capsNow()
	if parts := markup.Split(c.Dialect, text, c.MaxText, c.Unit); len(parts) > 0 {
		return parts
	}
	return []string{text}
}

// flush makes the messages or edits them to the newest text: a part
// whose text changed is edited (a full one to its last text, once), the
// first part with no message yet is made.
func (s *stream) flush(ctx context.Context, t *turnState) {
	parts := s.parts(t.text)
	if len(parts) > store.MaxOutboxParts {
		t.off = true // the worker delivers it, or says why not
		return
	}
	if t.row == nil && !s.open(ctx, t) {
		return
	}
	t.lastEdit = s.in.m.o.Now()
	for i, part := range parts {
		if i < len(t.shown) && t.shown[i] == part {
			continue
		}
		if i >= len(t.row.MessageIDs) || t.row.MessageIDs[i] == "" {
			s.create(ctx, t, i, part)
			return
		}
		if err := s.in.edit(ctx, s.chat, part, t.row.MessageIDs[i]); err != nil {
			s.pause(t, err)
			return
		}
		s.show(t, i, part)
	}
}

// show records that part i's message shows text.
func (s *stream) show(t *turnState, i int, text string) {
	for len(t.shown) <= i {
		t.shown = append(t.shown, "")
	}
	t.shown[i] = text
}

// open makes the turn's row, streaming; a row that exists is adopted when
// it is streaming with a message and no create in flight (a turn run
// again after a restart edits the same messages), otherwise the turn is
// not streamed.
func (s *stream) open(ctx context.Context, t *turnState) bool {
	it, created, err := s.in.m.st.OpenOutbox(ctx, store.OutboxItem{Connector: s.in.name, Chat: s.chat.Key(), SessionID: s.session,
		Turn: t.turn, Kind: store.OutReply, State: store.OutStreaming, SendingPart: -1, NextAt: s.in.m.o.Now()})
	if err != nil || !created && (it.State != store.OutStreaming || len(it.MessageIDs) == 0 || it.MessageIDs[0] == "" || it.SendingPart >= 0) {
		t.off = true
		return false
	}
	t.row = &it
	return true
}

// create makes part i's message by the outbox's create protocol: the
// create is marked (the part, its nonce) before the call and its id
// recorded after; an answer that may have made it leaves the mark for
// the worker.
func (s *stream) create(ctx context.Context, t *turnState, i int, part string) {
	it := t.row
	from := store.OutStreaming
	it.SendingPart, it.Nonce = i, fmt.Sprintf("a%dp%d", it.ID, i)
	if err := s.in.move(ctx, it, &from, store.OutStreaming); err != nil {
		t.off = true
		return
	}
	at, reply := s.in.m.o.Now(), s.in.replyTo(ctx, it, s.chat, i)
	sent, err := s.in.send(ctx, s.chat, part, it.Nonce, reply)
	if err != nil && !definite(err) {
		sent, err = s.resolve(ctx, part, it.Nonce, reply, at)
		if err != nil {
			t.off = true // the worker finds out whether it was made
			return
		}
	}
	if err != nil {
		it.SendingPart = -1
		if s.in.move(ctx, it, &from, store.OutStreaming) != nil {
			t.off = true
		}
		s.pause(t, err)
		return
	}
	for len(it.MessageIDs) <= i {
		it.MessageIDs = append(it.MessageIDs, "")
	}
	it.MessageIDs[i], it.SendingPart = sent.ID, -1
	if s.in.move(ctx, it, &from, store.OutStreaming) != nil {
		t.off = true
		return
	}
	s.show(t, i, part)
}

// resolve finds out at once, where the platform can say, what a create
// (of part, answering message reply) whose answer was lost (asked at)
// made, so that the streaming goes on: a platform that dedups nonces is
// asked again with the same nonce (it answers with the first message);
// one that finds a message by its nonce (Finder) is asked, and sent to
// again if it has none. Elsewhere
// (Telegram) a second create could show the reply twice: an error, and the
// worker settles the create at the turn's end.
func (s *stream) resolve(ctx context.Context, part, nonce, reply string, at time.Time) (Sent, error) {
	if s.in.capsNow().Nonce {
		return s.in.send(ctx, s.chat, part, nonce, reply)
	}
	f, ok := s.in.platform().(Finder)
	if !ok {
		return Sent{}, errInDoubt
	}
	id, found, err := f.Find(ctx, s.chat, nonce, at.Add(-5*time.Second))
	switch {
	case err != nil:
		return Sent{}, err
	case found:
		return Sent{ID: id}, nil
	}
	return s.in.send(ctx, s.chat, part, nonce, reply)
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
		it.Text = strings.Join(t.shown, "\n\n") // the messages stay as they were shown
	}
	if ok, err := s.in.m.st.MoveOutbox(ctx, it.ID, store.OutStreaming, it); err == nil && ok {
		s.in.wake()
	}
}
