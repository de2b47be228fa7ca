package app

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"agentd/internal/event"
	"agentd/internal/model/fakellm"
	"agentd/internal/store"
)

// TestJobFireOnceAcrossARestart: agentd stops between a scheduled fire's
// record and its input; at the next start the scheduler's recovery runs
// it: once (one run, one input, one model call), and done.
func TestJobFireOnceAcrossARestart(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(counting(&calls, fakellm.New(nil, nil)))
	defer srv.Close()
	dir := t.TempDir()
	at := time.Now().Add(-5 * time.Second).UTC().Format(time.RFC3339)
	for name, content := range map[string]string{
		"agents/assistant.yaml": "name: A\nmodel:\n  provider: openai\n  name: fake\n  base_url: " + srv.URL + "/v1\n",
		"extensions/job/once.yaml": "type: job\nname: once\nspec:\n  agent: assistant\n  prompt: \"fired at {{fired_at}}\"\n" +
			"  triggers: [{at: \"" + at + "\"}]\n",
	} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	start := func(hook func(store.JobRun) error) *App {
		a, err := Open(ctx, dir, &Options{JobBeforeSubmit: hook})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Start(ctx); err != nil {
			t.Fatal(err)
		}
		a.ScheduleJobs()
		return a
	}
	waitRun := func(a *App, ok func(store.JobRun) bool) store.JobRun {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			jr, err := a.Store.LastRun(ctx, "once")
			if err == nil && ok(jr) {
				return jr
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %+v (%v)", jr, err)
			}
		}
	}

	stopped := make(chan struct{})
	a := start(func(store.JobRun) error {
		close(stopped)
		return errors.New("stopped here")
	})
	<-stopped
	jr := waitRun(a, func(jr store.JobRun) bool { return jr.Status == store.RunRunning })
	a.Close(ctx)
	if calls.Load() != 0 {
		t.Fatalf("%d model calls before the restart", calls.Load())
	}

	a = start(nil)
	defer a.Close(ctx)
	got := waitRun(a, func(jr store.JobRun) bool { return !jr.EndedAt.IsZero() })
	if got.Run != jr.Run || got.Status != store.RunDone || got.Output == "" {
		t.Fatalf("after the restart: %+v, want run %s done", got, jr.Run)
	}
	runs, err := a.Store.JobRuns(ctx, "once", "", 0)
	if err != nil || len(runs) != 1 {
		t.Fatalf("%d runs (%v), want 1", len(runs), err)
	}
	_, evs, err := a.Runtime.Events(ctx, got.Session, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	inputs := 0
	for _, ev := range evs {
		if ev.Kind == event.Input {
			inputs++
		}
	}
	if inputs != 1 || calls.Load() != 1 {
		t.Fatalf("%d inputs and %d model calls, want 1 and 1", inputs, calls.Load())
	}
}

// counting is h, counting the model calls (chat completions) in n.
func counting(n *atomic.Int64, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			n.Add(1)
		}
		h.ServeHTTP(w, r)
	})
}
