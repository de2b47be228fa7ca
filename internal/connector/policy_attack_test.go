package connector

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"agentd/internal/store"
)

// Attacks on who may talk to the agent: every way a stranger, or a member
// of a chat the connector does not serve, might get a word to the agent,
// its session log or the logs. Each must end at the policy: no model
// call, no conversation, no outbox row, nothing of the text kept.

// TestAttackStrangerReachesNothing: under dm_policy pairing, a stranger's
// text, a photo with a caption, the chat commands, a command extension
// and a long burst are all answered with one pairing code and go nowhere.
func TestAttackStrangerReachesNothing(t *testing.T) {
	r := newRig(t, &rigOptions{cmds: commands{}})
	r.activate(``)
	const secretWords = "exfiltrate-the-keys"
	msgs := []Inbound{
		dm("1", "eve", "hello "+secretWords),
		{Key: "2", Chat: Chat{ID: "c-eve", Kind: ChatDM}, User: "eve", Name: "Eve", Text: "caption " + secretWords,
			Attachments: []Attachment{{ID: "f1", Name: "p.jpg", Type: "image/jpeg", Size: 10}}},
		dm("3", "eve", "/reset"),
		dm("4", "eve", "/compact "+secretWords),
		dm("5", "eve", "/standup 3 "+secretWords),
		dm("6", "eve", "/help"),
		dm("7", "eve", "/start"),
		// A stranger who says the bot mentioned them, or replied to them:
		// in a DM those flags mean nothing.
		{Key: "8", Chat: Chat{ID: "c-eve", Kind: ChatDM}, User: "eve", Text: secretWords, Mentioned: true, ReplyToBot: true},
	}
	for i := range 20 {
		msgs = append(msgs, dm(fmt.Sprint("burst", i), "eve", secretWords))
	}
	for _, m := range msgs {
		if err := r.inbound(m); err != nil {
			t.Fatalf("inbound %q: %v", m.Text, err)
		}
	}
	got := r.p.texts()
	if len(got) != 1 || !codeRE.MatchString(got[0]) {
		t.Fatalf("the stranger was told %q; want one pairing code and nothing else", got)
	}
	strangerWentNowhere(t, r, secretWords)
}

// TestAttackGroupsReachNothing: a group chat not allowed (mentioned, or
// replying to the bot), a group thread under an allowed id's prefix, and a
// stranger in an allowed group with members: allowed reach nothing; no
// pairing code is posted into a group.
func TestAttackGroupsReachNothing(t *testing.T) {
	r := newRig(t, nil)
	r.activate(`,"allow":["alice"],"groups":{"allow":["g1"],"members":"allowed"}`)
	const secretWords = "group-secret-words"
	msgs := []Inbound{
		{Key: "1", Chat: Chat{ID: "g2", Kind: ChatGroup}, User: "alice", Text: secretWords, Mentioned: true},
		{Key: "2", Chat: Chat{ID: "g2", Kind: ChatGroup}, User: "alice", Text: "/reset", ReplyToBot: true},
		// An id that only starts like an allowed one, or embeds it as a
		// thread: not the allowed chat.
		{Key: "3", Chat: Chat{ID: "g1x", Kind: ChatGroup}, User: "alice", Text: secretWords, Mentioned: true},
		{Key: "4", Chat: Chat{ID: "g9", Thread: "g1", Kind: ChatGroup}, User: "alice", Text: secretWords, Mentioned: true},
		// The allowed group, a stranger: members: allowed.
		{Key: "5", Chat: Chat{ID: "g1", Kind: ChatGroup}, User: "eve", Text: secretWords, Mentioned: true},
		{Key: "6", Chat: Chat{ID: "g1", Kind: ChatGroup}, User: "eve", Text: "/compact", Mentioned: true},
		// The allowed group, an allowed member, no mention: not for the bot.
		{Key: "7", Chat: Chat{ID: "g1", Kind: ChatGroup}, User: "alice", Text: secretWords},
		// A bot that names the bot.
		{Key: "8", Chat: Chat{ID: "g1", Kind: ChatGroup}, User: "robot", Bot: true, Text: secretWords, Mentioned: true},
	}
	for _, m := range msgs {
		if err := r.inbound(m); err != nil {
			t.Fatalf("inbound %+v: %v", m, err)
		}
	}
	if got := r.p.texts(); len(got) != 0 {
		t.Errorf("the connector wrote %q into group chats; want silence", got)
	}
	if ps, _ := r.m.ListPairings(t.Context(), "chat", ""); len(ps) != 0 {
		t.Errorf("pairings made from group messages: %+v", ps)
	}
	strangerWentNowhere(t, r, secretWords)
}

// TestAttackPairingCodeReuse: a denied stranger gets no code again and
// reaches nothing; a code is one decision only (a replayed approve, a deny
// after approve, an approve after deny all fail); a code that expired is
// never given out again, nor approved.
func TestAttackPairingCodeReuse(t *testing.T) {
	r := newRig(t, &rigOptions{clock: true})
	r.activate(``)
	ctx := t.Context()
	code := func(user string) string {
		t.Helper()
		ps, err := r.m.ListPairings(ctx, "chat", "")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if p.UserID == user {
				return p.Code
			}
		}
		return ""
	}
	r.inbound(dm("1", "eve", "hi"))
	c1 := code("eve")
	if _, err := r.m.DecidePairing(ctx, c1, false, "owner"); err != nil {
		t.Fatal(err)
	}
	for _, approve := range []bool{true, false} {
		if _, err := r.m.DecidePairing(ctx, c1, approve, "owner"); err == nil {
			t.Errorf("a denied code decided again (approve %v)", approve)
		}
	}
	r.clock.add(StrangerEvery + time.Minute)
	r.inbound(dm("2", "eve", "let me in"))
	if got := r.p.texts(); len(got) != 1 {
		t.Errorf("a denied stranger was answered again: %q", got)
	}
	if ok, _ := r.st.Approved(ctx, "chat", "eve"); ok {
		t.Fatal("a denied stranger is approved")
	}

	r.inbound(dm("3", "mallory", "hi"))
	c2 := code("mallory")
	if _, err := r.m.DecidePairing(ctx, c2, true, "owner"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.m.DecidePairing(ctx, c2, true, "owner"); err == nil {
		t.Error("an approved code approved again")
	}
	if _, err := r.m.DecidePairing(ctx, c2, false, "owner"); err == nil {
		t.Error("an approved code denied afterwards")
	}

	r.inbound(dm("4", "trent", "hi"))
	c3 := code("trent")
	r.clock.add(PairingTTL + time.Second)
	if _, err := r.m.DecidePairing(ctx, c3, true, "owner"); err == nil {
		t.Error("an expired code approved")
	}
	r.clock.add(StrangerEvery)
	r.inbound(dm("5", "trent", "hi again"))
	if c4 := code("trent"); c4 == c3 || c4 == "" {
		t.Errorf("after expiry the stranger got code %q again (was %q)", c4, c3)
	}
	if _, err := r.m.DecidePairing(ctx, c3, true, "owner"); err == nil {
		t.Error("the expired code approves the stranger's new pairing")
	}
	if ok, _ := r.st.Approved(ctx, "chat", "trent"); ok {
		t.Fatal("trent approved through an expired code")
	}
}

// TestAttackPairingFlood: many strangers at once never make more than
// MaxPending codes (the store counts and inserts in one write), and the
// connector answers each at most once.
func TestAttackPairingFlood(t *testing.T) {
	r := newRig(t, nil)
	r.activate(``)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			user := fmt.Sprintf("s%d", i)
			for j := range 3 {
				if err := r.inbound(dm(fmt.Sprint(user, "-", j), user, "hi")); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	ps, err := r.m.ListPairings(t.Context(), "chat", store.PairPending)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) > MaxPending {
		t.Errorf("%d pending codes after a flood; at most %d", len(ps), MaxPending)
	}
	if got := len(r.p.texts()); got > 40 {
		t.Errorf("40 strangers got %d answers: the bot amplifies", got)
	}
	if r.model.Calls() != 0 {
		t.Errorf("the flood reached the model %d times", r.model.Calls())
	}
}

// strangerWentNowhere: no model call, no conversation, no outbox row, and
// the words in no log line.
func strangerWentNowhere(t *testing.T, r *rig, words string) {
	t.Helper()
	if n := r.model.Calls(); n != 0 {
		t.Errorf("the model was called %d times", n)
	}
	if cs, err := r.st.Conversations(t.Context(), "chat"); err != nil || len(cs) != 0 {
		t.Errorf("conversations %+v, %v; want none", cs, err)
	}
	if rows := r.rows(); len(rows) != 0 {
		t.Errorf("outbox rows %+v; want none", rows)
	}
	if strings.Contains(r.logs.String(), words) {
		t.Errorf("the logs hold the refused words:\n%s", r.logs.String())
	}
}
