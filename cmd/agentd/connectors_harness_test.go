package main

// The harness of the chat connectors' tests through the binary
// (connectors_telegram_test.go, and the other platforms'): a platform's
// fake runs in the test process over a chatfake.World, `agentd serve`
// runs as a child with the bot token in its environment only, the
// connector's row is put with `agentd ext put`, and the test speaks as
// people through the World and waits on it (no sleeps).

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"agentd/internal/connector/chatfake"
	"agentd/internal/gateway"
	"agentd/internal/store"
)

// chatScript is the fakellm script of the connectors' agent: a story
// streams slowly enough to be seen in edits; anything else is echoed.
const chatScript = `match (?i)story
say Once upon a time there was a small daemon that answered every message it got, and it lived happily ever after.
chunks 8
gap 400ms

match *
say You said: {{last_user}}
`

// connRig is a connector's world: the platform's fake, a data directory
// with an agent "assistant" (type user) on fakellm, and the daemon.
type connRig struct {
	w     *chatfake.World
	api   string // the fake's URL
	dir   string
	d     *daemon
	env   []string // the daemon's extra environment (the token)
	token string
	addr  string // the daemon's TCP listen address ("" the socket only)
}

// newConnRig serves h (a platform fake over w) on loopback and makes the
// data directory; the connectors may dial 127.0.0.1.
func newConnRig(t *testing.T, w *chatfake.World, h http.Handler, tokenEnv, token string) *connRig {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = w.ConnState
	srv.Start()
	t.Cleanup(srv.Close)
	model := fake(t, chatScript)
	dir := dataDir(t, map[string]string{
		"agents/assistant.yaml": openaiAgent(model, "type: user\n"),
		"agentd.yaml":           "connectors:\n  allow_networks: [\"127.0.0.1/32\"]\n",
	})
	return &connRig{w: w, api: srv.URL, dir: dir, env: []string{tokenEnv + "=" + token}, token: token}
}

// serve starts the daemon (on TCP too when listen).
func (r *connRig) serve(t *testing.T, listen bool) {
	t.Helper()
	flags := []string{"--listen", "off"}
	if listen {
		r.addr = "127.0.0.1:" + itoa(int64(freePort(t)))
		flags = []string{"--listen", r.addr}
	}
	r.d = serveArgs(t, r.dir, flags, r.env...)
}

// put puts a row (YAML) through the daemon.
func (r *connRig) put(t *testing.T, row string) {
	t.Helper()
	if got := runInput(t, r.dir, nil, row, "ext", "put", "-"); got.code != 0 {
		t.Fatalf("ext put: exit %d\n%s%s\n%s", got.code, got.stdout, got.stderr, row)
	}
}

// wait waits until pred holds of the World, at most a minute.
func (r *connRig) wait(t *testing.T, what string, pred func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.w.Wait(ctx, pred); err != nil {
		var out string
		if r.d != nil {
			out = r.d.out.String()
		}
		t.Fatalf("waited for %s: %v\nthe bot's messages: %+v\nthe daemon:\n%s", what, err, r.w.Messages(""), out)
	}
}

// said waits for a bot message in chat whose current text (read by
// reader: the text a person sees) satisfies ok, and returns it.
func (r *connRig) said(t *testing.T, chat, what string, reader func(string) string, ok func(string) bool) chatfake.Message {
	t.Helper()
	var got chatfake.Message
	r.wait(t, what, func() bool {
		for _, m := range r.w.Messages(chat) {
			if ok(reader(m.Text())) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// approve approves a pairing code with agentd pairing approve; where the
// binary has no pairing command, the daemon stops, the code is approved
// in its store, and it starts again.
func (r *connRig) approve(t *testing.T, code string) {
	t.Helper()
	res := run(t, r.dir, "pairing", "approve", code)
	if res.code == 0 {
		return
	}
	if !strings.Contains(res.stderr, "unknown command") {
		t.Fatalf("agentd pairing approve %s: exit %d\n%s%s", code, res.code, res.stdout, res.stderr)
	}
	r.d.stop(t)
	st, ok := openDataStore(t, r.dir).(store.ConnectorStore)
	if !ok {
		t.Fatal("the store keeps no pairings")
	}
	if _, err := st.DecidePairing(context.Background(), strings.ReplaceAll(code, "-", ""), store.PairApproved, "test", time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	st.(interface{ Close() error }).Close()
	r.serve(t, r.addr != "")
}

var pairingCodeRE = regexp.MustCompile(`\b[0-9A-Z]{4}-[0-9A-Z]{4}\b`)

// pairingCode is the code in a bot's pairing message.
func pairingCode(t *testing.T, text string) string {
	t.Helper()
	code := pairingCodeRE.FindString(text)
	if code == "" {
		t.Fatalf("no pairing code in %q", text)
	}
	return code
}

// noSecret fails if the token is in the daemon's output, in any file of
// the data directory, or in any session's log.
func (r *connRig) noSecret(t *testing.T) {
	t.Helper()
	if r.d != nil && strings.Contains(r.d.out.String(), r.token) {
		t.Error("the token is in the daemon's output")
	}
	filepath.WalkDir(r.dir, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() || e.Type()&os.ModeSocket != 0 {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), r.token) {
			t.Errorf("the token is in %s", p)
		}
		return nil
	})
	var list []gateway.SessionInfo
	decodeOut(t, okRun(t, r.dir, "sessions", "--json"), &list)
	for _, s := range list {
		if l := run(t, r.dir, "log", "--json", s.Address); strings.Contains(l.stdout+l.stderr, r.token) {
			t.Errorf("the token is in the log of %s", s.Address)
		}
	}
}

// httpPost posts JSON to url and returns the answer's status.
func httpPost(url, body string) (int, error) {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
