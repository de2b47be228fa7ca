package gateway_test

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/gateway/console"
	"agentd/internal/gateway/stream"
	"agentd/internal/runtime"
	"agentd/internal/testkit"
)

// The console's Connectors screen in Chromium (test/console/connectors.spec.mjs)
// against the fake connectors and pairings, served in process with a real
// runtime, stream and console: the table shows each connector's state,
// queue, failed replies and last error, a refused group chat's id, and
// the pending code, which Approve decides; a session's log shows a reply
// that was not delivered as a red line whose Retry asks the connector.
func TestConnectorsInChromium(t *testing.T) {
	chromium, node := browserDeps(t)
	k := testkit.New(t, &testkit.Options{Agents: testAgents(), Model: testkit.NewModel()})
	ctx := t.Context()
	rc, err := k.Runtime.Submit(ctx, runtime.Input{Session: "a/tg-main:555", Text: "hello from telegram"})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, waitLimit)
	defer cancel()
	if _, err := k.Runtime.Wait(wctx, rc.Turn); err != nil {
		t.Fatal(err)
	}
	if err := k.Runtime.Record(ctx, "a/tg-main:555", event.New(0, rc.Turn, event.Delivery, event.DeliveryData{Op: event.DeliveryFailed,
		Connector: "tg", Platform: "telegram", Turn: rc.Turn, Outbox: 41, Tries: 10, Error: "telegram: 403 Forbidden: bot was blocked by the user"})); err != nil {
		t.Fatal(err)
	}
	st := stream.New(stream.Join(k.Runtime, k.Store), nil)
	t.Cleanup(func() { st.Close() })
	conns, pairs := &fakeConnectors{}, &fakePairings{}
	srv := gateway.New(&gateway.Options{Runtime: k.Runtime, Sessions: k.Store, Agents: testAgents(), Connectors: conns, Pairings: pairs,
		Ready: okReady{}, Console: console.Handler(&console.Options{}), Stream: st})
	tk, tok := authTokens(t)
	ts := httptest.NewUnstartedServer(nil)
	ts.Config.Handler = srv.Protect(&gateway.AuthOptions{Tokens: tk, Listen: ts.Listener.Addr().String(), RemoteAdmin: true})
	ts.Start()
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})

	spec, _ := filepath.Abs(filepath.Join("..", "..", "test", "console", "connectors.spec.mjs"))
	env := []string{"URL=" + ts.URL, "TOKEN=" + tok, "CHROMIUM=" + chromium, "FAILURE_DIR=" + t.TempDir(), "SESSION=a/tg-main:555"}
	if d := os.Getenv("AGENTD_SCREENSHOTS"); d != "" && d != "1" {
		env = append(env, "SCREENSHOT_DIR="+d)
	}
	cctx, ccancel := context.WithTimeout(ctx, 3*time.Minute)
	defer ccancel()
	cmd := exec.CommandContext(cctx, node, spec)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		t.Log(line)
	}
	if err != nil || !strings.Contains(string(out), " passed, 0 failed") {
		t.Fatalf("connectors.spec.mjs: %v", err)
	}
	if asked := conns.took(); !slices.Contains(asked, "retry tg 41 false") {
		t.Errorf("the connectors were asked %q, want the retry of outbox 41", asked)
	}
	if asked := pairs.took(); !slices.Contains(asked, "decide K7PQM2XD true user:console") {
		t.Errorf("pairing was asked %q, want the approval of K7PQM2XD by the console", asked)
	}
}
