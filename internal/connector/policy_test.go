package connector

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPolicy is every dm_policy × chat kind × sender, and the group rules:
// what the connector does with each message.
func TestPolicy(t *testing.T) {
	type sender struct {
		name     string
		user     string
		approved bool
		bot      bool
	}
	senders := []sender{
		{name: "listed", user: "alice"},
		{name: "approved", user: "bob", approved: true},
		{name: "stranger", user: "eve"},
		{name: "bot", user: "robot", bot: true},
	}
	// want[policy][sender] for a DM.
	dmWant := map[string]map[string]string{
		PolicyPairing:   {"listed": "accept", "approved": "accept", "stranger": RefusedPairing, "bot": RefusedBot},
		PolicyAllowlist: {"listed": "accept", "approved": "accept", "stranger": RefusedAllowlist, "bot": RefusedBot},
		PolicyOpen:      {"listed": "accept", "approved": "accept", "stranger": "accept", "bot": RefusedBot},
		PolicyDisabled:  {"listed": RefusedDisabled, "approved": RefusedDisabled, "stranger": RefusedDisabled, "bot": RefusedBot},
	}
	// Groups: (groups spec, chat, mentioned) → the verdict for each sender.
	groupCases := []struct {
		name      string
		groups    string
		chat      string
		mentioned bool
		reply     bool
		want      map[string]string
	}{
		{"allowed chat, mentioned", `{"allow":["g1"]}`, "g1", true, false, all("accept")},
		{"allowed chat, replied to", `{"allow":["g1"]}`, "g1", false, true, all("accept")},
		{"allowed chat, not mentioned", `{"allow":["g1"]}`, "g1", false, false, all(RefusedMention)},
		{"allowed chat, no mention needed", `{"allow":["g1"],"mention":false}`, "g1", false, false, all("accept")},
		{"chat not allowed", `{"allow":["g1"]}`, "g2", true, false, all(RefusedGroup)},
		{"default: no group allowed", `{}`, "g1", true, false, all(RefusedGroup)},
		{"open", `{"policy":"open"}`, "g2", true, false, all("accept")},
		{"disabled", `{"policy":"disabled","allow":["g1"]}`, "g1", true, false, all(RefusedGroup)},
		{"members allowed", `{"policy":"open","members":"allowed"}`, "g1", true, false,
			map[string]string{"listed": "accept", "approved": "accept", "stranger": RefusedAllowlist}},
		{"thread of an allowed chat", `{"allow":["g1"]}`, "g1/t9", true, false, all("accept")},
	}
	verdictOf := func(s *Spec, m Inbound, approved bool) string {
		v, err := decide(s, m, func() (bool, error) { return approved, nil })
		if err != nil {
			t.Fatal(err)
		}
		if v.accept {
			return "accept"
		}
		return v.reason
	}
	for policy, want := range dmWant {
		s := spec(t, fmt.Sprintf(`{"platform":"fake","token_env":"T","agent":"a","dm_policy":%q,"allow":["alice"]}`, policy))
		got := map[string]string{}
		for _, x := range senders {
			got[x.name] = verdictOf(s, Inbound{Chat: Chat{ID: "d", Kind: ChatDM}, User: x.user, Bot: x.bot}, x.approved)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("dm_policy %s (-want +got)\n%s", policy, diff)
		}
	}
	for _, tc := range groupCases {
		for _, policy := range []string{PolicyPairing, PolicyOpen, PolicyDisabled} { // the DM policy does not gate groups
			s := spec(t, fmt.Sprintf(`{"platform":"fake","token_env":"T","agent":"a","dm_policy":%q,"allow":["alice"],"groups":%s}`, policy, tc.groups))
			got := map[string]string{}
			for _, x := range senders[:3] {
				id, thread, _ := cutKey(tc.chat)
				got[x.name] = verdictOf(s, Inbound{Chat: Chat{ID: id, Thread: thread, Kind: ChatGroup}, User: x.user,
					Mentioned: tc.mentioned, ReplyToBot: tc.reply}, x.approved)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("group %s, dm_policy %s (-want +got)\n%s", tc.name, policy, diff)
			}
		}
		s := spec(t, `{"platform":"fake","token_env":"T","agent":"a","groups":`+tc.groups+`}`)
		if got := verdictOf(s, Inbound{Chat: Chat{ID: "g1", Kind: ChatGroup}, User: "alice", Bot: true, Mentioned: true}, true); got != RefusedBot {
			t.Errorf("group %s: a bot's message: %s", tc.name, got)
		}
	}
}

func all(v string) map[string]string {
	return map[string]string{"listed": v, "approved": v, "stranger": v}
}

func cutKey(k string) (string, string, bool) {
	c := chatOf(k, "")
	return c.ID, c.Thread, c.Thread != ""
}

func spec(t *testing.T, js string) *Spec {
	t.Helper()
	s, err := Decode([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
