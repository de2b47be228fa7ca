package connector

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/store"
)

var codeRE = regexp.MustCompile(`agentd pairing approve ([0-9A-Z]{4}-[0-9A-Z]{4})$`)

// TestPairing: a stranger gets a code and nothing else (the same code
// while it is pending, told once); at most MaxPending codes are pending,
// the next stranger is told the bot is private; codes expire; an approved
// person is told so through the outbox and then talks to the agent.
func TestPairing(t *testing.T) {
	r := newRig(t, &rigOptions{clock: true})
	r.activate(``)
	texts := func() []string { return r.p.texts() }
	say := func(user, text string) {
		t.Helper()
		if err := r.inbound(dm("k-"+user+text, user, text)); err != nil {
			t.Fatal(err)
		}
	}
	say("u1", "hi")
	say("u1", "hello?")
	got := texts()
	if len(got) != 1 {
		t.Fatalf("messages = %q, want one code", got)
	}
	m := codeRE.FindStringSubmatch(got[0])
	if m == nil || !strings.HasPrefix(got[0], "This bot is private.") {
		t.Fatalf("message = %q", got[0])
	}
	code := m[1]
	ps, err := r.m.ListPairings(t.Context(), "chat", store.PairPending)
	if err != nil || len(ps) != 1 || ShowCode(ps[0].Code) != code || ps[0].Name != "User u1" {
		t.Fatalf("pairings = %+v, %v", ps, err)
	}
	say("u2", "hi")
	say("u3", "hi")
	say("u4", "hi")
	say("u4", "hi again")
	got = texts()
	if len(got) != 4 || got[3] != privateText {
		t.Fatalf("messages = %q: the fourth stranger is told only that the bot is private, once", got)
	}
	if r.model.Calls() != 0 || len(r.rows()) != 0 {
		t.Errorf("a stranger's message went further: %d model calls, %d outbox rows", r.model.Calls(), len(r.rows()))
	}
	r.clock.add(PairingTTL + time.Minute)
	if _, err := r.m.DecidePairing(t.Context(), code, true, "test"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("approving an expired code: %v, want ErrNotFound", err)
	}
	say("u5", "hi")
	got = texts()
	m = codeRE.FindStringSubmatch(got[len(got)-1])
	if m == nil {
		t.Fatalf("after the codes expired, a stranger gets none: %q", got)
	}
	// Typed in any case, without the dash.
	p, err := r.m.DecidePairing(t.Context(), strings.ToLower(strings.ReplaceAll(m[1], "-", "")), true, "test")
	if err != nil || p.UserID != "u5" || p.State != store.PairApproved {
		t.Fatalf("approve: %+v, %v", p, err)
	}
	if got := texts(); got[len(got)-1] != approvedText {
		t.Fatalf("messages = %q", got)
	}
	say("u5", "hello")
	waitFor(t, "the reply", r.settled(1))
	got = texts()
	if diff := cmp.Diff([]string{approvedText, "re: hello"}, got[len(got)-2:]); diff != "" {
		t.Errorf("messages (-want +got)\n%s", diff)
	}
}

// TestPairingCodes: codes are 8 Crockford symbols, read back however they
// are typed.
func TestPairingCodes(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		c := newCode()
		if len(c) != 8 || strings.ContainsAny(c, "ILOU") || strings.Trim(c, crockford) != "" {
			t.Fatalf("code %q", c)
		}
		seen[c] = true
		if got := NormalCode(strings.ToLower(ShowCode(c))); got != c {
			t.Fatalf("NormalCode(%q) = %q", ShowCode(c), got)
		}
	}
	if len(seen) < 999 {
		t.Errorf("%d distinct codes of 1000", len(seen))
	}
	if got := NormalCode("k7pq-m2xo"); got != "K7PQM2X0" {
		t.Errorf("NormalCode = %q", got)
	}
}
