package connector

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Notify puts an agent's message to a chat in the outbox, delivered like a
// notice, only to a chat the connector talks in or its allow lists name;
// any other chat and an unknown connector are refused and nothing is
// queued.
func TestNotify(t *testing.T) {
	r := newRig(t, nil)
	r.activate(`,"allow":["u9"],"groups":{"allow":["g1"]}`)
	if who, ok := r.m.Agent("chat"); !ok || who != "assistant" {
		t.Fatalf("Agent(chat) = %q, %v", who, ok)
	}
	if _, ok := r.m.Agent("nope"); ok {
		t.Fatal("Agent(nope) found")
	}
	ctx := t.Context()
	if err := r.inbound(dm("1", "u9", "hello")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reply", r.settled(1))
	for _, c := range []struct{ chat, text string }{{"c-u9", "to a chat it talks in"}, {"g1", "to an allowed group"}, {"u9", "to an allowed user's DM"}} {
		if err := r.m.Notify(ctx, "chat", c.chat, c.text); err != nil {
			t.Fatalf("Notify(%s): %v", c.chat, err)
		}
	}
	for _, c := range []struct {
		connector, chat string
		want            error
	}{{"chat", "g2", ErrChatNotAllowed}, {"chat", "u8", ErrChatNotAllowed}, {"nope", "g1", ErrUnknown}} {
		if err := r.m.Notify(ctx, c.connector, c.chat, "x"); !errors.Is(err, c.want) {
			t.Errorf("Notify(%s, %s) = %v, want %v", c.connector, c.chat, err, c.want)
		}
	}
	waitFor(t, "the notices", r.settled(4))
	type sent struct{ Chat, Text string }
	var got []sent
	for _, m := range r.p.messages()[1:] {
		got = append(got, sent{m.Chat.Key(), m.Text})
	}
	want := []sent{{"c-u9", "to a chat it talks in"}, {"g1", "to an allowed group"}, {"u9", "to an allowed user's DM"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sent (-want +got):\n%s", diff)
	}
	if rows := r.rows(); len(rows) != 4 || rows[1].SessionID == 0 || rows[2].SessionID != 0 {
		t.Errorf("rows: %+v", rows)
	}
}
