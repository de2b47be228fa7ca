package connector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"agentd/internal/agentsys"
	"agentd/internal/command"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/runtime"
	"agentd/internal/store"
)

// Inbound takes one message from the platform, in this order (what a
// crash between two steps leaves is in docs/connectors.md): the policy
// (nothing a stranger sends goes further), the chat commands, a new
// chat's conversation row where the agent system can name its session
// first (ContactSessions), the contact (durable with the platform's
// idempotency key: a redelivery starts no second turn), the
// conversation's row otherwise. It returns nil once
// the message is durable or refused on purpose; then the platform
// acknowledges it.
func (in *instance) Inbound(ctx context.Context, m Inbound) error {
	in.count(func(f *figures) { f.received++ })
	v, err := decide(in.spec, m, func() (bool, error) { return in.m.st.Approved(ctx, in.name, m.User) })
	if err != nil {
		return fmt.Errorf("connector: %s: policy: %w", in.name, err)
	}
	if !v.accept {
		in.refuse(v.reason, m.Chat)
		if v.reason == RefusedPairing {
			return in.pair(ctx, m)
		}
		return nil
	}
	text := strings.TrimSpace(m.Text)
	session, known := in.session(m.Chat)
	if done, err := in.command(ctx, m, text, session, known); done || err != nil {
		return err
	}
	if extra, ok := in.commandExtension(ctx, m, text, session, known); ok {
		if extra == "" {
			return nil
		}
		text = extra
	}
	imgs, notes := in.attachments(ctx, m.Attachments)
	if text += notes; text == "" && len(imgs) == 0 {
		return nil // a sticker, a join: nothing to say
	}
	user := m.User
	if m.Chat.Kind == ChatGroup && in.spec.Groups.Session == "chat" {
		user = "*"
		text = cleanName(m.Name, m.User) + ": " + text
	}
	var st *stream
	var first *event.Subscription // a new chat's: its session is named by Contact, after its turn may have begun
	if known {
		st = in.watch(session, m.Chat) // before the turn can start: no delta is missed
	} else if first = in.firstWatch(); first != nil {
		defer func() {
			if first != nil {
				first.Close()
			}
		}()
	}
	c := agentsys.Contact{Template: in.spec.Agent, Connector: in.name,
		Channel: m.Chat.Key(), User: user, Text: text, IdempotencyKey: m.Key, Images: imgs, Source: in.spec.Platform,
		MessageID: m.MessageID}
	early := false
	if !known {
		if early, err = in.converseEarly(ctx, m.Chat, c); err != nil {
			return err
		}
	}
	inst, rc, err := in.m.contacts.Contact(ctx, c)
	if err != nil {
		if st != nil {
			st.expect(0)
		}
		switch {
		case errors.Is(err, store.ErrLimit):
			in.refuse(RefusedLimit, m.Chat)
			in.say(ctx, m.Chat, m.User, "Too many conversations right now; try again later.")
			return nil
		case refused(err):
			// Taking it again would fail again, and a platform that
			// redelivers in order would be stuck behind it.
			in.m.log.Warn("connector: a message refused", "connector", in.name, "chat", m.Chat.ID, "err", err)
			in.say(ctx, m.Chat, m.User, "Sorry, I could not take that message.")
			return nil
		}
		return fmt.Errorf("connector: %s: %w", in.name, err)
	}
	if !known {
		if err := in.converse(ctx, m.Chat, rc.SessionID, inst.ID, m.MessageID); err != nil {
			return err
		}
		in.endedEarly(ctx, m.Chat, rc.SessionID, rc.Turn)
		if !rc.Duplicate {
			st, first = in.watchFrom(rc.SessionID, m.Chat, first), nil
		}
	}
	if (known || early) && m.MessageID != "" {
		// The catch-up's bookmark (Discord): a message missed is read back
		// after it; losing this write only reads a few again.
		if err := in.m.st.SetSeen(ctx, in.name, m.Chat.Key(), 0, m.MessageID); err != nil {
			in.m.log.Warn("connector: last message not recorded", "connector", in.name, "err", err)
		}
	}
	if st != nil {
		if rc.Duplicate {
			st.expect(0)
		} else {
			st.expect(rc.Turn)
		}
	}
	return nil
}

// LastInbound lists the chats this connector talks in, each with the last
// message received there (Chat and MessageID set): a platform that
// redelivers nothing missed while it was away (Discord) reads each chat's
// messages after that one and hands them in again; their keys dedup what
// was seen. An ability of the Handler Run is given.
func (in *instance) LastInbound(ctx context.Context) ([]Inbound, error) {
	cs, err := in.m.st.Conversations(ctx, in.name)
	if err != nil {
		return nil, fmt.Errorf("connector: %s: conversations: %w", in.name, err)
	}
	out := make([]Inbound, 0, len(cs))
	for _, c := range cs {
		out = append(out, Inbound{Chat: chatOf(c.Chat, c.ChatJSON), MessageID: c.LastIn})
	}
	return out, nil
}

// refused reports whether the agent system refused a message for good
// (the message or the row's agent is at fault), not for now.
func refused(err error) bool {
	for _, e := range []error{store.ErrInvalid, agentsys.ErrNotFound, agentsys.ErrNotTemplate, agentsys.ErrEnded,
		runtime.ErrUnknownAgent, runtime.ErrInvalidAgent, runtime.ErrBadAddress, runtime.ErrEmptyInput,
		runtime.ErrTooLarge, runtime.ErrSessionClosed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// session returns the session a chat talks to, if it has talked before.
func (in *instance) session(c Chat) (int64, bool) {
	in.m.mu.RLock()
	defer in.m.mu.RUnlock()
	id, ok := in.m.chats[chatKey{in.name, c.Key()}]
	return id, ok
}

// converse records the chat's conversation (its first message) and maps
// its session to it.
func (in *instance) converse(ctx context.Context, c Chat, session int64, instance, lastIn string) error {
	js, err := jsonString(c)
	if err != nil {
		return err
	}
	if _, err := in.m.st.PutConversation(ctx, store.Conversation{Connector: in.name, Chat: c.Key(), ChatJSON: js,
		SessionID: session, Instance: instance, LastIn: lastIn}); err != nil {
		return fmt.Errorf("connector: %s: conversation: %w", in.name, err)
	}
	in.m.remember(session, convRef{connector: in.name, chat: c})
	return nil
}

// converseEarly records a new chat's conversation before its first
// message is submitted, where the agent system can name the session
// first: a crash just after the message is durable then leaves a
// conversation, so the sweep delivers its reply and a catch-up reads the
// chat again (its LastIn is empty until the message is taken). It
// reports whether the row was written; if not (no such ability, or an
// error Contact meets again and answers), converse writes it after. A
// failed write is an error: the message is not taken (the platform
// delivers it again).
func (in *instance) converseEarly(ctx context.Context, chat Chat, c agentsys.Contact) (bool, error) {
	cs, ok := in.m.contacts.(ContactSessions)
	if !ok {
		return false, nil
	}
	inst, session, err := cs.ContactSession(ctx, c)
	if err != nil {
		return false, nil
	}
	if err := in.converse(ctx, chat, session, inst.ID, ""); err != nil {
		return false, err
	}
	return true, nil
}

// endedEarly hands the worker a chat's first turn if it ended before
// converse mapped its session: the Ended hook found no chat then and let
// it go. The hook runs after the turn_end is durable and reads the map
// converse wrote before this read, so the turn's end is met by one of the
// two (or both: opening a row is idempotent). A failed read leaves it to
// the sweep.
func (in *instance) endedEarly(ctx context.Context, c Chat, session, turn int64) {
	evs, err := in.m.st.TurnEvents(ctx, session, turn)
	if err != nil {
		in.m.log.Warn("connector: a first turn not read; the sweep finds it", "connector", in.name, "err", err)
		return
	}
	for _, e := range evs {
		var end event.TurnEndData
		if e.Kind == event.TurnEnd && e.Decode(&end) == nil {
			select {
			case in.ended <- ended{session: session, turn: turn, end: end, chat: c}:
			default: // full: the sweep finds it
			}
			return
		}
	}
}

// pair answers a stranger with their pairing code (the same while it is
// pending), at most once per StrangerEvery; nothing they wrote is kept.
func (in *instance) pair(ctx context.Context, m Inbound) error {
	now := in.m.o.Now()
	var p store.Pairing
	var created bool
	var err error
	for range 3 { // a new code may meet another pending one: draw again
		p, created, err = in.m.st.Pair(ctx, store.Pairing{Connector: in.name, UserID: m.User, Name: cleanName(m.Name, ""),
			Chat: m.Chat.Key(), Code: newCode(), State: store.PairPending, CreatedAt: now, ExpiresAt: now.Add(PairingTTL)},
			MaxPending, now)
		if err == nil || errors.Is(err, store.ErrPairingFull) {
			break
		}
	}
	switch {
	case errors.Is(err, store.ErrPairingFull):
		if in.full.allow(m.User, now) {
			in.say(ctx, m.Chat, "", privateText)
		}
		return nil
	case err != nil:
		return fmt.Errorf("connector: %s: pairing: %w", in.name, err)
	case p.State != store.PairPending:
		return nil // denied: ignored
	}
	if in.strangers.allow(m.User, now) || created {
		in.say(ctx, m.Chat, "", pairText(p.Code))
	}
	return nil
}

// say sends a short plain text straight to a chat, not through the
// outbox (to strangers: no row of theirs is kept); at most once per
// StrangerEvery per user when user is set.
func (in *instance) say(ctx context.Context, c Chat, user, text string) {
	if user != "" && !in.strangers.allow(user, in.m.o.Now()) {
		return
	}
	p := in.platform()
	if p == nil {
		return
	}
	if _, err := p.Send(ctx, Outgoing{Chat: c, Text: text, Plain: true}); err != nil {
		in.m.log.Warn("connector: a short answer not sent", "connector", in.name, "err", in.redact(err.Error()))
	}
}

// command handles the chat commands every connector knows: /start,
// /help, /reset and /compact. done: the line was one of them. /reset and
// /compact are done once per message key (the runtime keeps the key with
// the control's inbox item): a message the platform delivers again after
// agentd died before its ack does not reset twice; its answer is written
// again (a notice twice is better than none).
func (in *instance) command(ctx context.Context, m Inbound, text string, session int64, known bool) (bool, error) {
	name, rest, _ := strings.Cut(text, " ")
	rest = strings.TrimSpace(rest)
	var reply string
	switch name {
	case "/start", "/help":
		reply = in.help()
	case "/reset":
		reply = "Nothing to start over: we have not talked yet."
		if known {
			addr, err := in.address(ctx, session)
			if err == nil {
				_, err = in.m.sessions.ResetOnce(ctx, addr, "reset from "+in.spec.Platform, m.Key)
			}
			if err != nil {
				return true, fmt.Errorf("connector: %s: /reset: %w", in.name, err)
			}
			reply = "Started over: I have forgotten our conversation."
		}
	case "/compact":
		reply = "Nothing to compact: we have not talked yet."
		if known {
			addr, err := in.address(ctx, session)
			if err == nil {
				_, _, err = in.m.sessions.CompactOnce(ctx, addr, rest, m.Key)
			}
			if err != nil {
				return true, fmt.Errorf("connector: %s: /compact: %w", in.name, err)
			}
			return true, nil // the compaction's turn end says what it did: the worker delivers it as its reply
		}
	default:
		return false, nil
	}
	return true, in.notice(ctx, m.Chat, session, reply)
}

// commandExtension routes a "/name args" line to an active command
// extension: text is its filled prompt for the person's agent; "" with ok
// when the person was told how to use it.
func (in *instance) commandExtension(ctx context.Context, m Inbound, text string, session int64, known bool) (string, bool) {
	if in.m.o.Commands == nil || !strings.HasPrefix(text, "/") {
		return "", false
	}
	addr := ""
	if known {
		addr, _ = in.address(ctx, session)
	}
	rt, ok, err := in.m.o.Commands.Route(ctx, text, addr)
	switch {
	case errors.Is(err, command.ErrUsage):
		in.notice(ctx, m.Chat, session, err.Error())
		return "", true
	case err != nil, !ok, rt.Command == "":
		return "", false // as written: a person in a chat addresses their own agent only
	}
	return rt.Text, true
}

// help lists the chat commands and the command extensions.
func (in *instance) help() string {
	var b strings.Builder
	b.WriteString("Write to me and I answer. Commands:\n/reset: start over\n/compact [focus]: summarise our conversation so far\n/help: this list")
	if in.m.o.Commands != nil {
		for _, c := range in.m.o.Commands.List() {
			fmt.Fprintf(&b, "\n%s", c.Usage)
			if c.Description != "" {
				fmt.Fprintf(&b, ": %s", c.Description)
			}
		}
	}
	return b.String()
}

// notice puts a connector's own message to a chat in the outbox (see
// Manager.notice).
func (in *instance) notice(ctx context.Context, c Chat, session int64, text string) error {
	return in.m.notice(ctx, in.name, c, session, text)
}

// address is a session's address.
func (in *instance) address(ctx context.Context, session int64) (string, error) {
	s, err := in.m.st.SessionByID(ctx, session)
	if err != nil {
		return "", err
	}
	return s.Agent + "/" + s.Key, nil
}

// attachments fetches a message's images (to the model) and small text
// documents (into the text); the rest are named in the text.
func (in *instance) attachments(ctx context.Context, as []Attachment) ([]model.Image, string) {
	if len(as) == 0 {
		return nil, ""
	}
	f, _ := in.platform().(Fetcher)
	var imgs []model.Image
	var notes strings.Builder
	for _, a := range as {
		name := cleanName(a.Name, "file")
		image := strings.HasPrefix(a.Type, "image/")
		textual := strings.HasPrefix(a.Type, "text/") || a.Type == "application/json"
		max := in.spec.Files.TextBytes
		if image {
			max = min(in.spec.Files.MaxBytes, model.MaxImageBytes)
		}
		if f == nil || !(image && len(imgs) < model.MaxImages || textual) || a.Size > max {
			fmt.Fprintf(&notes, "\n\n[attached: %s (%s, %d bytes), not read]", name, a.Type, a.Size)
			continue
		}
		data, typ, err := f.Fetch(ctx, a, max)
		if err != nil {
			in.m.log.Warn("connector: attachment not fetched", "connector", in.name, "err", in.redact(err.Error()))
			fmt.Fprintf(&notes, "\n\n[attached: %s, could not be fetched]", name)
			continue
		}
		if image {
			img := model.Image{MIMEType: typ, Data: data}
			if model.CheckImage(img) == nil {
				imgs = append(imgs, img)
				continue
			}
			fmt.Fprintf(&notes, "\n\n[attached: %s, not an image agentd reads]", name)
			continue
		}
		fmt.Fprintf(&notes, "\n\n[file %s]\n%s", name, strings.ToValidUTF8(string(data), "\uFFFD"))
	}
	return imgs, notes.String()
}

// cleanName is a display name fit for a prompt or a list: one line, no
// control characters, at most 64 characters; or; def if empty.
func cleanName(s, def string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > 64 {
		s = string(r[:64])
	}
	if s == "" {
		return def
	}
	return s
}
