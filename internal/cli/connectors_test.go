package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"agentd/internal/gateway"
	"agentd/internal/store"
)

// testConnectors are two connectors as GET /v1/connectors gives them: one
// connected with a failed reply and refusals, one down with an error
// whose text would retitle the terminal.
func testConnectors() []gateway.ConnectorState {
	return []gateway.ConnectorState{
		{Name: "tg-main", Platform: "telegram", Agent: "assistant", Mode: "polling", DMPolicy: "pairing", State: "connected",
			Since: at.Add(-3 * time.Hour), Bot: "@helper_bot", Queue: 2, Oldest: at.Add(-90 * time.Second), Failed: 1, PairingsPending: 2,
			Received: 120, Delivered: 117, Retried: 4, FailedTotal: 1, Edits: 310,
			Refused: map[string]uint64{"pairing": 3, "group": 5, "mention": 40}, RefusedChats: []string{"-1001234567890", "-1009876543210"}},
		{Name: "dc", Platform: "discord", Agent: "assistant", Mode: "gateway", DMPolicy: "open", State: "down", Since: at.Add(-time.Minute),
			LastError: "discord: gateway closed 4014: disallowed intents\x1b]0;pwned\x07 (enable Message Content)", LastErrorAt: at.Add(-time.Minute)},
	}
}

func testUndelivered() []gateway.OutboxInfo {
	return []gateway.OutboxInfo{{ID: 41, Connector: "tg-main", Chat: "123456789", SessionID: 9, Turn: 3, Kind: "reply", State: "failed",
		Parts: 1, Tries: 10, Error: "telegram: 403 Forbidden: bot was blocked by the user", CreatedAt: at.Add(-time.Hour), UpdatedAt: at.Add(-50 * time.Minute)}}
}

func testPairings() []gateway.PairingInfo {
	return []gateway.PairingInfo{
		{Connector: "tg-main", UserID: "555", Name: "Ann\x1b[2J", Code: "K7PQM2XD", State: "pending", CreatedAt: at.Add(-10 * time.Minute), ExpiresAt: at.Add(50 * time.Minute)},
		{Connector: "tg-main", UserID: "556", Code: "Q3RST4VW", State: "pending", CreatedAt: at.Add(-2 * time.Hour), ExpiresAt: at.Add(-time.Hour)},
		{Connector: "dc", UserID: "80351110224678912", Name: "Bo", Code: "ABCD1234", State: "approved", CreatedAt: at.Add(-5 * time.Hour),
			ExpiresAt: at.Add(-4 * time.Hour), DecidedAt: at.Add(-4*time.Hour - 30*time.Minute), DecidedBy: "user:cli"},
	}
}

func TestWriteConnectorsGolden(t *testing.T) {
	for _, tt := range []struct {
		name string
		list []gateway.ConnectorState
	}{{"list.golden", testConnectors()}, {"none.golden", nil}} {
		var b bytes.Buffer
		if err := writeConnectors(&b, tt.list); err != nil {
			t.Fatal(err)
		}
		goldenIn(t, "connectors", tt.name, b.Bytes())
	}
	for _, tt := range []struct {
		name string
		d    gateway.ConnectorDetail
	}{
		{"status.golden", gateway.ConnectorDetail{ConnectorState: testConnectors()[0], Undelivered: testUndelivered()}},
		{"status-down.golden", gateway.ConnectorDetail{ConnectorState: testConnectors()[1]}},
	} {
		var b bytes.Buffer
		if err := writeConnectorStatus(&b, tt.d, at); err != nil {
			t.Fatal(err)
		}
		goldenIn(t, "connectors", tt.name, b.Bytes())
	}
}

func TestWritePairingsGolden(t *testing.T) {
	for _, tt := range []struct {
		name string
		list []gateway.PairingInfo
		all  bool
	}{
		{"pending.golden", testPairings()[:2], false},
		{"all.golden", testPairings(), true},
		{"none.golden", nil, false},
	} {
		var b bytes.Buffer
		if err := writePairings(&b, tt.list, tt.all, at); err != nil {
			t.Fatal(err)
		}
		goldenIn(t, "pairing", tt.name, b.Bytes())
	}
}

func TestWriteSessionsDelivery(t *testing.T) {
	var b bytes.Buffer
	list := []gateway.SessionInfo{{Address: "assistant/tg-main:123", State: "idle", LastSeq: 40, UpdatedAt: at, Undelivered: 2, Title: "hello"},
		{Address: "assistant/main", State: "idle", LastSeq: 3, UpdatedAt: at}}
	if err := writeSessions(&b, list); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[0], "DELIVERY") || !strings.Contains(squeeze(lines[1]), "2 failed hello") || !strings.Contains(squeeze(lines[2]), " - ") {
		t.Errorf("agentd sessions printed\n%s\nwant a DELIVERY column: 2 failed, then -", b.String())
	}
}

// cmdConnectors is what the connectors' and pairing's commands reach
// through the API: what they were asked.
type cmdConnectors struct {
	mu    sync.Mutex
	asked []string
}

func (f *cmdConnectors) ask(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, fmt.Sprintf(format, args...))
}

func (f *cmdConnectors) List(context.Context) []gateway.ConnectorState { return testConnectors() }

func (f *cmdConnectors) Get(_ context.Context, name string) (gateway.ConnectorState, bool) {
	for _, c := range testConnectors() {
		if c.Name == name {
			return c, true
		}
	}
	return gateway.ConnectorState{}, false
}

func (f *cmdConnectors) Webhook(string) (http.Handler, bool) { return nil, false }

func (f *cmdConnectors) Retry(_ context.Context, conn string, id int64, dismiss bool) (store.OutboxItem, error) {
	f.ask("retry %s %d %v", conn, id, dismiss)
	if id != 41 {
		return store.OutboxItem{}, fmt.Errorf("retry: %w", store.ErrNotFound)
	}
	state := store.OutPending
	if dismiss {
		state = store.OutFailed
	}
	return store.OutboxItem{ID: 41, Connector: conn, State: state, Acked: true}, nil
}

func (f *cmdConnectors) ListPairings(_ context.Context, conn, state string) ([]store.Pairing, error) {
	f.ask("list %q %q", conn, state)
	return []store.Pairing{{Connector: "tg-main", UserID: "555", Name: "Ann", Code: "K7PQM2XD", State: "pending", ExpiresAt: time.Now().Add(time.Hour)}}, nil
}

func (f *cmdConnectors) DecidePairing(_ context.Context, code string, approve bool, by string) (store.Pairing, error) {
	f.ask("decide %s %v %s", code, approve, by)
	if code != "K7PQ-M2XD" {
		return store.Pairing{}, fmt.Errorf("decide: %w", store.ErrNotFound)
	}
	return store.Pairing{Connector: "tg-main", UserID: "555", Name: "Ann", Code: "K7PQM2XD", State: "approved"}, nil
}

func (f *cmdConnectors) RevokePairing(_ context.Context, conn, user string) error {
	f.ask("revoke %s %s", conn, user)
	return nil
}

// TestConnectorsCommands runs agentd connectors and agentd pairing
// against an API with connectors, over HTTP as against a remote gateway.
func TestConnectorsCommands(t *testing.T) {
	f := &cmdConnectors{}
	ts := httptest.NewServer(gateway.New(&gateway.Options{Connectors: f, Pairings: f}))
	defer ts.Close()
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		e := &env{ctx: t.Context(), stdout: &out, stderr: &out}
		cmd := e.connectorsCmd()
		if args[0] == "pairing" {
			cmd, args = e.pairingCmd(), args[1:]
		}
		cmd.SetArgs(append(args, "--remote", ts.URL, "--token", "token"))
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		err := cmd.ExecuteContext(t.Context())
		return out.String(), err
	}
	for _, tt := range []struct {
		args  []string
		says  []string
		asked string
		code  int // the exit code, 0 for none
	}{
		{[]string{"list"}, []string{"NAME PLATFORM AGENT MODE STATE QUEUE FAILED LAST ERROR", "tg-main telegram assistant polling connected 2 1 -", "^[]0;pwned^"}, "", 0},
		{[]string{"list", "--json"}, []string{`{"name":"tg-main","platform":"telegram"`, `"refused":{"group":5,"mention":40,"pairing":3}`}, "", 0},
		{[]string{"status", "tg-main"}, []string{"connector tg-main (telegram, polling) for agent assistant", "bot @helper_bot"}, "", 0},
		{[]string{"status", "nope"}, []string{"no connector nope"}, "", ExitNotFound},
		{[]string{"retry", "tg-main", "41"}, []string{"reply 41 of tg-main is pending again"}, "retry tg-main 41 false", 0},
		{[]string{"retry", "tg-main", "41", "--dismiss"}, []string{"dismissed reply 41 of tg-main"}, "retry tg-main 41 true", 0},
		{[]string{"retry", "tg-main", "40"}, []string{"connector tg-main has no failed delivery 40"}, "retry tg-main 40 false", ExitNotFound},
		{[]string{"retry", "tg-main", "x"}, []string{`OUTBOX-ID "x" is not an outbox id`}, "", ExitUsage},
		{[]string{"pairing", "list"}, []string{"CODE CONNECTOR USER NAME EXPIRES", "K7PQ-M2XD tg-main 555 Ann in "}, `list "" "pending"`, 0},
		{[]string{"pairing", "list", "--all", "--connector", "tg-main"}, []string{"STATE"}, `list "tg-main" ""`, 0},
		{[]string{"pairing", "approve", "K7PQ-M2XD"}, []string{"approved K7PQ-M2XD: Ann (555) may talk to tg-main's agent now"}, "decide K7PQ-M2XD true user:socket", 0},
		{[]string{"pairing", "deny", "ZZZZ"}, []string{"no pending pairing code"}, "decide ZZZZ false user:socket", ExitNotFound},
		{[]string{"pairing", "revoke", "tg-main", "555"}, []string{"revoked 555's pairing on tg-main"}, "revoke tg-main 555", 0},
	} {
		f.asked = nil
		out, err := run(tt.args...)
		code := 0
		if err != nil {
			code = exitCode(err)
		}
		if code != tt.code {
			t.Errorf("agentd connectors %q: exit %d (%v), want %d\n%s", tt.args, code, err, tt.code, out)
		}
		if err != nil {
			out += err.Error()
		}
		for _, s := range tt.says {
			if !strings.Contains(squeeze(out), squeeze(s)) {
				t.Errorf("agentd connectors %q printed\n%s\nwant it to say %q", tt.args, out, s)
			}
		}
		if got := strings.Join(f.asked, " "); got != tt.asked {
			t.Errorf("agentd connectors %q asked %q, want %q", tt.args, got, tt.asked)
		}
	}
}
