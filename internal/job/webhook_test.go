package job_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/job"
	"agentd/internal/secret"
	"agentd/internal/store"
)

// hookEnv has the job "gh" with a webhook whose secret is HOOK_SECRET,
// "plain" without one, and "paused" removed (as a paused job is).
func hookEnv(t *testing.T) *env {
	t.Helper()
	env := map[string]string{"HOOK_SECRET": "s3cret"}
	e := newEnv(t, &job.Options{Secrets: secret.NewResolver("", &secret.Options{LookupEnv: func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}})})
	e.put(t, "gh", `{"agent":"assistant","concurrency":"allow","prompt":"event {{payload.action}}: {{payload}}","triggers":[{"webhook":{"secret_env":"HOOK_SECRET"}}]}`)
	e.put(t, "plain", `{"agent":"assistant","prompt":"hi"}`)
	e.put(t, "paused", `{"agent":"assistant","prompt":"hi","triggers":[{"webhook":{"secret_env":"HOOK_SECRET"}}]}`)
	if err := e.r.Deactivate(context.Background(), "paused"); err != nil {
		t.Fatal(err)
	}
	return e
}

// signed is a request signed under key at now.
func signed(key, body, delivery string, now time.Time) job.Hook {
	ts := strconv.FormatInt(now.Unix(), 10)
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte(ts + "." + body))
	return job.Hook{Timestamp: ts, Signature: "sha256=" + hex.EncodeToString(m.Sum(nil)), Delivery: delivery, Body: []byte(body)}
}

// TestHookRefusals: each way a webhook request is refused, by the
// sentinel the gateway maps to its status (a job that takes no webhooks
// as a wrong signature); none of them records a run.
func TestHookRefusals(t *testing.T) {
	e := hookEnv(t)
	now := time.Now()
	body := `{"action":"opened"}`
	tampered := signed("s3cret", body, "d1", now)
	tampered.Body = []byte(`{"action":"closed"}`)
	upper := signed("s3cret", body, "", now)
	upper.Signature = strings.ToUpper(upper.Signature)
	hexUpper := signed("s3cret", body, "", now)
	hexUpper.Signature = "sha256=" + strings.ToUpper(hexUpper.Signature[7:])
	for _, tc := range []struct {
		name, job string
		h         job.Hook
		want      error
	}{
		{"wrong secret", "gh", signed("guess", body, "d1", now), job.ErrBadSignature},
		{"tampered body", "gh", tampered, job.ErrBadSignature},
		{"old timestamp", "gh", signed("s3cret", body, "d1", now.Add(-job.HookWindow-time.Minute)), job.ErrBadSignature},
		{"future timestamp", "gh", signed("s3cret", body, "d1", now.Add(job.HookWindow+time.Minute)), job.ErrBadSignature},
		{"no signature", "gh", job.Hook{Timestamp: strconv.FormatInt(now.Unix(), 10), Body: []byte(body)}, job.ErrBadSignature},
		{"no timestamp", "gh", job.Hook{Signature: signed("s3cret", body, "", now).Signature, Body: []byte(body)}, job.ErrBadSignature},
		{"prefix in upper case", "gh", upper, job.ErrBadSignature},
		{"long delivery id", "gh", signed("s3cret", body, strings.Repeat("x", job.MaxDeliveryID+1), now), job.ErrBadSignature},
		{"delivery id not text", "gh", signed("s3cret", body, "d\xff1", now), job.ErrBadSignature},
		{"hex in upper case", "gh", hexUpper, job.ErrBadSignature},
		{"unknown job", "nope", signed("s3cret", body, "d1", now), job.ErrBadSignature},
		{"job without a webhook", "plain", signed("s3cret", body, "d1", now), job.ErrBadSignature},
		{"paused job", "paused", signed("s3cret", body, "d1", now), job.ErrBadSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.r.Hook(context.Background(), tc.job, tc.h)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Hook: %v, want %v", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "opened") {
				t.Fatalf("error %q tells the secret or the body", err)
			}
		})
	}
	for _, name := range []string{"gh", "plain", "paused"} {
		if runs, _ := e.k.Store.JobRuns(context.Background(), name, "", 0); len(runs) != 0 {
			t.Fatalf("%s has runs %+v", name, runs)
		}
	}
}

// TestHookRunsOncePerDelivery: a signed request runs the job with its
// body as the payload; the same delivery again — re-signed later, or by
// a new Runner over the same store (a restart) — is ErrDelivered with
// the first run, and so is the same request (its MAC) under another
// delivery id or none.
func TestHookRunsOncePerDelivery(t *testing.T) {
	e := hookEnv(t)
	ctx := context.Background()
	body := `{"action":"opened","number":7}`
	now := time.Now() // the first request's second, which the same request below repeats
	first, err := e.r.Hook(ctx, "gh", signed("s3cret", body, "d1", now))
	if err != nil {
		t.Fatal(err)
	}
	if first.Trigger != store.TriggerWebhook || first.Status != store.RunRunning || first.Turn == 0 {
		t.Fatalf("run %+v", first)
	}
	end, err := e.k.Runtime.Wait(ctx, first.Turn)
	if err != nil {
		t.Fatal(err)
	}
	if want := "re: event opened: " + body; end.Reply != want {
		t.Fatalf("reply %q, want %q", end.Reply, want)
	}
	jr, err := e.k.Store.JobRun(ctx, "gh", first.Run)
	if err != nil || string(jr.Payload) != body {
		t.Fatalf("stored run %+v, %v: want the body as its payload", jr, err)
	}
	again := signed("s3cret", body, "d1", time.Now().Add(time.Minute))
	if res, err := e.r.Hook(ctx, "gh", again); !errors.Is(err, job.ErrDelivered) || res.Run != first.Run {
		t.Fatalf("replay: %+v, %v; want ErrDelivered with run %s", res, err, first.Run)
	}
	r2 := job.New(e.k.Runtime, e.k.Store, nil, &job.Options{Secrets: secret.NewResolver("", &secret.Options{
		LookupEnv: func(string) (string, bool) { return "s3cret", true }})})
	defer r2.Close()
	if err := r2.Activate(ctx, &store.Extension{Type: "job", Name: "gh", Spec: json.RawMessage(`{"agent":"assistant","prompt":"p","triggers":[{"webhook":{"secret":"${env:X}"}}]}`)}); err != nil {
		t.Fatal(err)
	}
	if res, err := r2.Hook(ctx, "gh", again); !errors.Is(err, job.ErrDelivered) || res.Run != first.Run {
		t.Fatalf("replay after a restart: %+v, %v; want ErrDelivered with run %s", res, err, first.Run)
	}
	if res, err := e.r.Hook(ctx, "gh", signed("s3cret", body, "d2", now)); !errors.Is(err, job.ErrDelivered) || res.Run != first.Run {
		t.Fatalf("the same request (the same second, the same MAC) as a new delivery: %+v, %v; want ErrDelivered with run %s", res, err, first.Run)
	}
	if _, err := e.r.Hook(ctx, "gh", signed("s3cret", `{"action":"closed","number":7}`, "d2", time.Now())); err != nil {
		t.Fatalf("a new delivery: %v", err)
	}
	text := signed("s3cret", "plain text", "", time.Now())
	if _, err := e.r.Hook(ctx, "gh", text); err != nil {
		t.Fatalf("a text body: %v", err)
	}
	if _, err := e.r.Hook(ctx, "gh", text); !errors.Is(err, job.ErrDelivered) {
		t.Fatalf("the same request without a delivery id again: %v, want ErrDelivered", err)
	}
	if runs, _ := e.k.Store.JobRuns(ctx, "gh", "", 0); len(runs) != 3 {
		t.Fatalf("%d runs, want 3", len(runs))
	}
}

// TestHookSkippedDeliveryMaySendAgain: a delivery a skip job skipped (a
// run of it open) is not taken: sent again once the job is free, it runs.
func TestHookSkippedDeliveryMaySendAgain(t *testing.T) {
	e := hookEnv(t)
	ctx := context.Background()
	e.put(t, "gh", `{"agent":"assistant","prompt":"p","triggers":[{"webhook":{"secret_env":"HOOK_SECRET"}}]}`)
	if _, _, err := e.k.Store.StartRun(ctx, store.JobRun{Job: "gh", Run: store.RunID(time.Now().Add(-time.Hour), "open"),
		ScheduledAt: time.Now().Add(-time.Hour), Trigger: store.TriggerManual, Session: "assistant/x", Status: store.RunRunning}); err != nil {
		t.Fatal(err)
	}
	h := signed("s3cret", `{}`, "d1", time.Now())
	if res, err := e.r.Hook(ctx, "gh", h); !errors.Is(err, job.ErrRunning) || res.Status != store.RunSkipped {
		t.Fatalf("while a run is open: %+v, %v; want a skipped run and ErrRunning", res, err)
	}
	runs, _ := e.k.Store.JobRuns(ctx, "gh", "", 0)
	if _, err := e.k.Store.FinishRun(ctx, store.JobRun{Job: "gh", Run: runs[len(runs)-1].Run, Status: store.RunDone}); err != nil {
		t.Fatal(err)
	}
	if res, err := e.r.Hook(ctx, "gh", h); err != nil || res.Status != store.RunRunning {
		t.Fatalf("sent again: %+v, %v; want it run", res, err)
	}
}

// TestSignatureOfTheShape: Sign is HMAC-SHA256 of "<timestamp>.<body>",
// as openssl computes it (docs/jobs.md).
func TestSignatureOfTheShape(t *testing.T) {
	// printf '1700000000.{}' | openssl dgst -sha256 -hmac s3cret
	const want = "sha256=97926816e98fbb41ccb1673225ff29a2f35369099990e1b1561651e7bd097ebf"
	if got := job.Sign([]byte("s3cret"), "1700000000", []byte("{}")); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

// FuzzParseSignature: ParseSignature takes exactly "sha256=" and 64 hex
// digits, as encoding/hex decodes them and in lower case, as it encodes
// them (one spelling per MAC), and nothing else.
func FuzzParseSignature(f *testing.F) {
	f.Add("sha256=97926816e98fbb41ccb1673225ff29a2f35369099990e1b1561651e7bd097ebf")
	f.Add("sha256=")
	f.Add("sha1=abc")
	f.Add("SHA256=97926816E98FBB41CCB1673225FF29A2F35369099990E1B1561651E7BD097EBF")
	f.Add("sha256=97926816E98FBB41CCB1673225FF29A2F35369099990E1B1561651E7BD097EBF")
	f.Add("sha256=97926816e98fbb41ccb1673225ff29a2f35369099990e1b1561651e7bd097ebF")
	f.Fuzz(func(t *testing.T, h string) {
		mac, err := job.ParseSignature(h)
		hexMAC, prefixed := strings.CutPrefix(h, "sha256=")
		want, herr := hex.DecodeString(hexMAC)
		ok := prefixed && herr == nil && len(want) == sha256.Size && hex.EncodeToString(want) == hexMAC
		if (err == nil) != ok {
			t.Fatalf("ParseSignature(%q): %v; encoding/hex says ok=%v", h, err, ok)
		}
		if err != nil {
			if !errors.Is(err, job.ErrBadSignature) {
				t.Fatalf("error %v is not ErrBadSignature", err)
			}
			return
		}
		if !hmac.Equal(mac, want) || "sha256="+hex.EncodeToString(mac) != h {
			t.Fatalf("ParseSignature(%q) = %x", h, mac)
		}
	})
}

// TestHookRunRecovered: a webhook run recorded but not submitted (agentd
// stopped between) is submitted by the next Runner's Recover with its
// body, as the history kept it, as the payload: JSON, and text.
func TestHookRunRecovered(t *testing.T) {
	e := hookEnv(t)
	ctx := context.Background()
	secrets := secret.NewResolver("", &secret.Options{LookupEnv: func(string) (string, bool) { return "s3cret", true }})
	crash := job.New(e.k.Runtime, e.k.Store, nil, &job.Options{Secrets: secrets,
		BeforeSubmit: func(store.JobRun) error { return errors.New("crash") }})
	spec := json.RawMessage(`{"agent":"assistant","concurrency":"allow","prompt":"got {{payload}} ref={{payload.ref}}","triggers":[{"webhook":{"secret_env":"HOOK_SECRET"}}]}`)
	if err := crash.Activate(ctx, &store.Extension{Type: "job", Name: "gh", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{`{"ref":"main"}`, "plain text"} {
		if _, err := crash.Hook(ctx, "gh", signed("s3cret", body, body, time.Now())); err == nil {
			t.Fatal("the run went on past the crash")
		}
	}
	crash.Close()
	r2 := job.New(e.k.Runtime, e.k.Store, nil, &job.Options{Secrets: secrets})
	t.Cleanup(r2.Close)
	if err := r2.Activate(ctx, &store.Extension{Type: "job", Name: "gh", Spec: spec}); err != nil {
		t.Fatal(err)
	}
	if n, err := r2.Recover(ctx); err != nil || n != 2 {
		t.Fatalf("Recover = %d, %v; want 2", n, err)
	}
	want := map[string]bool{`re: got {"ref":"main"} ref=main`: true, "re: got plain text ref=": true}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		runs, _ := e.k.Store.JobRuns(ctx, "gh", "", 0)
		got := map[string]bool{}
		for _, jr := range runs {
			if jr.Status == store.RunDone {
				got[jr.Output] = true
			}
		}
		if len(got) == 2 {
			if !cmp.Equal(got, want) {
				t.Fatalf("outputs %v, want %v", got, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runs %+v", runs)
		}
	}
}
