//go:build conattack

package telegram

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"agentd/internal/connector"
)

// Hole: the webhook secret derived from the token (no webhook_secret_env)
// is redacted nowhere: the platform's redact knows the token, the
// connector's (PlatformDeps.Redact) the resolved references only, and
// instance.derived, meant for it, is never set. A Bot API server (a
// self-hosted one, a proxy) that quotes the request in its refusal puts
// the secret in the error the connector shows in /readyz, GET
// /v1/connectors, agentd connectors status and the log: whoever reads it
// can post forged updates to the public webhook.
func TestAttackDerivedWebhookSecretInErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":false,"error_code":400,"description":"Bad Request: bad webhook: `+strings.ReplaceAll(string(body), `"`, `'`)+`"}`)
	}))
	t.Cleanup(srv.Close)
	p, _, err := New(connector.Config{Name: "tg", Token: testToken, APIURL: srv.URL, Mode: ModeWebhook, PublicURL: "https://example.com/connectors/tg/webhook"},
		connector.PlatformDeps{HTTP: srv.Client(), Redact: func(s string) string { return strings.ReplaceAll(s, testToken, "${env:TG_TOKEN}") }})
	if err != nil {
		t.Fatal(err)
	}
	err = p.(*Platform).setWebhook(t.Context())
	secret := DefaultSecret(testToken, "tg")
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("setWebhook's error shows the derived webhook secret: %v", err)
	}
}
