package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"agentd/internal/connector/chatfake"
	"agentd/internal/connector/telegram/telegramfake"
	"agentd/internal/gateway"
)

// A Telegram connector through agentd serve, as its owner meets it from
// the command line and over HTTP, against a fake Bot API: agentd
// connectors list and status show it connected, a stranger's message
// gets a pairing code that agentd pairing list shows, agentd pairing
// approve lets them in (they are told so, and their next message is
// answered), /readyz lists the connector, /metrics counts it, and the
// bot's token shows nowhere.
func TestConnectorsCLIThroughTheDaemon(t *testing.T) {
	w := chatfake.New(nil)
	const token = "424242:SECRET-bot-token-value"
	tg := telegramfake.New(&telegramfake.Options{World: w, Token: token})
	ctx, cancel := context.WithCancel(context.Background())
	api, err := tg.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); tg.Close() })
	w.AddUser(chatfake.User{ID: "5551", Name: "Ann"})
	w.AddChat(chatfake.Chat{ID: "5551", Kind: chatfake.DM})

	dir := dataDir(t, map[string]string{
		"agentd.yaml":           "connectors:\n  allow_networks: [127.0.0.1/32]\n",
		"agents/assistant.yaml": "type: user\n" + openaiAgent(fake(t, "match .\nsay got: {{last_user}}\n"), ""),
		"extensions/integration/tg-main.yaml": "type: integration\nname: tg-main\nspec:\n  platform: telegram\n  token_env: TG_TOKEN\n" +
			"  api_url: " + api + "\n  agent: assistant\n",
	})
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	d := serveArgs(t, dir, []string{"--listen", addr}, "TG_TOKEN="+token)

	waitCLI(t, dir, []string{"connectors", "list"}, regexp.MustCompile(`tg-main\s+telegram\s+assistant\s+polling\s+connected\s+0\s+0\s+-`))
	if r := run(t, dir, "connectors", "status", "tg-main"); r.code != 0 || !strings.Contains(r.stdout, "dm policy") || !strings.Contains(r.stdout, "pairing") {
		t.Errorf("agentd connectors status: %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// A stranger writes: a code, nothing else, and nothing submitted.
	w.SendAsUser("5551", "5551", "hello there")
	code := waitBotSays(t, w, "5551", regexp.MustCompile(`agentd pairing approve ([0-9A-Z]{4}-[0-9A-Z]{4})`))
	r := run(t, dir, "pairing", "list")
	if r.code != 0 || !strings.Contains(r.stdout, code) || !strings.Contains(r.stdout, "Ann") {
		t.Fatalf("agentd pairing list: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, dir, "pairing", "approve", strings.ToLower(strings.ReplaceAll(code, "-", ""))); r.code != 0 || !strings.Contains(r.stdout, "approved "+code) {
		t.Fatalf("agentd pairing approve: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	waitBotSays(t, w, "5551", regexp.MustCompile(`You can talk to me now`))
	if r := run(t, dir, "pairing", "list"); !strings.Contains(r.stdout, "no pending pairing codes") {
		t.Errorf("agentd pairing list after the approval:\n%s", r.stdout)
	}
	if r := run(t, dir, "pairing", "approve", code); r.code != 3 {
		t.Errorf("approving the code again: exit %d, want 3 (not found)\n%s%s", r.code, r.stdout, r.stderr)
	}
	w.SendAsUser("5551", "5551", "what time is it")
	waitBotSays(t, w, "5551", regexp.MustCompile(`got: what time is it`))

	// Over HTTP: /readyz lists it, /metrics counts it.
	tok := strings.TrimSpace(run(t, dir, "token").stdout)
	get := func(path string) string {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	var ready gateway.ReadyResponse
	if err := json.Unmarshal([]byte(get("/readyz")), &ready); err != nil || len(ready.Connectors) != 1 || ready.Connectors[0].State != "connected" {
		t.Errorf("/readyz: %+v %v", ready, err)
	}
	metrics := get("/metrics")
	for _, want := range []string{`agentd_connector_up{connector="tg-main"} 1`, `agentd_connector_received_total{connector="tg-main",platform="telegram"} `,
		`agentd_connector_refused_total{connector="tg-main",reason="pairing"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s:\n%s", want, grepLines(metrics, "agentd_connector_"))
		}
	}
	for what, text := range map[string]string{"connectors list --json": run(t, dir, "connectors", "list", "--json").stdout,
		"connectors status": run(t, dir, "connectors", "status", "tg-main", "--json").stdout, "readyz": get("/readyz"), "metrics": metrics,
		"the daemon's output": d.out.String()} {
		if strings.Contains(text, "SECRET-bot-token-value") {
			t.Errorf("%s shows the bot's token", what)
		}
	}
}

// waitCLI runs agentd args until its output matches re (20 s at most).
func waitCLI(t *testing.T, dir string, args []string, re *regexp.Regexp) {
	t.Helper()
	var r result
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if r = run(t, dir, args...); re.MatchString(r.stdout) {
			return
		}
	}
	t.Fatalf("agentd %s never said %s; last:\n%s%s", strings.Join(args, " "), re, r.stdout, r.stderr)
}

// waitBotSays waits for a message of the bot in chat matching re and
// returns its first group (or the whole match).
func waitBotSays(t *testing.T, w *chatfake.World, chat string, re *regexp.Regexp) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	err := w.Wait(ctx, func() bool {
		for _, m := range w.Messages(chat) {
			if got = re.FindStringSubmatch(m.Text()); got != nil {
				return true
			}
		}
		return false
	})
	if err != nil {
		var said []string
		for _, m := range w.Messages(chat) {
			said = append(said, m.Text())
		}
		t.Fatalf("the bot never said %s in chat %s; it said %q", re, chat, said)
	}
	return got[len(got)-1]
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
