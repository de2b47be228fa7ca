package runtime_test

import (
	"bytes"
	goruntime "runtime"
	"testing"
	"time"
)

// held reports whether a session worker waits for the turns to be let go
// (Runtime.Hold).
func held() bool {
	buf := make([]byte, 1<<20)
	n := goruntime.Stack(buf, true)
	return bytes.Contains(buf[:n], []byte("agentd/internal/runtime.(*turnGate).wait("))
}

// While the turns are held an input is accepted and its turn waits; it
// starts once every holder has let go, or once the hold's bound has
// passed without one.
func TestHoldKeepsTurnsUntilReleased(t *testing.T) {
	e := newEnv(t, setup{})
	defer e.close()
	e.start()

	first := e.rt.Hold(waitLimit)
	second := e.rt.Hold(waitLimit)
	rc := e.submit("a/held", "hello")
	eventually(t, "the turn waiting for the hold", held)
	first()
	first() // letting go twice counts once
	if n := e.p.Calls(); n != 0 {
		t.Fatalf("%d model calls while the turns are held, want 0", n)
	}
	if !held() {
		t.Fatal("the turn started while a second holder still holds the turns")
	}
	second()
	if end := e.wait(rc.Turn); end.Status != "done" {
		t.Fatalf("turn ended %q, want done", end.Status)
	}
	if n := e.p.Calls(); n != 1 {
		t.Errorf("%d model calls after the hold, want 1", n)
	}

	// Never let go: the bound lets the turn start.
	e.rt.Hold(time.Millisecond)
	rc = e.submit("a/bounded", "hello")
	if end := e.wait(rc.Turn); end.Status != "done" {
		t.Fatalf("turn ended %q, want done", end.Status)
	}
}
