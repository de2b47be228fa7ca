package telegram

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"agentd/internal/connector"
)

// webhookRig runs a Platform in webhook mode behind an HTTP server that
// hands every request to ServeWebhook, as the gateway's route does.
func webhookRig(t *testing.T) (*rig, *httptest.Server) {
	t.Helper()
	var p *Platform
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { p.ServeWebhook(w, r) }))
	t.Cleanup(hook.Close)
	r := newRig(t, rigOptions{cfg: connector.Config{Mode: ModeWebhook, PublicURL: hook.URL + "/connectors/tg/webhook"}})
	p = r.p
	return r, hook
}

func TestWebhookDelivers(t *testing.T) {
	r, hook := webhookRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b := newInbox()
	b.fail = 1 // the first is not taken: Telegram posts it again
	r.run(t, b)
	if err := r.w.Wait(ctx, func() bool { u, _ := r.fake.Webhook(); return u != "" }); err != nil {
		t.Fatal(err)
	}
	url, secret := r.fake.Webhook()
	if url != hook.URL+"/connectors/tg/webhook" || secret != DefaultSecret(testToken, "tg") || len(secret) != 43 {
		t.Fatalf("webhook %q secret %q", url, secret)
	}
	r.w.SendAsUser("42", "42", "via webhook")
	first := b.next(t, ctx)
	again := b.next(t, ctx)
	if first.Key != again.Key || again.Text != "via webhook" {
		t.Fatalf("got %+v then %+v", first, again)
	}
	// Polling is refused while the webhook is set, as Telegram does.
	if err := r.p.c.call(ctx, "getUpdates", struct{}{}, nil); err == nil || !strings.Contains(err.Error(), "webhook is active") {
		t.Fatalf("getUpdates beside a webhook: %v", err)
	}
}

// Requests that try to get around the secret token or overload the route.
func TestWebhookRefuses(t *testing.T) {
	r, hook := webhookRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	body := `{"update_id":1,"message":{"message_id":1,"from":{"id":42,"first_name":"A"},"chat":{"id":42,"type":"private"},"date":1,"text":"forged"}}`
	post := func(header map[string]string, method, body string) int {
		req, _ := http.NewRequestWithContext(ctx, method, hook.URL, strings.NewReader(body))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	good := map[string]string{"X-Telegram-Bot-Api-Secret-Token": DefaultSecret(testToken, "tg")}
	if got := post(good, "POST", body); got != http.StatusServiceUnavailable {
		t.Fatalf("before Run: %d", got)
	}
	b := newInbox()
	r.run(t, b)
	if err := r.w.Wait(ctx, func() bool { u, _ := r.fake.Webhook(); return u != "" }); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		header map[string]string
		method string
		body   string
		want   int
	}{
		{"no header", nil, "POST", body, 401},
		{"empty header", map[string]string{"X-Telegram-Bot-Api-Secret-Token": ""}, "POST", body, 401},
		{"wrong header", map[string]string{"X-Telegram-Bot-Api-Secret-Token": "guess"}, "POST", body, 401},
		{"prefix of the secret", map[string]string{"X-Telegram-Bot-Api-Secret-Token": DefaultSecret(testToken, "tg")[:42]}, "POST", body, 401},
		{"the token as secret", map[string]string{"X-Telegram-Bot-Api-Secret-Token": testToken}, "POST", body, 401},
		{"huge body", good, "POST", `{"update_id":1,"x":"` + strings.Repeat("a", 2<<20) + `"}`, 413},
		{"not JSON", good, "POST", "nope", 400},
		{"GET", good, "GET", "", 405},
	}
	for _, tt := range tests {
		if got := post(tt.header, tt.method, tt.body); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
	if n := len(b.all()); n != 0 {
		t.Fatalf("%d refused requests were handed over", n)
	}
	if got := post(good, "POST", body); got != 200 {
		t.Fatalf("the right secret: %d", got)
	}
	if m := b.all(); len(m) != 1 || m[0].Text != "forged" {
		t.Fatalf("handed over %+v", m)
	}
	if strings.Contains(r.logs.String(), "guess") {
		t.Fatal("a refused header's value was logged")
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	deps := connector.PlatformDeps{HTTP: http.DefaultClient}
	for _, cfg := range []connector.Config{
		{},
		{Token: "1:a", Mode: "carrier-pigeon"},
		{Token: "1:a", Mode: ModeWebhook},
	} {
		if _, _, err := New(cfg, deps); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
	if _, _, err := New(connector.Config{Token: "1:a"}, connector.PlatformDeps{}); err == nil {
		t.Error("New without an HTTP client succeeded")
	}
}
