package job

// The webhook trigger: POST /hooks/{name}, signed with the job's own
// secret rather than the gateway's token, so a third-party service can
// call it. A request carries
//
//	X-Agentd-Timestamp: <Unix seconds>
//	X-Agentd-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>">
//
// and, to be taken once, a delivery id. Hook checks all of it and runs
// the job with the body as its payload.

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

// Webhook errors. Every refusal of Hook wraps one of these, ErrNotFound
// or ErrRunning; their text never holds the secret or the body.
var (
	// ErrBadSignature: a webhook request's signature or timestamp is
	// missing, malformed, wrong, or outside HookWindow.
	ErrBadSignature = errors.New("bad webhook signature")
	// ErrDelivered: a webhook delivery id (or, without one, a signature)
	// was taken before by the job; the error names the first run.
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
	// X-GitHub-Delivery); "" has the signature stand for it, so that the
	// same request sent again is still taken once.
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
// "sha256=<64 hex digits>".
func ParseSignature(h string) ([]byte, error) {
	hexMAC, ok := strings.CutPrefix(h, "sha256=")
	if !ok {
		return nil, fmt.Errorf("%w: want sha256=<hex>", ErrBadSignature)
	}
	if len(hexMAC) != 2*sha256.Size {
		return nil, fmt.Errorf("%w: want %d hex digits", ErrBadSignature, 2*sha256.Size)
	}
	mac, err := hex.DecodeString(hexMAC)
	if err != nil {
		return nil, fmt.Errorf("%w: want hex digits", ErrBadSignature)
	}
	return mac, nil
}

// Sign returns the signature header of body sent at timestamp ts (Unix
// seconds) under secret.
func Sign(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks h's timestamp (within HookWindow of h.Now) and its
// signature under secret, comparing in constant time.
func (h *Hook) Verify(secret []byte) error {
	now := h.Now
	if now.IsZero() {
		now = time.Now()
	}
	sec, err := strconv.ParseInt(h.Timestamp, 10, 64)
	if err != nil || h.Timestamp != strconv.FormatInt(sec, 10) {
		return fmt.Errorf("%w: the timestamp is not Unix seconds", ErrBadSignature)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > HookWindow || d < -HookWindow {
		return fmt.Errorf("%w: the timestamp is more than %s away from now", ErrBadSignature, HookWindow)
	}
	mac, err := ParseSignature(h.Signature)
	if err != nil {
		return err
	}
	want, _ := ParseSignature(Sign(secret, h.Timestamp, h.Body))
	if !hmac.Equal(mac, want) {
		return fmt.Errorf("%w: the signature does not match", ErrBadSignature)
	}
	return nil
}

// Hook runs the job name for a webhook request: the job must be active
// with a webhook trigger (else ErrNotFound, the same whether the job
// exists or not), the request signed under the trigger's secret within
// HookWindow (else ErrBadSignature), its delivery new to the job (else
// ErrDelivered, with the first run). It returns once the run's input is
// accepted, as Run does.
func (r *Runner) Hook(ctx context.Context, name string, h Hook) (Result, error) {
	if store.CheckDelivery(h.Delivery) != nil {
		return Result{}, fmt.Errorf("%w: a delivery id is text of at most %d bytes", ErrBadSignature, MaxDeliveryID)
	}
	secrets, err := r.hookSecrets(name)
	if err != nil {
		return Result{}, err
	}
	// Without a secret set (logged by hookSecrets), nothing matches: the
	// caller is told no more than of a wrong signature.
	err = fmt.Errorf("%w: the signature does not match", ErrBadSignature)
	for _, s := range secrets {
		if err = h.Verify(s); err == nil {
			break
		}
	}
	if err != nil {
		return Result{}, err
	}
	delivery := h.Delivery
	if delivery == "" {
		delivery = "signature:" + h.Signature
	}
	return r.Run(ctx, name, Fire{Trigger: store.TriggerWebhook, Body: h.Body, Delivery: delivery}, false)
}

// hookSecrets returns the secrets of the job's webhook triggers (those
// that are set), or ErrNotFound if it is not active or has none.
func (r *Runner) hookSecrets(name string) ([][]byte, error) {
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
	if !ok || hooks == 0 {
		return nil, fmt.Errorf("%w: no webhook %q", ErrNotFound, name)
	}
	return out, nil
}

// deliveryTag is the run id tag of a webhook delivery: a hash, so that
// any delivery id makes a short, safe one, the same every time.
func deliveryTag(delivery string) string {
	sum := sha256.Sum256([]byte(delivery))
	return "hook-" + hex.EncodeToString(sum[:8])
}

// delivered returns the job's run of the delivery, nil if it has none:
// a skipped run (which does not record its delivery, see take) does not
// count, so a delivery the job's concurrency skipped may be sent again.
func (r *Runner) delivered(ctx context.Context, name, delivery string) (*store.JobRun, error) {
	jr, err := r.runs.DeliveryRun(ctx, name, delivery)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("job %s: run of delivery: %w", name, err)
	}
	return &jr, nil
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
