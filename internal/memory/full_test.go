package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
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

// A memory database closed on a disk that then fills up opens again and
// recalls what it holds: opening writes nothing (its write-ahead log and
// index were kept when it closed).
func TestOpenOnAFullDisk(t *testing.T) {
	dir := smallDisk(t, 8<<20)
	path := filepath.Join(dir, "memory.db")
	ctx := context.Background()
	s, err := Open(ctx, path, &Options{Embedder: hashed()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remember(ctx, "a", Remember{Insight: "the deploy key rotates on Mondays"}, Provenance{}); err != nil {
		t.Fatal(err)
	}
	drain(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	fill(t, dir)
	s, err = Open(ctx, path, &Options{Embedder: hashed()})
	if err != nil {
		t.Fatalf("open on a full disk: %v", err)
	}
	defer s.Close()
	res, err := s.Recall(ctx, Query{Scope: "a", Text: "deploy key"})
	if err != nil || len(res.Items) != 1 {
		t.Errorf("recall on a full disk: %+v, %v", res, err)
	}
}
