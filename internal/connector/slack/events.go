package slack

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Request signing (https://api.slack.com/authentication/verifying-requests-from-slack).
const (
	// maxSkew is how far a request's timestamp may be from agentd's clock:
	// an older request is a replay.
	maxSkew = 5 * time.Minute
	// maxBody bounds an Events API post agentd reads (Slack's are a few KiB).
	maxBody = 1 << 20
	// sigVersion is the only signature version Slack has.
	sigVersion = "v0"
)

// Errors of Verify.
var (
	ErrUnsigned  = errors.New("slack: the request is not signed")
	ErrStale     = errors.New("slack: the request's timestamp is not within 5 minutes of now")
	ErrSignature = errors.New("slack: the request's signature does not match")
)

// Sign returns the X-Slack-Signature of body sent at ts with secret:
// "v0=" + hex(HMAC-SHA256(secret, "v0:" + ts + ":" + body)).
func Sign(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(sigVersion + ":" + ts + ":"))
	m.Write(body)
	return sigVersion + "=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks that body was signed with secret at ts (the
// X-Slack-Request-Timestamp header), within maxSkew of now, with signature
// sig (the X-Slack-Signature header). The compare is constant-time.
func Verify(secret, ts, sig string, body []byte, now time.Time) error {
	if ts == "" || sig == "" || secret == "" {
		return ErrUnsigned
	}
	if err := fresh(ts, now); err != nil {
		return err
	}
	if !strings.HasPrefix(sig, sigVersion+"=") {
		return ErrSignature
	}
	if !hmac.Equal([]byte(Sign(secret, ts, body)), []byte(sig)) {
		return ErrSignature
	}
	return nil
}

// fresh checks that timestamp ts is within maxSkew of now.
func fresh(ts string, now time.Time) error {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrStale
	}
	if d := now.Sub(time.Unix(sec, 0)); d > maxSkew || d < -maxSkew {
		return ErrStale
	}
	return nil
}

// ServeWebhook takes one Events API post: it verifies the signature before
// reading anything else (401 otherwise), answers url_verification with its
// challenge, and hands an event's message to the handler, answering 200
// only after the handler returned nil (a 5xx makes Slack send it again,
// with X-Slack-Retry-Num; the message's key makes that a no-op).
func (p *Platform) ServeWebhook(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	ts, sig := r.Header.Get("X-Slack-Request-Timestamp"), r.Header.Get("X-Slack-Signature")
	if ts == "" || sig == "" {
		http.Error(w, "unsigned request", http.StatusUnauthorized)
		return
	}
	// The timestamp is checked before the body is read: a replay costs
	// nothing.
	if fresh(ts, p.deps.Now()) != nil {
		http.Error(w, "stale request", http.StatusUnauthorized)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
		return
	}
	if err := Verify(p.cfg.SigningSecret, ts, sig, body, p.deps.Now()); err != nil {
		p.log.Warn("events API post refused", "err", err)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	var cb eventCallback
	if err := json.Unmarshal(body, &cb); err != nil {
		http.Error(w, "not JSON", http.StatusBadRequest)
		return
	}
	if cb.Type == "url_verification" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, cb.Challenge)
		return
	}
	p.mu.Lock()
	h := p.handler
	p.mu.Unlock()
	if h == nil {
		// Not running (yet, or any more): Slack sends it again.
		http.Error(w, "not running", http.StatusServiceUnavailable)
		return
	}
	in, ok := p.inbound(cb)
	if !ok {
		w.WriteHeader(http.StatusOK)
		return
	}
	if err := h.Inbound(r.Context(), in); err != nil {
		p.log.Warn("inbound message not taken; Slack will send it again", "key", in.Key, "retry", r.Header.Get("X-Slack-Retry-Num"), "err", p.deps.Redact(err.Error()))
		http.Error(w, "not taken", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}
