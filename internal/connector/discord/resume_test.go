package discord

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/connector/discord/discordfake"
)

// resumeRecorder is a recorder with the Resumer ability, its point kept
// in memory as a store would keep it on disk.
type resumeRecorder struct {
	*recorder
	mu    sync.Mutex
	point ResumePoint
	saved bool
}

func (h *resumeRecorder) ResumePoint(context.Context) (ResumePoint, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.point, h.saved, nil
}

func (h *resumeRecorder) SaveResumePoint(_ context.Context, rp ResumePoint) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.point, h.saved = rp, true
	return nil
}

func (h *resumeRecorder) get() ResumePoint {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.point
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
	h2 := &resumeRecorder{recorder: newRecorder(), point: saved, saved: true}
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
	h := &resumeRecorder{recorder: r.h, saved: true, point: ResumePoint{
		SessionID: "gone", ResumeURL: r.fake.GatewayURL(), Seq: 7,
	}}
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
