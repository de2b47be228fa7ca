package telegram

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"agentd/internal/connector"
	"agentd/internal/connector/chatfake"
	"agentd/internal/connector/telegram/telegramfake"
	"agentd/internal/netguard"
)

// An api_url on this machine (or the cloud metadata address) is not
// reached without the allowlist: every Bot API call and every file
// download dial through the SSRF guard the connector is given, and the
// refusal names no token.
func TestAttackAPIURLOnLoopback(t *testing.T) {
	w := chatfake.New(nil)
	fake := telegramfake.New(&telegramfake.Options{World: w, Token: testToken})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	t.Cleanup(fake.Close)
	g := netguard.New(nil)
	for _, api := range []string{srv.URL, "http://169.254.169.254"} {
		p, _, err := New(connector.Config{Name: "tg", Token: testToken, APIURL: api},
			connector.PlatformDeps{HTTP: g.Client(0), Dialer: g.Dialer()})
		if err != nil {
			t.Fatal(err)
		}
		tp := p.(*Platform)
		err = tp.c.call(t.Context(), "getMe", struct{}{}, nil)
		if !errors.Is(err, netguard.ErrBlocked) {
			t.Errorf("getMe at %s: %v; want the guard's refusal", api, err)
		}
		_, _, ferr := tp.Fetch(t.Context(), connector.Attachment{ID: "f", Size: 1}, 100)
		if !errors.Is(ferr, netguard.ErrBlocked) {
			t.Errorf("Fetch at %s: %v; want the guard's refusal", api, ferr)
		}
		for _, e := range []error{err, ferr} {
			if e != nil && strings.Contains(e.Error(), testToken) {
				t.Errorf("the token is in %q", e)
			}
		}
	}
	if n := w.Count("getMe"); n != 0 {
		t.Errorf("the loopback Bot API was called %d times", n)
	}
}
