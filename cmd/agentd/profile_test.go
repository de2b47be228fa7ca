package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// agentd serve --cpuprofile and --memprofile write the daemon's CPU and
// allocation profiles when it stops (gzipped, as go tool pprof reads them),
// private to their owner.
func TestServeProfiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	profs := t.TempDir()
	cpu, mem := filepath.Join(profs, "cpu.pprof"), filepath.Join(profs, "mem.pprof")
	d := serveArgs(t, dir, []string{"--listen", "off", "--cpuprofile", cpu, "--memprofile", mem})
	if r := run(t, dir, "send", "assistant", "hello"); r.code != 0 {
		t.Fatalf("send: %+v", r)
	}
	d.stop(t)
	for _, name := range []string{cpu, mem} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Errorf("%s: not a gzipped profile: % x", filepath.Base(name), b[:min(len(b), 8)])
		}
		if fi, err := os.Stat(name); err != nil {
			t.Fatal(err)
		} else if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(name), fi.Mode())
		}
	}
}
