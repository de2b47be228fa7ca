package main

// A node that loses its PostgreSQL database, through agentd serve: the
// test puts a TCP proxy between the node and the server, and cuts it.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/app"
	"agentd/internal/store/postgres/pgtest"
)

// A node whose PostgreSQL is cut off says so on /readyz (503, the store
// unreachable), refuses new messages with 503 store_unavailable and
// Retry-After instead of acknowledging what it did not store, and takes
// them again once the database is back: a message refused while cut and
// sent again with its idempotency key is logged and answered once.
func TestPostgresLost(t *testing.T) {
	t.Parallel()
	proxy, via := pgtest.NewProxy(t, pgtest.NewDB(t))
	dir := dataDir(t, nil)
	if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "agents", "a.yaml"), []byte(openaiAgent(fake(t, ""), "")), 0o600)
	env := []string{app.StoreEnv + "=" + via}
	tok := strings.TrimSpace(runEnv(t, dir, env, "token").stdout)
	auth := "Authorization: Bearer " + tok
	post := func(base, text string) httpResult {
		return request(t, "POST", base+"/v1/sessions/a/s/messages?wait=true",
			`{"text":"`+text+`","idempotency_key":"`+text+`"}`, auth)
	}
	_, base := serveListenArgs(t, dir, "127.0.0.1:0", nil, env...)
	if r := post(base, "one"); r.status != 200 {
		t.Fatalf("first message: %d %s", r.status, r.body)
	}
	if r := waitReady(t, base, tok, 200); !strings.Contains(r.body, `"reachable":true`) || !strings.Contains(r.body, `"listener":"connected"`) {
		t.Errorf("readyz: %s", r.body)
	}

	proxy.Cut()
	if r := waitReady(t, base, tok, 503); !strings.Contains(r.body, "does not answer") || !strings.Contains(r.body, `"reachable":false`) {
		t.Errorf("readyz while cut off: %s", r.body)
	}
	r := post(base, "two")
	if r.status != 503 || !strings.Contains(r.body, `"code":"store_unavailable"`) || r.header.Get("Retry-After") == "" {
		t.Errorf("a message while cut off: %d %s (Retry-After %q)", r.status, r.body, r.header.Get("Retry-After"))
	}

	proxy.Restore()
	waitReady(t, base, tok, 200)
	if r := post(base, "two"); r.status != 200 {
		t.Fatalf("the message sent again: %d %s", r.status, r.body)
	}
	log := runEnv(t, dir, env, "log", "a/s").stdout
	for _, text := range []string{"one", "two"} {
		if n := strings.Count(log, " input          "+text+"\n"); n != 1 {
			t.Errorf("%q logged %d times:\n%s", text, n, log)
		}
	}
}
