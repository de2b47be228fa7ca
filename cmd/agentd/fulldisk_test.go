package main

// A full disk through agentd serve, on a small tmpfs (the test mounts one,
// so it runs as root; elsewhere it is skipped).

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mountTmpfs mounts a tmpfs of size bytes on a new directory, or skips the
// test when it cannot.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("skipping: cannot mount a tmpfs (it needs root): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fillDisk writes a file on dir's file system until no byte more fits, and
// returns a function that removes it.
func fillDisk(t *testing.T, dir string) (free func()) {
	t.Helper()
	name := filepath.Join(dir, "filler")
	f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1 << 20, 64 << 10, 4 << 10, 512, 1} {
		buf := make([]byte, n)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
	f.Close()
	return func() {
		if err := os.Remove(name); err != nil {
			t.Fatal(err)
		}
	}
}

// waitReady polls /readyz until its status is want.
func waitReady(t *testing.T, base, tok string, want int) httpResult {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := request(t, "GET", base+"/readyz", "", "Authorization: Bearer "+tok)
		if r.status == want {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz stayed %d %s, want %d", r.status, r.body, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// On a full disk agentd serve starts (writing nothing that exists: not the
// token, not the agents' records, not the write-ahead logs) with its
// long-term memory on, /readyz says the disk is full, and new messages get
// a 503 storage_full with Retry-After instead of 500 (agentd send exits
// 5). Messages acknowledged before the disk filled are answered, each
// exactly once, once space is freed.
func TestFullDisk(t *testing.T) {
	t.Parallel()
	g := gatedFake(t, gatedScript)
	dir := filepath.Join(mountTmpfs(t, 16<<20), "data")
	if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "agents", "a.yaml"), []byte(openaiAgent(g.addr, "")), 0o600)
	tok := strings.TrimSpace(run(t, dir, "token").stdout)
	auth := "Authorization: Bearer " + tok
	post := func(base, session, text string) httpResult {
		return request(t, "POST", base+"/v1/sessions/a/"+session+"/messages", `{"text":"`+text+`"}`, auth)
	}
	d, base := serveListen(t, dir, "127.0.0.1:0")
	if r := request(t, "POST", base+"/v1/sessions/a/s/messages?wait=true", `{"text":"one"}`, auth); r.status != 200 {
		t.Fatalf("first message: %d %s", r.status, r.body)
	}
	d.stop(t)

	// A start on a full disk.
	free := fillDisk(t, dir)
	d, base = serveListen(t, dir, "127.0.0.1:0")
	if r := waitReady(t, base, tok, 503); !strings.Contains(r.body, "disk is full") {
		t.Errorf("readyz on a full disk: %d %s", r.status, r.body)
	} else if strings.Contains(r.body, "degraded") {
		t.Errorf("on a full disk, a part is off: %s", r.body)
	}
	if strings.Contains(d.out.String(), "long-term memory is off") {
		t.Errorf("long-term memory is off on a full disk:\n%s", d.out.String())
	}
	if r := run(t, dir, "memory", "list", "a"); r.code != 0 {
		t.Errorf("agentd memory list on a full disk: %+v", r)
	}
	for _, session := range []string{"s", "new"} {
		r := post(base, session, "refused")
		if r.status != 503 || !strings.Contains(r.body, `"code":"storage_full"`) || r.header.Get("Retry-After") == "" {
			t.Errorf("a message to %s on a full disk: %d %s (Retry-After %q)", session, r.status, r.body, r.header.Get("Retry-After"))
		}
	}
	// agentd send says why and exits 5 (unavailable: send again later).
	if r := run(t, dir, "send", "a", "--session", "s", "refused"); r.code != 5 || !strings.Contains(r.stderr, "agentd's disk is full") {
		t.Errorf("agentd send on a full disk: %+v, want exit 5 saying the disk is full", r)
	}
	free()
	waitReady(t, base, tok, 200)

	// Acknowledged, then the disk fills while their turns run.
	acked := map[string]string{}
	for _, m := range []struct{ session, text string }{{"s", "gated three"}, {"s", "four"}, {"t", "gated five"}} {
		r := post(base, m.session, m.text)
		if r.status != 202 {
			t.Fatalf("message %q: %d %s", m.text, r.status, r.body)
		}
		acked[m.text] = m.session
	}
	g.waitArrivals(t, 2)
	free = fillDisk(t, dir)
	g.open()
	if r := post(base, "s", "six"); r.status != 503 || !strings.Contains(r.body, `"code":"storage_full"`) {
		t.Errorf("a message while full: %d %s", r.status, r.body)
	}
	waitReady(t, base, tok, 503)
	free()
	waitReady(t, base, tok, 200)
	if r := post(base, "s", "six"); r.status != 202 {
		t.Fatalf("a message once space is back: %d %s", r.status, r.body)
	}
	acked["six"] = "s"

	// Every acknowledged message is answered exactly once.
	for text, session := range acked {
		deadline := time.Now().Add(60 * time.Second)
		for {
			r := run(t, dir, "log", "a/"+session)
			if strings.Count(r.stdout, " text ") >= countInputs(r.stdout) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not every input was answered:\n%s", session, r.stdout)
			}
			time.Sleep(50 * time.Millisecond)
		}
		r := run(t, dir, "log", "a/"+session)
		if n := strings.Count(r.stdout, " input          "+text+"\n"); n != 1 {
			t.Errorf("%q logged %d times:\n%s", text, n, r.stdout)
		}
		want := text
		if strings.HasPrefix(text, "gated") {
			want = "done: " + text
		}
		if n := strings.Count(r.stdout, " text           "+want+"\n"); n != 1 {
			t.Errorf("%q answered %d times:\n%s", text, n, r.stdout)
		}
	}
	for _, session := range []string{"s", "t"} {
		for turn, n := range turnEnds(t, dir, "a/"+session) {
			if n != 1 {
				t.Errorf("a/%s turn %d ended %d times", session, turn, n)
			}
		}
	}
	if r := run(t, dir, "log", "a/s"); strings.Contains(r.stdout, "refused") {
		t.Errorf("a refused message was logged:\n%s", r.stdout)
	}
	d.stop(t)
}

// countInputs counts the input events of agentd log's output.
func countInputs(log string) int { return strings.Count(log, " input ") }
