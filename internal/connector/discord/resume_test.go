package discord

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/connector"
	"agentd/internal/connector/discord/discordfake"
)

// resumeRecorder is a recorder with the connector.Resumer ability, its
// point kept in memory as the connector core keeps it on disk.
type resumeRecorder struct {
	*recorder
	mu    sync.Mutex
	point []byte
}

func (h *resumeRecorder) ResumePoint(context.Context) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.point, nil
}

func (h *resumeRecorder) SaveResumePoint(_ context.Context, b []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.point = b
	return nil
}

func (h *resumeRecorder) get() resumePoint {
	h.mu.Lock()
	defer h.mu.Unlock()
	var rp resumePoint
	_ = json.Unmarshal(h.point, &rp)
	return rp
}

func TestRestartResumesFromSavedPoint(t *testing.T) {
	r := newRig(t, nil, nil)
	h := &resumeRecorder{recorder: r.h}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.p.Run(ctx, h) }()
	r.wait("connected", r.fake.Connected)
	r.fake.SendAsUser(discordfake.UserMessage{Channel: "300", Author: alice, Content: "one"})
	r.h.waitFor(t, 1)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	saved := h.get()
	if saved.SessionID == "" || saved.ResumeURL == "" || saved.Seq == 0 {
		t.Fatalf("saved point = %+v", saved)
	}

	// Sent while no agentd runs: a new process with a fresh handler
	// (only the saved point survives) RESUMEs and Discord replays them.
	r.fake.SendAsUser(discordfake.UserMessage{Channel: "300", Author: alice, Content: "two"})
	r.fake.SendAsUser(discordfake.UserMessage{Channel: "300", Author: alice, Content: "three"})
	h2 := &resumeRecorder{recorder: newRecorder(), point: h.point}
	p, err := newPlatform(r.cfg, r.p.deps)
	if err != nil {
		t.Fatal(err)
	}
	r.p = p
	r.run(h2)
	h2.waitFor(t, 2)
	if d := cmp.Diff([]string{"two", "three"}, h2.texts()); d != "" {
		t.Errorf("texts after the restart (-want +got):\n%s", d)
	}
	if r.fake.Identifies() != 1 || r.fake.Resumes() != 1 {
		t.Errorf("identifies %d resumes %d, want 1 and 1", r.fake.Identifies(), r.fake.Resumes())
	}
	if got := h2.get(); got.SessionID != saved.SessionID || got.Seq <= saved.Seq {
		t.Errorf("point after the replay = %+v, saved before %+v", got, saved)
	}
}

func TestRestartWithInvalidPointIdentifies(t *testing.T) {
	r := newRig(t, nil, nil)
	gone, _ := json.Marshal(resumePoint{SessionID: "gone", ResumeURL: r.fake.GatewayURL(), Seq: 7})
	h := &resumeRecorder{recorder: r.h, point: gone}
	r.run(h)
	r.wait("connected", r.fake.Connected)
	r.fake.SendAsUser(discordfake.UserMessage{Channel: "300", Author: alice, Content: "hello"})
	r.h.waitFor(t, 1)
	if r.fake.Identifies() != 1 {
		t.Errorf("identifies = %d, want 1 after the unknown session", r.fake.Identifies())
	}
	if got := h.get(); got.SessionID == "gone" {
		t.Errorf("point still the invalid one: %+v", got)
	}
}

// failingCatchup is a resumeRecorder whose catch-up cannot read.
type failingCatchup struct{ *resumeRecorder }

func (failingCatchup) LastInbound(context.Context) ([]connector.Inbound, error) {
	return nil, context.DeadlineExceeded
}

// A new session's point is not saved before its catch-up finished: a
// restart then would resume past the messages no catch-up read.
func TestNoResumePointBeforeCatchup(t *testing.T) {
	r := newRig(t, nil, nil)
	h := &resumeRecorder{recorder: r.h}
	r.run(failingCatchup{h})
	r.wait("a resume after the failed catch-up", func() bool { return r.fake.Resumes() >= 1 })
	if got := h.get(); got != (resumePoint{}) {
		t.Errorf("saved point = %+v before any catch-up finished", got)
	}
}
