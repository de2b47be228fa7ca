package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// agentd is the agentd binary the end-to-end bench tests run, built once
// for all of them (TestMain removes it).
var agentd struct {
	once sync.Once
	dir  string
	exe  string
	err  error
}

// agentdBinary returns the agentd binary, building it on first use; the
// test is skipped with -short.
func agentdBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds agentd")
	}
	agentd.once.Do(func() {
		if agentd.dir, agentd.err = os.MkdirTemp("", "agentd-bench-"); agentd.err != nil {
			return
		}
		agentd.exe = filepath.Join(agentd.dir, "agentd")
		build := exec.Command("go", "build", "-o", agentd.exe, "agentd/cmd/agentd")
		build.Stderr = os.Stderr
		agentd.err = build.Run()
	})
	if agentd.err != nil {
		t.Fatal(agentd.err)
	}
	return agentd.exe
}

func TestMain(m *testing.M) {
	code := m.Run()
	if agentd.dir != "" {
		os.RemoveAll(agentd.dir)
	}
	os.Exit(code)
}
