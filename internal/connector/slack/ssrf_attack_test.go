package slack

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"agentd/internal/connector"
	"agentd/internal/netguard"
)

// The Socket Mode WebSocket dials through the SSRF guard (an
// apps.connections.open answer pointing at this machine is refused), and a
// shared file's url_private is fetched only from Slack's hosts or the
// configured API's: look-alike hosts, the metadata address and credentials
// in the URL are refused before any request, with no token sent.
func TestAttackSocketAndFilesThroughTheGuard(t *testing.T) {
	f := newFixture(t, ModeSocket, nil)
	f.p.deps.Dialer = netguard.New(nil).Dialer()
	var wg sync.WaitGroup
	_, err := f.p.dial(t.Context(), &wg)
	wg.Wait()
	if err == nil || !strings.Contains(err.Error(), netguard.ErrBlocked.Error()) {
		t.Errorf("Socket Mode dial to loopback: %v; want the guard's refusal", err)
	}
	for _, u := range []string{
		"https://files.slack.com.evil.example/f",
		"https://evilslack.com/f",
		"http://files.slack.com/f", // not https
		"https://169.254.169.254/latest/meta-data/",
		"https://user:pw@files.slack.com/f",
		"//files.slack.com/f",
		"files.slack.com/f",
	} {
		_, _, err := f.p.Fetch(t.Context(), connector.Attachment{ID: "F1", URL: u, Size: 1}, 100)
		if !errors.Is(err, connector.ErrPermanent) {
			t.Errorf("Fetch %s: %v; want refused as not Slack's", u, err)
		}
	}
}
