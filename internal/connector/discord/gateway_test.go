package discord

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"agentd/internal/connector"
	"agentd/internal/connector/discord/discordfake"
)

func TestConnectIdentifyReadyDispatch(t *testing.T) {
	r := newRig(t, nil, nil)
	r.run(r.h)
	r.wait("connected", r.fake.Connected)
	id := r.fake.SendAsUser(discordfake.UserMessage{Channel: "300", Author: alice, Content: "hello"})
	got := r.h.waitFor(t, 1)
	want := []connector.Inbound{{
		Key: "dc:" + id, Chat: connector.Chat{ID: "300", Kind: connector.ChatDM},
		User: alice.ID, Name: "Alice", MessageID: id, Text: "hello",
	}}
	if d := cmp.Diff(want, got, cmpopts.IgnoreFields(connector.Inbound{}, "At")); d != "" {
		t.Errorf("inbound (-want +got):\n%s", d)
	}
	if got[0].At.IsZero() {
		t.Error("At is zero")
	}
	if r.fake.Identifies() != 1 {
		t.Errorf("identifies = %d", r.fake.Identifies())
	}
	states := r.stateLog()
	if !strings.HasPrefix(states[len(states)-1], connector.StateConnected+" @agentd-bot") {
		t.Errorf("states = %q", states)
	}
}

func TestMissingAckResumes(t *testing.T) {
	r := newRig(t, &discordfake.Options{HeartbeatInterval: 20e6}, nil) // 20 ms
	r.run(r.h)
	r.wait("connected", r.fake.Connected)
	r.fake.StopAcking(true)
	// A message while the connection is a zombie: delivered once, on the
	// live connection or replayed by the RESUME.
	r.fake.SendAsUser(discordfake.UserMessage{Channel: "300", Author: alice, Content: "during"})
	r.wait("a resume", func() bool { return r.fake.Resumes() >= 1 })
	r.fake.StopAcking(false)
	r.fake.SendAsUser(discordfake.UserMessage{Channel: "300", Author: alice, Content: "after"})
	r.h.waitFor(t, 2)
	if d := cmp.Diff([]string{"during", "after"}, r.h.texts()); d != "" {
		t.Errorf("texts (-want +got):\n%s", d)
	}
	if n := r.fake.Identifies(); n != 1 {
		t.Errorf("identifies = %d, want 1 (the zombie resumed)", n)
	}
}

func TestReconnectResumesWithReplay(t *testing.T) {
	r := newRig(t, nil, nil)
	r.run(r.h)
	r.wait("connected", r.fake.Connected)
	r.fake.Reconnect()
	r.wait("a resume", func() bool { return r.fake.Resumes() == 1 })
	r.wait("connected", r.fake.Connected)

	// Dropped: what comes meanwhile is replayed by the RESUME.
	r.fake.Drop()
	r.fake.SendAsUser(discordfake.UserMessage{Channel: "300", Author: alice, Content: "one"})
	r.fake.SendAsUser(discordfake.UserMessage{Channel: "301", Guild: "900", Author: alice, Content: "<@" + r.fake.Bot().ID + "> two"})
	r.h.waitFor(t, 2)
	if d := cmp.Diff([]string{"one", "two"}, r.h.texts()); d != "" {
		t.Errorf("texts (-want +got):\n%s", d)
	}
	if r.fake.Identifies() != 1 || r.fake.Resumes() < 2 {
		t.Errorf("identifies %d resumes %d, want 1 and ≥ 2", r.fake.Identifies(), r.fake.Resumes())
	}
}

func TestHandlerErrorReplays(t *testing.T) {
	r := newRig(t, nil, nil)
	r.h.fail = 1
	r.run(r.h)
	r.wait("connected", r.fake.Connected)
	r.fake.SendAsUser(discordfake.UserMessage{Channel: "300", Author: alice, Content: "kept"})
	r.h.waitFor(t, 1)
	if d := cmp.Diff([]string{"kept"}, r.h.texts()); d != "" {
		t.Errorf("texts (-want +got):\n%s", d)
	}
	if r.fake.Resumes() < 1 {
		t.Error("a message the handler refused was not replayed by a RESUME")
	}
}

func TestInvalidSessionIdentifiesAndCatchesUp(t *testing.T) {
	r := newRig(t, nil, nil)
	h := catchupRecorder{r.h}
	r.run(h)
	r.wait("connected", r.fake.Connected)
	r.fake.SendAsUser(discordfake.UserMessage{Channel: "300", Author: alice, Content: "before"})
	r.h.waitFor(t, 1)
	// The session ends for good: what is sent before the next IDENTIFY is
	// never dispatched; the catch-up reads it.
	r.fake.InvalidateSession(false)
	r.fake.SendAsUser(discordfake.UserMessage{Channel: "300", Author: alice, Content: "missed"})
	r.h.waitFor(t, 2)
	if d := cmp.Diff([]string{"before", "missed"}, r.h.texts()); d != "" {
		t.Errorf("texts (-want +got):\n%s", d)
	}
	if r.fake.Identifies() != 2 {
		t.Errorf("identifies = %d, want 2", r.fake.Identifies())
	}
}

func TestCloseCodesThatNoReconnectMends(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  discordfake.Options
		token string
		gw    bool // skip GET /gateway/bot: the gateway refuses the token
		want  error
		text  string
	}{
		{"message content intent off", discordfake.Options{NoMessageContent: true}, "", false,
			connector.ErrConfig, "enable the Message Content intent in the Developer Portal"},
		{"bad token at the gateway", discordfake.Options{}, "wrong-token-secret", true, connector.ErrAuth, "4004"},
		{"bad token at /gateway/bot", discordfake.Options{}, "wrong-token-secret", false, connector.ErrAuth, "401"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, &tc.opts, func(c *connector.Config) {
				if tc.token != "" {
					c.Token = tc.token
				}
			})
			if tc.gw {
				r.p.cfg.GatewayURL = "ws" + strings.TrimPrefix(strings.TrimSuffix(r.fake.APIURL(), "/api/v10"), "http") + "/gateway"
			}
			err := r.p.Run(t.Context(), r.h)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("Run = %v, want %v with %q", err, tc.want, tc.text)
			}
			if strings.Contains(err.Error(), r.p.cfg.Token) {
				t.Errorf("the token is in the error: %v", err)
			}
			states := r.stateLog()
			if last := states[len(states)-1]; !strings.HasPrefix(last, connector.StateDown) || strings.Contains(last, r.p.cfg.Token) {
				t.Errorf("last state = %q", last)
			}
		})
	}
}

func TestFirstConnectCatchesUp(t *testing.T) {
	r := newRig(t, nil, nil)
	// agentd knew the chat; while it was down (no session), 120 messages
	// came: more than two pages of the catch-up.
	first := r.fake.SendAsUser(discordfake.UserMessage{Channel: "300", Author: alice, Content: "known"})
	r.h.got = []connector.Inbound{{Key: "dc:" + first, Chat: dm("300"), MessageID: first, Text: "known"}}
	want := []string{"known"}
	for i := range 120 {
		text := fmt.Sprintf("m%d", i)
		r.fake.SendAsUser(discordfake.UserMessage{Channel: "300", Author: alice, Content: text})
		want = append(want, text)
	}
	r.run(catchupRecorder{r.h})
	r.h.waitFor(t, len(want))
	if d := cmp.Diff(want, r.h.texts()); d != "" {
		t.Errorf("texts (-want +got):\n%s", d)
	}
	if n := r.fake.Calls("GET /channels/{id}/messages"); n != 3 {
		t.Errorf("pages read = %d, want 3", n)
	}
}
