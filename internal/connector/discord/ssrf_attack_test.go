package discord

import (
	"errors"
	"strings"
	"testing"

	"agentd/internal/connector"
	"agentd/internal/netguard"
)

// The gateway WebSocket and attachment downloads dial through the SSRF
// guard: a /gateway/bot answer (or a resume_gateway_url) pointing at this
// machine, and an attachment URL at the metadata address or on loopback,
// are refused at the dial; the token is in no error.
func TestAttackGatewayAndCDNThroughTheGuard(t *testing.T) {
	r := newRig(t, nil, nil)
	g := netguard.New(nil)
	r.p.deps.Dialer = g.Dialer() // REST stays the test server's; the WebSocket dial is guarded
	target, err := r.p.gatewayBot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.p.connect(t.Context(), r.h, &session{}, target)
	if !errors.Is(err, netguard.ErrBlocked) {
		t.Errorf("gateway dial to %s: %v; want the guard's refusal", target, err)
	}
	p, _, err := New(connector.Config{Name: "dc", Token: r.cfg.Token, APIURL: r.cfg.APIURL},
		connector.PlatformDeps{HTTP: g.Client(0), Dialer: g.Dialer()})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", strings.Replace(target, "ws://", "http://", 1), "http://[::1]:80/x"} {
		_, _, err := p.(*Platform).Fetch(t.Context(), connector.Attachment{Name: "a.png", URL: u, Size: 1}, 100)
		// The error is redacted to text: its chain ends there.
		if err == nil || !strings.Contains(err.Error(), netguard.ErrBlocked.Error()) {
			t.Errorf("Fetch %s: %v; want the guard's refusal", u, err)
		}
		if err != nil && strings.Contains(err.Error(), r.cfg.Token) {
			t.Errorf("the token is in %q", err)
		}
	}
}
