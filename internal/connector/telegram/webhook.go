package telegram

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// maxWebhookBody bounds one update posted to the webhook.
const maxWebhookBody = 1 << 20

// setWebhook asks Telegram to post updates to the public URL with the
// secret token (https://core.telegram.org/bots/api#setwebhook).
func (p *Platform) setWebhook(ctx context.Context) error {
	return p.c.call(ctx, "setWebhook", map[string]any{
		"url": p.public, "secret_token": p.secret, "allowed_updates": []string{"message"}, "max_connections": 10,
	}, nil)
}

// ServeWebhook takes one update Telegram posts. It checks the
// X-Telegram-Bot-Api-Secret-Token header in constant time (401 otherwise,
// logged without the header's value), reads at most 1 MiB, and answers
// 200 only once the handler took the message (durable): any other answer
// makes Telegram post it again. Before Run is ready it answers 503.
func (p *Platform) ServeWebhook(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	got := r.Header.Get("X-Telegram-Bot-Api-Secret-Token")
	if p.secret == "" || subtle.ConstantTimeCompare([]byte(got), []byte(p.secret)) != 1 {
		p.log.Warn("telegram: webhook call refused: wrong secret token", "connector", p.name, "remote", r.RemoteAddr, "header", got != "")
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	var u update
	if err := json.Unmarshal(body, &u); err != nil {
		http.Error(w, "not an update", http.StatusBadRequest)
		return
	}
	p.mu.Lock()
	h := p.h
	p.mu.Unlock()
	if h == nil {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	if err := p.take(r.Context(), h, u); err != nil {
		p.log.Warn("telegram: an update was not taken; Telegram posts it again", "connector", p.name, "update", u.UpdateID, "err", p.c.redact(err.Error()))
		http.Error(w, "not taken", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}
