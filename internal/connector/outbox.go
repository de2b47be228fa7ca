package connector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"agentd/internal/connector/markup"
	"agentd/internal/event"
	"agentd/internal/store"
)

// errMoved: another writer (a streamer, a node) moved the row first.
var errMoved = errors.New("connector: outbox row moved by another writer")

// errInDoubt: a create's answer was lost and the platform cannot say
// whether it made the message.
var errInDoubt = errors.New("connector: a create may have been made")

// work is the outbox worker: it turns the turns' ends into rows and
// delivers the rows that are due, until ctx ends (it stops without
// recording: a row in flight is finished by the next run).
func (in *instance) work(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-in.ended:
			in.open(ctx, e)
		case <-in.wakeC:
		case <-t.C:
		}
		for drained := false; !drained; {
			select {
			case e := <-in.ended:
				in.open(ctx, e)
			default:
				drained = true
			}
		}
		in.deliverDue(ctx)
		t.Reset(in.m.o.PollEvery)
	}
}

// finalText is what a turn's end delivers; skip: nothing (a cancelled
// turn, one done with no reply, a heartbeat with nothing to say).
func finalText(s *Spec, end event.TurnEndData) (text string, skip bool) {
	switch {
	case end.Status == event.StatusCancelled, end.NothingToDo():
		return "", true
	case end.Reply != "":
		return end.Reply, false
	case end.Status == event.StatusDone:
		return "", true
	}
	return s.ErrorText, false
}

// open makes a turn's end its outbox row (once: a second open finds the
// row). A row its streamer left streaming, with no streamer of this node
// holding it, is moved to pending with the final text. An error leaves
// the turn to the sweep.
func (in *instance) open(ctx context.Context, e ended) error {
	text, skip := finalText(in.spec, e.end)
	state := store.OutPending
	if skip {
		state = store.OutSkipped
	}
	now := in.m.o.Now()
	it, created, err := in.m.st.OpenOutbox(ctx, store.OutboxItem{Connector: in.name, Chat: e.chat.Key(), SessionID: e.session,
		Turn: e.turn, Kind: store.OutReply, State: state, Text: text, SendingPart: -1, NextAt: now})
	if err != nil {
		if ctx.Err() == nil {
			in.m.log.Warn("connector: outbox row not made; the sweep tries again", "connector", in.name, "err", err)
		}
		return err
	}
	if created || it.State != store.OutStreaming || in.streaming(e.session) {
		return nil
	}
	it.State, it.Text, it.NextAt = state, text, now
	_, err = in.m.st.MoveOutbox(ctx, it.ID, store.OutStreaming, it)
	return err
}

// deliverDue delivers the rows that are due.
func (in *instance) deliverDue(ctx context.Context) {
	rows, err := in.m.st.DueOutbox(ctx, in.name, in.m.o.Now(), 100)
	if err != nil {
		if ctx.Err() == nil {
			in.m.log.Warn("connector: outbox not read", "connector", in.name, "err", err)
		}
		return
	}
	for _, it := range rows {
		if ctx.Err() != nil {
			return
		}
		in.deliver(ctx, it)
	}
}

// deliver sends a row's parts in order: a part with a message is edited
// to its final text, one without is created (createPart); then the row is
// sent. An error settles the row (retry later, or failed).
func (in *instance) deliver(ctx context.Context, it store.OutboxItem) {
	parts := in.parts(it.Text, len(it.MessageIDs) > 0 && it.MessageIDs[0] != "")
	from := it.State
	if len(parts) == 0 {
		it.State = store.OutSkipped
		in.m.st.MoveOutbox(ctx, it.ID, from, it)
		return
	}
	it.Parts = len(parts)
	for len(it.MessageIDs) < len(parts) {
		it.MessageIDs = append(it.MessageIDs, "")
	}
	chat := in.chatOfRow(it)
	for i, part := range parts {
		var err error
		switch id := it.MessageIDs[i]; {
		case id != "" && part.file != nil: // a file once sent is final
		case id != "":
			err = in.edit(ctx, chat, part.md, id)
		default:
			err = in.createPart(ctx, &it, &from, i, chat, part)
		}
		if err != nil {
			in.settle(ctx, it, from, err)
			return
		}
	}
	it.State, it.SendingPart, it.SentAt, it.Error = store.OutSent, -1, in.m.o.Now(), ""
	if ok, err := in.m.st.MoveOutbox(ctx, it.ID, from, it); err != nil || !ok {
		return
	}
	in.count(func(f *figures) { f.delivered++ })
}

// createPart makes part i by the create protocol: the part's create is
// marked durable (sending, its nonce) before the call and its id recorded
// after. A part already marked had a create in flight when agentd stopped:
// on a platform that dedups nonces it is sent again with the same nonce;
// one that can find it (Finder) looks first; elsewhere it is sent again
// and the row marked in doubt, with a delivery event.
func (in *instance) createPart(ctx context.Context, it *store.OutboxItem, from *string, i int, chat Chat, part outPart) error {
	doubt, was := it.SendingPart == i, it.SendingPart
	it.SendingPart, it.Nonce = i, fmt.Sprintf("a%dp%d", it.ID, i)
	if err := in.move(ctx, it, from, store.OutSending); err != nil {
		it.SendingPart = was // nothing was sent
		return err
	}
	caps := in.capsNow()
	id := ""
	if doubt && (!caps.Nonce || part.file != nil) {
		if f, ok := in.platform().(Finder); ok && part.file == nil {
			found, ok, err := f.Find(ctx, chat, it.Nonce, it.CreatedAt.Add(-findMargin))
			switch {
			case errors.Is(err, ErrConfig), errors.Is(err, ErrAuth), errors.Is(err, ErrPermanent):
				it.InDoubt = true // it cannot look: sent again
			case err != nil:
				return err // looked for again on the next try
			case ok:
				id = found
			}
		} else {
			it.InDoubt = true
		}
	}
	found := id != ""
	if id == "" {
		sent, err := in.create(ctx, chat, part, it.Nonce, in.replyTo(ctx, it, chat, i))
		if err != nil {
			if definite(err) {
				it.SendingPart = -1 // the platform made nothing
			}
			return err
		}
		id = sent.ID
	}
	it.MessageIDs[i], it.SendingPart = id, -1
	if err := in.move(ctx, it, from, store.OutPending); err != nil {
		return err
	}
	if doubt && it.InDoubt {
		in.m.record(ctx, *it, event.DeliveryData{Op: event.DeliveryInDoubt, Connector: in.name, Platform: in.spec.Platform,
			Turn: it.Turn, Outbox: it.ID, Tries: it.Tries})
	}
	if found {
		// The found message holds what the create sent before agentd
		// stopped (a streamed reply's first text): it is edited to the
		// part's final text. Its id is durable first, so an error here
		// leaves a row whose next try edits it.
		return in.edit(ctx, chat, part.md, id)
	}
	return nil
}

// findMargin is how long before a row was made a Find looks back from:
// the platform's clock may run behind agentd's.
const findMargin = time.Minute

// move moves row it from *from to state; errMoved when another writer
// moved it first.
func (in *instance) move(ctx context.Context, it *store.OutboxItem, from *string, state string) error {
	it.State = state
	ok, err := in.m.st.MoveOutbox(ctx, it.ID, *from, *it)
	if err != nil {
		return err
	}
	if !ok {
		return errMoved
	}
	*from = state
	return nil
}

// definite reports whether err says the platform made no message.
func definite(err error) bool {
	var ra *RetryAfter
	return errors.As(err, &ra) || errors.Is(err, ErrPermanent) || errors.Is(err, ErrMarkup) || errors.Is(err, ErrTooLong) ||
		errors.Is(err, ErrAuth) || errors.Is(err, ErrConfig)
}

// settle records a delivery's error: a rate limit waits as the platform
// says (a try only once max_wait has passed), a permanent refusal fails
// at once, another error is a try and waits twice as long as the last;
// out of tries, the row fails with a delivery event in its session. A
// cancelled ctx records nothing (the next run delivers).
func (in *instance) settle(ctx context.Context, it store.OutboxItem, from string, err error) {
	if ctx.Err() != nil || errors.Is(err, errMoved) {
		return
	}
	d := in.spec.Delivery
	now := in.m.o.Now()
	it.Error = in.redact(err.Error())
	in.failure(it.Error)
	it.State = store.OutPending
	if it.SendingPart >= 0 {
		it.State = store.OutSending
	}
	var ra *RetryAfter
	switch {
	case errors.Is(err, ErrPermanent), errors.Is(err, ErrTooLong):
		in.fail(ctx, it, from)
		return
	case errors.As(err, &ra):
		in.count(func(f *figures) { f.retried++; f.rateUntil = now.Add(ra.D) })
		it.NextAt = now.Add(ra.D)
		if now.Sub(it.CreatedAt) <= d.MaxWait.D() {
			break
		}
		fallthrough
	default:
		it.Tries++
		if it.Tries >= d.Tries {
			in.fail(ctx, it, from)
			return
		}
		in.count(func(f *figures) { f.retried++ })
		if ra == nil {
			it.NextAt = now.Add(backoff(d, it.Tries))
		}
	}
	in.m.st.MoveOutbox(ctx, it.ID, from, it)
}

// backoff is the wait before try n+1: backoff doubled per try, at most
// max_backoff, ± 20 %.
func backoff(d Delivery, tries int) time.Duration {
	w := d.Backoff.D() << min(tries-1, 30)
	if w <= 0 || w > d.MaxBackoff.D() {
		w = d.MaxBackoff.D()
	}
	return w + time.Duration((rand.Float64()*0.4-0.2)*float64(w))
}

// fail gives a row up, with a delivery event in its session: a reply not
// delivered is never silent.
func (in *instance) fail(ctx context.Context, it store.OutboxItem, from string) {
	it.State = store.OutFailed
	if ok, err := in.m.st.MoveOutbox(ctx, it.ID, from, it); err != nil || !ok {
		return
	}
	in.count(func(f *figures) { f.failed++ })
	in.m.log.Warn("connector: reply not delivered", "connector", in.name, "outbox", it.ID, "tries", it.Tries, "err", it.Error)
	in.m.record(ctx, it, event.DeliveryData{Op: event.DeliveryFailed, Connector: in.name, Platform: in.spec.Platform,
		Turn: it.Turn, Outbox: it.ID, Tries: it.Tries, Error: it.Error})
}

// create makes one part: a message, or a file uploaded.
func (in *instance) create(ctx context.Context, c Chat, part outPart, nonce, replyTo string) (Sent, error) {
	if part.file != nil {
		return in.platform().(Uploader).Upload(ctx, c, *part.file)
	}
	return in.send(ctx, c, part.md, nonce, replyTo)
}

// send creates one message of markdown md, rendered for the platform, as
// an answer to message replyTo ("" none); a platform that refuses the
// markup gets it as plain text.
func (in *instance) send(ctx context.Context, c Chat, md, nonce, replyTo string) (Sent, error) {
	p := in.platform()
	out := in.outgoing(c, md)
	out.Nonce, out.ReplyTo = nonce, replyTo
	sent, err := p.Send(ctx, out)
	if errors.Is(err, ErrMarkup) && !out.Plain {
		in.count(func(f *figures) { f.retried++ })
		out.Text, out.Plain = markup.Render(markup.Plain, md), true
		sent, err = p.Send(ctx, out)
	}
	return sent, err
}

// replyTo is the message part i of row it answers: in a group, a reply's
// first part answers the person's message its turn took, whose id is its
// inbox item's Origin (durable with the turn: a restart still knows it);
// "" otherwise, or when the item cannot be read (the reply goes out
// unthreaded). In a DM one person talks: nothing to point at.
func (in *instance) replyTo(ctx context.Context, it *store.OutboxItem, c Chat, i int) string {
	if i != 0 || c.Kind != ChatGroup || it.Kind != store.OutReply || it.Turn == 0 {
		return ""
	}
	item, err := in.m.st.InboxItem(ctx, it.Turn)
	if err != nil || item.Session != it.SessionID || item.Kind != event.Input || item.Source != in.spec.Platform {
		return "" // not a person's message through this connector (a child's report, a job's)
	}
	return item.Origin
}

// edit replaces message id's text with markdown md, rendered; plain when
// the platform refuses the markup.
func (in *instance) edit(ctx context.Context, c Chat, md, id string) error {
	p := in.platform()
	out := in.outgoing(c, md)
	err := p.Edit(ctx, out, id)
	if errors.Is(err, ErrMarkup) && !out.Plain {
		in.count(func(f *figures) { f.retried++ })
		out.Text, out.Plain = markup.Render(markup.Plain, md), true
		err = p.Edit(ctx, out, id)
	}
	if err == nil {
		in.count(func(f *figures) { f.edits++ })
	}
	return err
}

func (in *instance) outgoing(c Chat, md string) Outgoing {
	d := in.capsNow().Dialect
	if d == markup.Plain || d == "" {
		return Outgoing{Chat: c, Text: markup.Render(markup.Plain, md), Plain: true}
	}
	return Outgoing{Chat: c, Text: markup.Render(d, md)}
}

func (in *instance) capsNow() Caps {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.caps
}

// jsonString is v as JSON text.
func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// streaming reports whether a streamer of this node holds session.
func (in *instance) streaming(session int64) bool { return in.streamer(session) != nil }

// streamer is the streamer of this node that holds session, nil if none.
func (in *instance) streamer(session int64) *stream {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.streams[session]
}
