package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// agentd bench --soak runs agentd serve under a steady load and reports,
// as it goes, its memory: RSS, the Go heap and SQLite's own, read from the
// daemon's /metrics (SQLite counts its memory when serve is asked to).
func TestBenchSoak(t *testing.T) {
	r := run(t, t.TempDir(), "bench", "--soak", "3s", "--rate", "40", "--every", "1s", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) < 3 {
		t.Fatalf("want samples and a summary, got:\n%s", r.stdout)
	}
	for _, l := range lines[:len(lines)-1] {
		var m map[string]float64
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		if m["rss_mb"] <= 0 || m["anon_mb"] <= 0 || m["go_heap_mb"] <= 0 || m["sqlite_mb"] <= 0 || m["errors"] != 0 {
			t.Errorf("sample %s", l)
		}
	}
	var sum struct {
		Summary struct {
			Turns  int
			Errors int
		}
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || sum.Summary.Turns < 40 || sum.Summary.Errors != 0 {
		t.Errorf("summary %s (%v)", lines[len(lines)-1], err)
	}
}

// The bench's helper processes, as it runs them: the floor server relays
// to the model and broadcasts text deltas, which the fan-out clients, in a
// process of their own, count.
func TestBenchHelpers(t *testing.T) {
	addr := fake(t, "")
	floor, floorOut := startBenchHelper(t, "floor-server", fmt.Sprintf(`{"target": "http://%s/v1"}`, addr))
	var a struct{ Addr string }
	if err := json.Unmarshal(floorOut(), &a); err != nil || a.Addr == "" {
		t.Fatalf("floor server: %v", err)
	}
	resp, err := http.Post("http://"+a.Addr+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"fake","stream":true,"messages":[{"role":"user","content":"hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "[DONE]") {
		t.Fatalf("relayed: %s %s", resp.Status, body)
	}
	clients, clientsOut := startBenchHelper(t, "fanout-clients", fmt.Sprintf(`{"url": "ws://%s/ws?agent=fan", "subscribers": 3}`, a.Addr))
	if got := string(clientsOut()); got != `{"ready":true}` {
		t.Fatalf("clients: %s", got)
	}
	if resp, err := http.Post("http://"+a.Addr+"/broadcast?n=20&gap=1ms", "", nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("broadcast: %v %v", resp, err)
	}
	io.WriteString(clients, `{"wait": 20}`+"\n")
	if got := string(clientsOut()); got != `{"ok":true}` {
		t.Fatalf("wait: %s", got)
	}
	io.WriteString(clients, `{"done": true}`+"\n")
	var res struct{ Subscribers, Events, Frames int }
	if err := json.Unmarshal(clientsOut(), &res); err != nil || res.Subscribers != 3 || res.Events != 20 || res.Frames != 60 {
		t.Errorf("result %+v (%v)", res, err)
	}
	floor.Close()
}

// startBenchHelper starts `agentd bench <role>` with cfg as its first
// line of input; it returns its input and a reader of its output lines.
func startBenchHelper(t *testing.T, role, cfg string) (io.WriteCloser, func() []byte) {
	t.Helper()
	cmd := exec.Command(agentdBin, "bench", role)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	io.WriteString(in, cfg+"\n")
	sc := bufio.NewScanner(out)
	return in, func() []byte {
		t.Helper()
		if !sc.Scan() {
			t.Fatalf("%s ended: %v", role, sc.Err())
		}
		return sc.Bytes()
	}
}
