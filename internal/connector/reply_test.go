package connector

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/store"
)

// TestGroupReplyAnswersItsMessage: in a group a reply answers the
// message it replies to (Outgoing.ReplyTo), streamed or not, and also
// when agentd died between the turn's end and the delivery: the
// message's id is kept with the turn's input. A DM's reply answers
// nothing: its chat is one conversation.
func TestGroupReplyAnswersItsMessage(t *testing.T) {
	const fields = `,"dm_policy":"open","groups":{"allow":["g1"]}`
	r, cs := crashRig(t, Caps{}, func(from string, to store.OutboxItem) bool {
		return from == store.OutPending && to.State == store.OutSending && to.Text == "re: Alice: first"
	})
	r.activate(fields)
	g1 := Chat{ID: "g1", Kind: ChatGroup}
	if err := r.inbound(Inbound{Key: "1", Chat: g1, User: "u1", Name: "Alice", MessageID: "501", Text: "first", Mentioned: true}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "agentd to die", cs.dead.Load)
	if n := len(r.p.messages()); n != 0 {
		t.Fatalf("sent before the restart: %+v", r.p.messages())
	}
	r.m.Close()
	r.st = r.k.Store
	r.start()
	r.activate(fields)
	waitFor(t, "the first reply", r.settled(1))
	long := strings.Repeat("a long question ", 5) // past min_chars: streamed
	for _, m := range []Inbound{
		{Key: "2", Chat: g1, User: "u2", Name: "Bob", MessageID: "502", Text: long, Mentioned: true},
		{Key: "3", Chat: Chat{ID: "c-u3", Kind: ChatDM}, User: "u3", MessageID: "503", Text: "in a DM"},
	} {
		n := len(r.rows()) + 1
		if err := r.inbound(m); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the reply to "+m.Key, r.settled(n))
	}
	type reply struct{ Chat, Text, ReplyTo string }
	var got []reply
	for _, m := range r.p.messages() {
		got = append(got, reply{m.Chat.ID, m.Text, m.ReplyTo})
	}
	want := []reply{{"g1", "re: Alice: first", "501"}, {"g1", "re: Bob: " + strings.TrimSpace(long), "502"}, {"c-u3", "re: in a DM", ""}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replies (-want +got)\n%s", diff)
	}
}
