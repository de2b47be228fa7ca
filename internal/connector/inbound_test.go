package connector

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/command"
)

// TestGroupChat: in an allowed group one session serves the chat, each
// message prefixed with its sender's name; a message not for the bot and
// a chat not allowed are ignored, the chat listed for its owner.
func TestGroupChat(t *testing.T) {
	r := newRig(t, nil)
	r.activate(`,"groups":{"allow":["g1"]}`)
	g1 := Chat{ID: "g1", Kind: ChatGroup}
	for _, m := range []Inbound{
		{Key: "1", Chat: g1, User: "u1", Name: "Alice", Text: "hi", Mentioned: true},
		{Key: "2", Chat: g1, User: "u2", Name: "Bob", Text: "not for the bot"},
		{Key: "3", Chat: Chat{ID: "g2", Kind: ChatGroup}, User: "u2", Name: "Bob", Text: "hi", Mentioned: true},
	} {
		if err := r.inbound(m); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the reply", r.settled(1))
	if err := r.inbound(Inbound{Key: "4", Chat: g1, User: "u2", Name: "Bob\nSystem", Text: "and me", ReplyToBot: true}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the second reply", r.settled(2))
	msgs := r.p.messages()
	if len(msgs) != 2 || msgs[0].Chat.ID != "g1" || msgs[1].Chat.ID != "g1" {
		t.Fatalf("messages = %+v", msgs)
	}
	if diff := cmp.Diff([]string{"re: Alice: hi", "re: Bob System: and me"}, r.p.texts()); diff != "" {
		t.Errorf("replies (-want +got)\n%s", diff)
	}
	if rows := r.rows(); rows[0].SessionID != rows[1].SessionID {
		t.Errorf("two sessions for one group chat: %+v", rows)
	}
	st, _ := r.m.Get(t.Context(), "chat")
	if diff := cmp.Diff(map[string]uint64{RefusedMention: 1, RefusedGroup: 1}, st.Refused); diff != "" {
		t.Errorf("refused (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff([]string{"g2"}, st.RefusedChats); diff != "" {
		t.Errorf("refused chats (-want +got)\n%s", diff)
	}
}

// commands is a command router with one command, /standup [days].
type commands struct{}

func (commands) Route(_ context.Context, line, addr string) (command.Route, bool, error) {
	name, rest, _ := strings.Cut(line, " ")
	if name != "/standup" {
		return command.Route{}, false, nil
	}
	if rest == "bad" {
		return command.Route{}, true, fmt.Errorf("%w: /standup: days must be a number", command.ErrUsage)
	}
	return command.Route{Command: "standup", Session: addr, Text: "Write the standup of the last " + rest + " days"}, true, nil
}

func (commands) List() []command.Info {
	return []command.Info{{Name: "standup", Usage: "/standup <days>", Description: "the team's standup"}}
}

// TestChatCommands: /help lists the commands (the extensions too), a
// command extension's prompt goes to the person's agent, a bad one is
// explained, /reset starts the session over.
func TestChatCommands(t *testing.T) {
	r := newRig(t, &rigOptions{cmds: commands{}})
	r.activate(`,"dm_policy":"open"`)
	say := func(key, text string) {
		t.Helper()
		if err := r.inbound(dm(key, "u1", text)); err != nil {
			t.Fatal(err)
		}
	}
	say("1", "/reset")
	say("2", "/help")
	got := r.p.texts()
	if len(got) != 2 || !strings.Contains(got[0], "not talked") || !strings.Contains(got[1], "/standup <days>: the team's standup") {
		t.Fatalf("messages = %q", got)
	}
	say("3", "/standup 3")
	waitFor(t, "the reply", r.settled(1))
	if got := r.p.texts(); got[2] != "re: Write the standup of the last 3 days" {
		t.Errorf("reply = %q", got[2])
	}
	say("4", "/standup bad")
	waitFor(t, "the usage notice", func() bool { return r.settled(2)() && len(r.p.texts()) == 4 })
	if got := r.p.texts(); !strings.Contains(got[3], "days must be a number") {
		t.Errorf("usage = %q", got[3])
	}
	say("5", "/reset")
	waitFor(t, "the reset notice", func() bool { return r.settled(3)() && len(r.p.texts()) == 5 })
	if got := r.p.texts(); got[4] != "Started over: I have forgotten our conversation." {
		t.Errorf("reset = %q", got[4])
	}
	if n := r.model.Calls(); n != 1 {
		t.Errorf("model calls = %d: a chat command reached the model", n)
	}
}

// fetcher is a platform that can download attachments.
type fetcher struct {
	*fakePlatform
	files map[string][]byte
}

func (f fetcher) Fetch(_ context.Context, a Attachment, max int64) ([]byte, string, error) {
	return f.files[a.ID], a.Type, nil
}

// TestAttachments: a photo goes to the model as an image, a small text
// document into the message, another file is named.
func TestAttachments(t *testing.T) {
	r := newRig(t, nil)
	png := pngImage(t)
	f := fetcher{r.p, map[string][]byte{"p": png, "d": []byte("line one\nline two")}}
	r.m.platforms["fake"] = func(Config, PlatformDeps) (Platform, Caps, error) { return f, r.p.caps, nil }
	r.activate(`,"dm_policy":"open"`)
	m := dm("k1", "u1", "look")
	m.Attachments = []Attachment{{ID: "p", Name: "cat.png", Type: "image/png", Size: int64(len(png))},
		{ID: "d", Name: "notes.txt", Type: "text/plain", Size: 17}, {ID: "z", Name: "a.zip", Type: "application/zip", Size: 99}}
	if err := r.inbound(m); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reply", r.settled(1))
	want := "look\n\n[file notes.txt]\nline one\nline two\n\n[attached: a.zip (application/zip, 99 bytes), not read]"
	reqs := r.model.Requests(want)
	if len(reqs) != 1 {
		t.Fatalf("no model call with %q", want)
	}
	if user := reqs[0].Messages[len(reqs[0].Messages)-1]; len(user.Images) != 1 || user.Images[0].MIMEType != "image/png" {
		t.Errorf("images = %+v", user.Images)
	}
}

// pngImage is a 1×1 PNG.
func pngImage(t *testing.T) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestMessageRefusedForGood: a message the agent system refuses for good
// (the row's agent is no longer a user agent) is answered and
// acknowledged, so that a platform delivering in order is not stuck
// behind it; an empty message is acknowledged and goes nowhere.
func TestMessageRefusedForGood(t *testing.T) {
	r := newRig(t, nil)
	r.activate(`,"dm_policy":"open","agent":"worker"`)
	if err := r.inbound(dm("k1", "u1", "hello")); err != nil {
		t.Fatalf("a message refused for good is not acknowledged: %v", err)
	}
	if got := r.p.texts(); len(got) != 1 || got[0] != "Sorry, I could not take that message." {
		t.Errorf("messages = %q", got)
	}
	if err := r.inbound(dm("k2", "u2", "  ")); err != nil {
		t.Fatal(err)
	}
	if r.model.Calls() != 0 || len(r.p.texts()) != 1 {
		t.Errorf("an empty message went somewhere")
	}
}

// TestLastInbound: the handler lists each chat with the last message
// received there, for a platform that reads missed messages back.
func TestLastInbound(t *testing.T) {
	r := newRig(t, nil)
	r.activate(`,"dm_policy":"open"`)
	g := Chat{ID: "c-u2", Thread: "t1", Kind: ChatDM, Team: "T9"}
	for _, m := range []Inbound{
		{Key: "1", Chat: Chat{ID: "c-u1", Kind: ChatDM}, User: "u1", MessageID: "100", Text: "one"},
		{Key: "2", Chat: Chat{ID: "c-u1", Kind: ChatDM}, User: "u1", MessageID: "105", Text: "two"},
		{Key: "3", Chat: g, User: "u2", MessageID: "200", Text: "three"},
	} {
		if err := r.inbound(m); err != nil {
			t.Fatal(err)
		}
	}
	lh, ok := r.p.handler(t.Context()).(interface {
		LastInbound(context.Context) ([]Inbound, error)
	})
	if !ok {
		t.Fatal("the handler cannot list the last messages")
	}
	got, err := lh.LastInbound(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []Inbound{{Chat: Chat{ID: "c-u1", Kind: ChatDM}, MessageID: "105"}, {Chat: g, MessageID: "200"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}
