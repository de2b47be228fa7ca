package sqlite_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"agentd/internal/event"
	"agentd/internal/store"
)

// smallDisk mounts a tmpfs of size bytes on a new directory, or skips the
// test when it cannot (it needs root).
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("skipping: cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fill writes dir/filler until no byte more fits.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, n := range []int{1 << 20, 4 << 10, 1} {
		for buf := make([]byte, n); ; {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
}

// On a full disk the store opens and reads; a write fails with
// store.ErrFull, writing nothing, and Writable says so; once space is
// freed, Writable is nil and the same write succeeds.
func TestFullDisk(t *testing.T) {
	dir := smallDisk(t, 8<<20)
	path := filepath.Join(dir, "agentd.db")
	s := openStore(t, path)
	sess := mustSession(t, s, "a", "k")
	mustCommit(t, s, &store.Batch{Session: sess.ID, Events: []event.Event{event.New(sess.ID, 1, event.Input, event.InputData{Text: "before"})}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	fill(t, dir)
	s = openStore(t, path)
	ctx := t.Context()
	if evs, err := s.Events(ctx, sess.ID, 0, 0); err != nil || len(evs) != 1 {
		t.Fatalf("read on a full disk: %d events, %v", len(evs), err)
	}
	if err := s.Writable(ctx); !errors.Is(err, store.ErrFull) {
		t.Errorf("Writable on a full disk: %v, want ErrFull", err)
	}
	big := strings.Repeat("x", 64<<10)
	b := &store.Batch{Session: sess.ID, Events: []event.Event{event.New(sess.ID, 2, event.Input, event.InputData{Text: big})}}
	if err := s.Commit(ctx, b); !errors.Is(err, store.ErrFull) {
		t.Fatalf("Commit on a full disk: %v, want ErrFull", err)
	}
	if _, _, err := s.Session(ctx, "a", "new"); !errors.Is(err, store.ErrFull) {
		t.Errorf("a new session on a full disk: %v, want ErrFull", err)
	}
	if evs, _ := s.Events(ctx, sess.ID, 0, 0); len(evs) != 1 {
		t.Errorf("a failed write left %d events", len(evs))
	}

	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	if err := s.Writable(ctx); err != nil {
		t.Errorf("Writable once space is freed: %v", err)
	}
	b = &store.Batch{Session: sess.ID, Events: []event.Event{event.New(sess.ID, 2, event.Input, event.InputData{Text: big})}}
	mustCommit(t, s, b)
	if evs, _ := s.Events(ctx, sess.ID, 0, 0); len(evs) != 2 || evs[1].Seq != 2 {
		t.Errorf("after freeing space: %d events", len(evs))
	}
}
