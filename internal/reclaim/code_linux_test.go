package reclaim

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// dropCode unmaps the executable's resident pages: what the process holds
// of files falls, and the code runs on (its pages come back as needed).
func TestDropCode(t *testing.T) {
	before := codeResident()
	if before == 0 {
		t.Fatal("no file pages resident: /proc/self/statm unread")
	}
	if n := dropCode(); n < 2 {
		t.Fatalf("dropCode advised %d mappings, want the executable's code and read-only data", n)
	}
	if after := codeResident(); after >= before {
		t.Errorf("%d bytes of files resident after dropCode, %d before", after, before)
	}
	if n := dropCode(); n < 2 { // it still runs, from pages mapped again
		t.Errorf("dropCode again advised %d mappings", n)
	}
}

func TestReadOnlyMapping(t *testing.T) {
	for _, c := range []struct {
		line   string
		lo, hi uintptr
		ok     bool
	}{
		{"00400000-00eba000 r-xp 00000000 fe:00 42 /usr/bin/agentd", 0x400000, 0xeba000, true},
		{"00eba000-01b73000 r--p 00aba000 fe:00 42 /usr/bin/agentd (deleted)", 0xeba000, 0x1b73000, true},
		{"01b73000-01c20000 rw-p 01773000 fe:00 42 /usr/bin/agentd", 0, 0, false},  // written: never
		{"7f00-8f00 r--s 00000000 fe:00 42 /usr/bin/agentd", 0, 0, false},          // shared
		{"00400000-00eba000 r-xp 00000000 fe:00 43 /usr/lib/libc.so", 0, 0, false}, // another file
		{"01c20000-03c6d000 rw-p 00000000 00:00 0", 0, 0, false},
		{"", 0, 0, false},
		{"zz-00eba000 r-xp 00000000 fe:00 42 /usr/bin/agentd", 0, 0, false},
	} {
		lo, hi, ok := readOnlyMapping(c.line, 42)
		if lo != c.lo || hi != c.hi || ok != c.ok {
			t.Errorf("readOnlyMapping(%q) = %#x, %#x, %v; want %#x, %#x, %v", c.line, lo, hi, ok, c.lo, c.hi, c.ok)
		}
	}
}

// Run unmaps the executable once the program has been quiet for a while,
// not while it works nor in a short gap.
func TestRunDropsCodeWhenQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var drops atomic.Int32
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			Run(ctx, &Options{CodeMin: 1, Free: func() {}, DropCode: func() { drops.Add(1) }})
			close(done)
		}()
		synctest.Wait() // Run has read the heap: what follows is since
		for range 5 {
			burst(4)
			time.Sleep(DefaultEvery)
			synctest.Wait()
		}
		if n := drops.Load(); n != 0 {
			t.Errorf("the executable unmapped %d times while allocating", n)
		}
		time.Sleep(time.Duration(DefaultCodeQuiet-1) * DefaultEvery)
		synctest.Wait()
		if n := drops.Load(); n != 0 {
			t.Errorf("the executable unmapped %d times before the program was quiet for %d looks", n, DefaultCodeQuiet)
		}
		time.Sleep(2 * DefaultEvery)
		synctest.Wait()
		if n := drops.Load(); n == 0 {
			t.Error("the executable not unmapped once quiet")
		}
		cancel()
		<-done
	})
}
