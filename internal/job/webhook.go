package job

// The webhook trigger: POST /hooks/{name}, signed with the job's own
// secret rather than the gateway's token, so a third-party service can
// call it. A request carries
//
//	X-Agentd-Timestamp: <Unix seconds>
//	X-Agentd-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>">
//
// and a delivery id. Hook checks all of it and runs the job with the body
// as its payload. A job takes each delivery id once (a sender's
// redelivery, signed again, runs once) and each MAC once, whatever
// delivery id comes with it (a captured request sent again runs once).
// A job that does not take webhooks is refused as a wrong signature
// is, after the same work, so that a caller without the secret cannot
// tell which jobs exist.

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"agentd/internal/secret"
	"agentd/internal/store"
)

// Webhook errors. Every refusal of Hook wraps one of these or
// ErrRunning; their text never holds the secret or the body.
var (
	// ErrBadSignature: a webhook request's signature or timestamp is
	// missing, malformed, wrong, or outside HookWindow, or its job does
	// not take webhooks (unknown, paused, without a webhook trigger or
	// its secret); the text says which, for the log.
	ErrBadSignature = errors.New("bad webhook signature")
	// ErrDelivered: a webhook delivery id or request (its MAC) was taken
	// before by the job; the error names the first run.
	ErrDelivered = errors.New("webhook delivery already taken")
)

// HookWindow is how far a webhook request's timestamp may be from now,
// either way.
const HookWindow = 5 * time.Minute

// MaxDeliveryID bounds a webhook delivery id, in bytes.
const MaxDeliveryID = store.MaxRunDelivery

// Hook is one webhook request, as the gateway read it.
type Hook struct {
	Timestamp string // X-Agentd-Timestamp
	Signature string // X-Agentd-Signature
	// Delivery is the delivery id (X-Agentd-Delivery or
	// X-GitHub-Delivery), "" for none: the signature's MAC is taken once
	// with or without one.
	Delivery string
	Body     []byte
	// Now is the time the timestamp is checked against (zero: now).
	Now time.Time
}

// SecretResolver fills a ${secret:NAME} or ${env:NAME} reference
// (*secret.Resolver).
type SecretResolver interface {
	Expand(s string) (string, []secret.Value, error)
}

// ParseSignature returns the MAC of a signature header,
// "sha256=<64 hex digits>" in lower case, as Sign writes it: one MAC has
// one spelling, so that a request cannot be sent again as another.
func ParseSignature(h string) ([]byte, error) {
	hexMAC, ok := strings.CutPrefix(h, "sha256=")
	if !ok {
		return nil, fmt.Errorf("%w: want sha256=<hex>", ErrBadSignature)
	}
	if len(hexMAC) != 2*sha256.Size {
		return nil, fmt.Errorf("%w: want %d hex digits", ErrBadSignature, 2*sha256.Size)
	}
	mac, err := hex.DecodeString(hexMAC)
	if err != nil || hex.EncodeToString(mac) != hexMAC {
		return nil, fmt.Errorf("%w: want lowercase hex digits", ErrBadSignature)
	}
	return mac, nil
}

// Sign returns the signature header of body sent at timestamp ts (Unix
// seconds) under secret.
func Sign(secret []byte, ts string, body []byte) string {
	return "sha256=" + hex.EncodeToString(hookMAC(secret, ts, body))
}

// hookMAC is the MAC of body sent at ts under secret.
func hookMAC(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks h's timestamp (within HookWindow of h.Now) and its
// signature under secret, comparing in constant time.
func (h *Hook) Verify(secret []byte) error {
	mac, err := h.parse()
	if err != nil {
		return err
	}
	return h.match(mac, secret)
}

// parse checks what of h does not depend on its job — its timestamp,
// within HookWindow of h.Now, and its signature's form — and returns
// the signature's MAC.
func (h *Hook) parse() ([]byte, error) {
	now := h.Now
	if now.IsZero() {
		now = time.Now()
	}
	sec, err := strconv.ParseInt(h.Timestamp, 10, 64)
	if err != nil || h.Timestamp != strconv.FormatInt(sec, 10) {
		return nil, fmt.Errorf("%w: the timestamp is not Unix seconds", ErrBadSignature)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > HookWindow || d < -HookWindow {
		return nil, fmt.Errorf("%w: the timestamp is more than %s away from now", ErrBadSignature, HookWindow)
	}
	return ParseSignature(h.Signature)
}

// match compares mac with h's MAC under secret, in constant time.
func (h *Hook) match(mac, secret []byte) error {
	if !hmac.Equal(mac, hookMAC(secret, h.Timestamp, h.Body)) {
		return fmt.Errorf("%w: the signature does not match", ErrBadSignature)
	}
	return nil
}

// noHookKey is what a request to a job that takes no webhooks is
// checked against, so that it costs what a real check does; its answer
// is not looked at.
const noHookKey = "agentd: no webhook here"

// Hook runs the job name for a webhook request: the request signed
// under the job's webhook trigger's secret within HookWindow (else
// ErrBadSignature: also, after the same HMAC, for a job that is not
// active or has no webhook trigger or secret set), its delivery id and
// its MAC new to the job (else ErrDelivered, with the first run). It
// returns once the run's input is accepted, as Run does.
func (r *Runner) Hook(ctx context.Context, name string, h Hook) (Result, error) {
	if store.CheckDelivery(h.Delivery) != nil {
		return Result{}, fmt.Errorf("%w: a delivery id is text of at most %d bytes", ErrBadSignature, MaxDeliveryID)
	}
	mac, err := h.parse()
	if err != nil {
		return Result{}, err
	}
	secrets, why := r.hookSecrets(name)
	if why != "" {
		_ = h.match(mac, []byte(noHookKey))
		return Result{}, fmt.Errorf("%w: job %s %s", ErrBadSignature, name, why)
	}
	for _, s := range secrets {
		if err = h.match(mac, s); err == nil {
			break
		}
	}
	if err != nil {
		return Result{}, err
	}
	return r.Run(ctx, name, Fire{Trigger: store.TriggerWebhook, Body: h.Body, Delivery: h.Delivery,
		MAC: hex.EncodeToString(mac)}, false)
}

// hookSecrets returns the secrets of the job's webhook triggers, or why
// it has none: it is not active, has no webhook trigger, or none of
// their secrets is set (logged).
func (r *Runner) hookSecrets(name string) (secrets [][]byte, why string) {
	s, ok := r.Job(name)
	var out [][]byte
	hooks := 0
	for _, t := range s.Triggers {
		if t.Webhook == nil {
			continue
		}
		hooks++
		ref := t.Webhook.Secret
		if t.Webhook.SecretEnv != "" {
			ref = "${env:" + t.Webhook.SecretEnv + "}"
		}
		v, _, err := r.secrets.Expand(ref)
		if err != nil || v == "" {
			r.log.Warn("job webhook secret not set", "job", name, "secret", ref)
			continue
		}
		out = append(out, []byte(v))
	}
	switch {
	case !ok:
		return nil, "is not an active job"
	case hooks == 0:
		return nil, "has no webhook trigger"
	case len(out) == 0:
		return nil, "has no webhook secret set"
	}
	return out, ""
}

// deliveryTag is the run id tag of a webhook delivery: a hash, so that
// any delivery id makes a short, safe one, the same every time.
func deliveryTag(delivery string) string {
	sum := sha256.Sum256([]byte(delivery))
	return "hook-" + hex.EncodeToString(sum[:8])
}

// delivered returns the job's run of the delivery id or of the MAC
// (each "" for none), nil if it has none: a skipped run (which records
// neither, see take) does not count, so a request the job's concurrency
// skipped may be sent again.
func (r *Runner) delivered(ctx context.Context, name, delivery, mac string) (*store.JobRun, error) {
	for _, k := range []struct {
		key  string
		find func(ctx context.Context, job, key string) (store.JobRun, error)
	}{{delivery, r.runs.DeliveryRun}, {mac, r.runs.MACRun}} {
		if k.key == "" {
			continue
		}
		jr, err := k.find(ctx, name, k.key)
		if err == nil {
			return &jr, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("job %s: run of delivery: %w", name, err)
		}
	}
	return nil, nil
}

// bodyPayload is a webhook body as a run's payload: the JSON as sent,
// or a text as a JSON string.
func bodyPayload(body []byte) json.RawMessage {
	if json.Valid(body) {
		return body
	}
	b, _ := json.Marshal(string(body))
	return b
}

// storedBody is a webhook body again from its run's payload, as the
// history kept it (bodyPayload; compact, and replaced if over
// store.MaxRunPayload): a recovered run's.
func storedBody(p json.RawMessage) []byte {
	var text string
	if json.Unmarshal(p, &text) == nil {
		return []byte(text)
	}
	if p == nil {
		return []byte{}
	}
	return p
}

// bodyField is the top-level field k of a JSON object body (a string as
// it is, anything else as JSON), "" for none.
func bodyField(body []byte, k string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	v, ok := m[k]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}
