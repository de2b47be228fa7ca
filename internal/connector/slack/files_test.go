package slack

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"agentd/internal/connector"
	"agentd/internal/connector/chatfake"
)

// A shared file arrives as an attachment Fetch downloads with the bot
// token; the token goes to no other host, and a file over the cap is not
// read.
func TestFetch(t *testing.T) {
	f := newFixture(t, ModeSocket, nil)
	dm := f.fake.AddDM("U1", "Ada")
	f.run(t)
	f.connected(t)
	png := []byte("\x89PNG\r\n\x1a\nfake")
	f.fake.World().SendAsUser(dm, "U1", "look", chatfake.File{Name: "cat.png", Type: "image/png", Data: png})
	m := f.next(t)
	if len(m.Attachments) != 1 {
		t.Fatalf("attachments = %+v", m.Attachments)
	}
	a := m.Attachments[0]
	data, typ, err := f.p.Fetch(t.Context(), a, 1<<20)
	if err != nil || string(data) != string(png) || typ != "image/png" {
		t.Fatalf("Fetch = %q, %q, %v", data, typ, err)
	}
	if _, _, err := f.p.Fetch(t.Context(), a, 4); !errors.Is(err, connector.ErrTooLong) {
		t.Fatalf("Fetch over the cap = %v, want ErrTooLong", err)
	}

	// A URL elsewhere never sees the token.
	var leaked bool
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked = r.Header.Get("Authorization") != ""
	}))
	defer other.Close()
	for _, u := range []string{other.URL + "/files-pri/x/cat.png", "http://files.slack.com/x", "https://evil.example/.slack.com/x", "https://slack.com.evil.example/x", "https://u:p@files.slack.com/x"} {
		bad := a
		bad.URL = u
		if _, _, err := f.p.Fetch(t.Context(), bad, 1<<20); !errors.Is(err, connector.ErrPermanent) {
			t.Errorf("Fetch(%s) = %v, want ErrPermanent", u, err)
		}
	}
	if leaked {
		t.Fatal("the bot token was sent to another host")
	}
}
