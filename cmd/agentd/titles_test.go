package main

import (
	"strings"
	"testing"

	"agentd/internal/gateway"
	"agentd/internal/store"
	"agentd/internal/title"
)

// A session is named after its first message, in process and through the
// daemon; agentd serve then asks a real model once, after the first reply,
// for a better title, and never the echo model. agentd sessions shows the
// titles.
func TestSessionTitles(t *testing.T) {
	addr := fake(t, "match ^"+strings.TrimSpace(title.Lead)+"\nsay \"Lisbon trip planning.\"\n\nmatch *\nsay sure\n")
	dir := dataDir(t, map[string]string{
		"agents/real.yaml": openaiAgent(addr, ""),
		"agents/echo.yaml": "name: Echo\nmodel:\n  provider: echo\n",
	})
	okRun(t, dir, "send", "--session", "offline", "real", "Plan my trip to Lisbon\nin May")
	sessions := func() map[string]gateway.SessionInfo {
		var list []gateway.SessionInfo
		decodeOut(t, okRun(t, dir, "sessions", "--json"), &list)
		out := map[string]gateway.SessionInfo{}
		for _, s := range list {
			out[s.Address] = s
		}
		return out
	}
	if s := sessions()["real/offline"]; s.Title != "Plan my trip to Lisbon" || s.TitleBy != store.TitleByInput {
		t.Errorf("in process: title %q by %q; want the first message's first line (no model title without the daemon)", s.Title, s.TitleBy)
	}

	serve(t, dir)
	okRun(t, dir, "send", "--session", "k", "real", "Plan my trip to Lisbon please")
	okRun(t, dir, "send", "--session", "k", "echo", "hello there")
	waitFor(t, func() bool { return sessions()["real/k"].TitleBy == store.TitleByModel })
	got := sessions()
	if s := got["real/k"]; s.Title != "Lisbon trip planning" {
		t.Errorf("the model's title = %q", s.Title)
	}
	if s := got["echo/k"]; s.Title != "hello there" || s.TitleBy != store.TitleByInput {
		t.Errorf("echo: title %q by %q; want the first message's, never the echo model's", s.Title, s.TitleBy)
	}
	if row := strings.Join(tableRow(t, okRun(t, dir, "sessions"), "real/k"), " "); !strings.HasSuffix(row, " Lisbon trip planning") {
		t.Errorf("agentd sessions row %q does not end with the title", row)
	}
}
