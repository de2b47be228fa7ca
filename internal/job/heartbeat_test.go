package job_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"agentd/internal/event"
	"agentd/internal/extension"
	"agentd/internal/job"
	"agentd/internal/store"
	"agentd/internal/testkit"
)

func TestQuietHours(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	q, err := job.ParseQuietHours("22:00-07:00", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at   time.Time
		want bool
	}{
		{time.Date(2026, 11, 26, 21, 59, 0, 0, berlin), false},
		{time.Date(2026, 11, 26, 22, 0, 0, 0, berlin), true},
		{time.Date(2026, 11, 27, 3, 0, 0, 0, berlin), true},
		{time.Date(2026, 11, 27, 6, 59, 59, 0, berlin), true},
		{time.Date(2026, 11, 27, 7, 0, 0, 0, berlin), false},
		{time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC), false},
		{time.Date(2026, 11, 26, 21, 30, 0, 0, time.UTC), true}, // 22:30 in Berlin
	} {
		if got := q.In(c.at); got != c.want {
			t.Errorf("In(%v) = %v, want %v", c.at, got, c.want)
		}
	}
	for _, bad := range []string{"22:00", "25:00-07:00", "07:00-07:00", "7-8"} {
		if _, err := job.ParseQuietHours(bad, ""); err == nil {
			t.Errorf("ParseQuietHours(%q) accepted", bad)
		}
	}
	if _, err := job.ParseQuietHours("22:00-07:00", "Mars/Base"); err == nil {
		t.Error("an unknown zone accepted")
	}
}

// TestSchedulerHeartbeat: a day of a 30-minute heartbeat with quiet
// hours 22:00-07:00 in Berlin fires at each half hour outside them, as
// a heartbeat, and its next fire after 21:30 is 07:00.
func TestSchedulerHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		berlin, _ := time.LoadLocation("Europe/Berlin")
		start := time.Date(2026, 11, 26, 12, 0, 0, 0, berlin)
		time.Sleep(time.Until(start))
		f := newFires()
		_, s, _ := scheduler(t, f, map[string]string{
			"hb": `{"agent":"assistant","triggers":[{"heartbeat":{"every":"30m","prompt":"anything?","quiet_hours":"22:00-07:00","tz":"Europe/Berlin"}}]}`})
		synctest.Wait()
		time.Sleep(time.Until(time.Date(2026, 11, 26, 21, 45, 0, 0, berlin)))
		synctest.Wait()
		if next := s.Next()["hb"]; !next.Equal(time.Date(2026, 11, 27, 7, 0, 0, 0, berlin)) {
			t.Fatalf("next fire after 21:45: %v", next.In(berlin))
		}
		time.Sleep(time.Until(start.AddDate(0, 0, 1)))
		synctest.Wait()
		var want []time.Time
		for at := start; !at.After(start.AddDate(0, 0, 1)); at = at.Add(30 * time.Minute) {
			if h := at.In(berlin).Hour(); h >= 7 && h < 22 {
				want = append(want, at)
			}
		}
		got := f.of("hb")
		if len(got) != len(want) {
			t.Fatalf("%d fires, want %d: %v", len(got), len(want), got)
		}
		for i := range want {
			if !got[i].Equal(want[i]) {
				t.Fatalf("fire %d at %v, want %v", i, got[i].In(berlin), want[i].In(berlin))
			}
		}
		if tr := f.triggers["hb"]; tr != store.TriggerHeartbeat {
			t.Fatalf("fired as %q", tr)
		}
	})
}

// heartbeatEnv is a Runner whose model answers HEARTBEAT_OK to "all
// quiet?" and raises an alarm otherwise.
func heartbeatEnv(t *testing.T, dir string) (*testkit.Kit, *job.Runner) {
	k := testkit.New(t, &testkit.Options{Script: "match all quiet\nsay HEARTBEAT_OK\nmatch .\nsay alarm: {{last_user}}\n"})
	r := job.New(k.Runtime, k.Store, testkit.Agents{"assistant": testkit.Agent("assistant")}, &job.Options{Dir: dir})
	t.Cleanup(r.Close)
	return k, r
}

// TestHeartbeatRuns: a heartbeat runs in the agent's main session with
// the prompt of its file, read at each fire; an answer HEARTBEAT_OK is a
// quiet run, delivered nowhere; another answer is delivered.
func TestHeartbeatRuns(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, job.Workspace, "assistant", "HEARTBEAT.md")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("all quiet?"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, r := heartbeatEnv(t, dir)
	e := &env{k: k, r: r}
	e.put(t, "hb", `{"agent":"assistant","triggers":[{"heartbeat":{"every":"30m","prompt_file":"HEARTBEAT.md"}}],"deliver":{"session":"assistant/inbox"}}`)
	ctx := context.Background()
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	if err := r.Fire(ctx, "hb", store.TriggerHeartbeat, at); err != nil {
		t.Fatal(err)
	}
	first := waitJobRun(t, k.Store, "hb", ended)
	res := job.ResultOf(first)
	if !res.Quiet || res.Status != store.RunDone || res.Session != "assistant/main" || res.Run != store.RunID(at, "heartbeat") {
		t.Fatalf("quiet heartbeat %+v", res)
	}
	// Its turn is in the main session's log, its input marked as a
	// heartbeat's: the log keeps what the model's context leaves out.
	main, err := k.Store.SessionByAddress(ctx, "assistant", "main")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := k.Store.Events(ctx, main.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var in event.InputData
	var end event.TurnEndData
	if len(evs) < 2 || evs[0].Kind != event.Input || evs[0].Decode(&in) != nil || evs[len(evs)-1].Decode(&end) != nil ||
		!in.Heartbeat() || in.Origin != "job:hb" || !strings.HasPrefix(in.Text, "all quiet?") || end.Reply != job.HeartbeatOK {
		t.Fatalf("the main session's log: %+v", evs)
	}
	if err := os.WriteFile(file, []byte("the disk is full"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Fire(ctx, "hb", store.TriggerHeartbeat, at.Add(30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	second := waitJobRun(t, k.Store, "hb", func(jr store.JobRun) bool { return ended(jr) && jr.Run != first.Run })
	if res := job.ResultOf(second); res.Quiet || res.Session != "assistant/main" ||
		res.Output != "alarm: the disk is full\n\nIf nothing needs attention, answer exactly HEARTBEAT_OK and nothing else." {
		t.Fatalf("heartbeat %+v", res)
	}
	// Only the second is delivered.
	waitInbox := time.Now().Add(30 * time.Second)
	for {
		var evs []event.Event
		if sess, err := k.Store.SessionByAddress(ctx, "assistant", "inbox"); err == nil {
			if evs, err = k.Store.Events(ctx, sess.ID, 0, 0); err != nil {
				t.Fatal(err)
			}
		}
		if n := countSystem(evs); n > 0 {
			if n != 1 || countText(evs, "alarm: the disk is full") == 0 {
				t.Fatalf("delivered: %+v", evs)
			}
			break
		}
		if time.Now().After(waitInbox) {
			t.Fatalf("no delivery: %+v", evs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The same fire again is taken once.
	if err := r.Fire(ctx, "hb", store.TriggerHeartbeat, at); err != nil {
		t.Fatal(err)
	}
	if runs, _ := k.Store.JobRuns(ctx, "hb", "", 0); len(runs) != 2 {
		t.Fatalf("runs %+v", runs)
	}
}

// countText counts the events whose data holds text.
func countText(evs []event.Event, text string) int {
	n := 0
	for _, e := range evs {
		if strings.Contains(string(e.Data), text) {
			n++
		}
	}
	return n
}

// countSystem counts the system messages among evs.
func countSystem(evs []event.Event) int {
	n := 0
	for _, e := range evs {
		if e.Kind == event.SystemMessage {
			n++
		}
	}
	return n
}

// TestPromptFileStaysInTheWorkspace: a heartbeat's prompt_file is read
// from the agent's workspace only; a path out of it — absolute, "..", a
// symbolic link — is refused when the row is saved, so no row puts the
// data directory's keys or another file into a model's prompt.
func TestPromptFileStaysInTheWorkspace(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, job.Workspace, "assistant")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "identity.key")
	for name, body := range map[string]string{secret: "PRIVATE", filepath.Join(ws, "HEARTBEAT.md"): "ok?"} {
		if err := os.WriteFile(name, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(secret, filepath.Join(ws, "link.md")); err != nil {
		t.Fatal(err)
	}
	r := job.New(nil, nil, testkit.Agents{"assistant": testkit.Agent("assistant")}, &job.Options{Dir: dir})
	defer r.Close()
	for file, refused := range map[string]bool{
		"HEARTBEAT.md": false, "../../identity.key": true, secret: true, "link.md": true, "../assistant/HEARTBEAT.md": true,
	} {
		spec, _ := json.Marshal(map[string]any{"agent": "assistant",
			"triggers": []any{map[string]any{"heartbeat": map[string]any{"every": "30m", "prompt_file": file}}}})
		errs := r.Check(context.Background(), &extension.Doc{Type: "job", Name: "hb", Spec: spec})
		if (len(errs) > 0) != refused {
			t.Errorf("prompt_file %s: refused %v, want %v (%v)", file, len(errs) > 0, refused, errs)
		}
		for _, e := range errs {
			if e.Pointer != "/spec/triggers/0/heartbeat/prompt_file" || strings.Contains(e.Message, "PRIVATE") {
				t.Errorf("prompt_file %s: %v", file, e)
			}
		}
	}
}
