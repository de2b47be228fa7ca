package sqlite

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"agentd/internal/event"
	"agentd/internal/store"
)

// SQLite counts its memory only in a process that asked before opening a
// database; the test runs that process as a child of its own.
func TestMemoryStatus(t *testing.T) {
	if os.Getenv("AGENTD_TEST_MEMSTATUS") == "1" {
		memoryStatusChild(t)
		return
	}
	st, err := Open(t.Context(), filepath.Join(t.TempDir(), "a.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if now, high := MemoryUsed(); now != 0 || high != 0 {
		t.Errorf("memory counted without asking: %d, %d", now, high)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryStatus$", "-test.v")
	cmd.Env = append(os.Environ(), "AGENTD_TEST_MEMSTATUS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

func memoryStatusChild(t *testing.T) {
	if err := EnableMemoryStatus(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := Open(ctx, filepath.Join(t.TempDir(), "a.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sess, _, err := st.Session(ctx, "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(ctx, &store.Batch{Session: sess.ID, Events: []event.Event{event.New(sess.ID, 1, event.Input, event.InputData{Text: "hi"})}}); err != nil {
		t.Fatal(err)
	}
	now, high := MemoryUsed()
	t.Logf("SQLite holds %d bytes (at most %d)", now, high)
	if now <= 0 || high < now {
		t.Errorf("MemoryUsed() = %d, %d with a database open", now, high)
	}
	if err := EnableMemoryStatus(); err == nil {
		t.Error("EnableMemoryStatus after a database was opened: no error")
	}
}
