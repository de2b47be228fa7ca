package main

import (
	"strings"
	"testing"
)

// Through the daemon: in a group each reply answers the message it
// replies to (reply_parameters); a DM's reply answers nothing; a person's
// first message already streams by edits.
func TestTelegramRepliesAnswerTheirMessage(t *testing.T) {
	r, _ := tgRig(t)
	r.serve(t, false)
	r.put(t, tgRow(r.api, "  dm_policy: open\n"))

	for _, tc := range []struct{ chat, user, text, want string }{
		{"-100777", "43", "@agentd_bot ping", "You said: Bob: ping"},
		{"-100777", "42", "@agentd_bot pong", "You said: Alice: pong"},
		{"43", "43", "in a DM", "You said: in a DM"},
	} {
		post := r.w.SendAsUser(tc.chat, tc.user, tc.text)
		m := r.said(t, tc.chat, "the reply to "+tc.text, plain, equals(tc.want))
		want := post.ID
		if tc.chat == "43" {
			want = ""
		}
		if m.ReplyTo != want {
			t.Errorf("the reply to %q answers %q, want %q", tc.text, m.ReplyTo, want)
		}
	}

	// Alice's first message streams, as her later ones would.
	r.w.SendAsUser("42", "42", "tell me a story")
	story := "Once upon a time there was a small daemon that answered every message it got, and it lived happily ever after."
	m := r.said(t, "42", "the story", plain, equals(story))
	if m.Edits() < 1 {
		t.Errorf("a first reply came in one piece, not streamed: %+v", m.Versions)
	}
	for _, v := range m.Versions {
		if p := plain(v.Text); p != story && !strings.HasPrefix(story, strings.TrimRight(p, "…. ")) {
			t.Errorf("a streamed version %q is no prefix of the reply", p)
		}
	}
	r.d.stop(t)
}
