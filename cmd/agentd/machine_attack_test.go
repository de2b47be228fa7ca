package main

// The sandbox as an attacker meets it, through the daemon: an agent
// allowed exec with a shell tries each way out the issue lists, and each
// is refused with agentd still answering and its token never in any
// output.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentd/internal/event"
)

func TestMachineExecAttacks(t *testing.T) {
	needBwrap(t)
	dir := dataDir(t, map[string]string{"workspace/m/.keep": "", "agents/.keep": ""})
	ws := filepath.Join(dir, "workspace", "m")
	for name, target := range map[string]string{"data": dir, "root": "/"} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	hostTmp := fmt.Sprintf("/tmp/agentd-attack-%d", time.Now().UnixNano())
	// The gateway will listen on this port of 127.0.0.1; the model's
	// script names it.
	port := freePort(t)
	sh := func(s string) map[string]any { return map[string]any{"argv": []string{s}, "shell": true} }
	bash := func(s string) map[string]any { return map[string]any{"argv": []string{"bash", "-c", s}} } // /dev/tcp is bash's
	attacks := []struct {
		trigger string
		args    map[string]any
		refused func(out string) bool
		// inside: the command may succeed in its own view (a private /tmp,
		// the sandbox's own skeleton of the workspace's parents and of
		// /etc); the host's files are checked after.
		inside bool
	}{
		{"shadow", sh("cat /etc/shadow"), func(out string) bool { return !strings.Contains(out, "root:") }, false},
		{"token", sh("cat " + dir + "/gateway.token"), nil, false},
		{"db", sh("head -c 64 " + dir + "/agentd.db"), func(out string) bool { return !strings.Contains(out, "SQLite format") }, false},
		{"write-out", sh(fmt.Sprintf("echo pwned > %s/pwned; echo pwned > /etc/agentd-pwned; echo pwned > %s; echo pwned > /root/agentd-pwned; cat %s", dir, hostTmp, hostTmp)), nil, true},
		{"gateway", bash(fmt.Sprintf("printf 'GET /v1/status HTTP/1.0\\r\\n\\r\\n' > /dev/tcp/127.0.0.1/%d && echo connected", port)), func(out string) bool { return !strings.Contains(out, "connected") }, false},
		{"metadata", bash("printf x > /dev/tcp/169.254.169.254/80 && echo connected"), func(out string) bool {
			return !strings.Contains(out, "connected") && strings.Contains(out, "unreachable")
		}, false},
		{"fork-bomb", map[string]any{"argv": []string{"b() { b | b; }; b"}, "shell": true, "timeout": 3}, nil, false},
		{"file-size", sh("dd if=/dev/zero of=big bs=64K count=1024"), func(out string) bool { return strings.HasPrefix(out, "killed: file_size") }, false},
		{"fill-disk", sh("i=0; while :; do dd if=/dev/zero of=f$i bs=64K count=16 2>/dev/null || exit 9; i=$((i+1)); done"), func(out string) bool { return strings.HasPrefix(out, "killed: disk") }, false},
		{"memory", sh(`x=$(head -c 536870912 /dev/zero | tr '\0' a); echo ${#x}`), func(out string) bool { return !strings.Contains(out, "536870912") }, false},
		{"link-token", sh("cat data/gateway.token data/agentd.db"), nil, false},
		{"link-shadow", sh("cat root/etc/shadow root" + dir + "/gateway.token"), func(out string) bool { return !strings.Contains(out, "root:") }, false},
		{"link-write", sh("echo pwned > data/pwned; echo pwned > root/etc/agentd-pwned; echo pwned > root" + dir + "/pwned"), nil, true},
	}
	var calls []scripted
	for _, a := range attacks {
		calls = append(calls, scripted{a.trigger, "exec", a.args})
	}
	addr := fake(t, callScript(t, calls...))
	agentFile := machineAgent(addr, []string{"exec"}, []string{"exec"}, `exec:
  shell: true
  timeout: 30s
  limits: {processes: 32, memory: 64MiB, file_size: 1MiB, disk: 32MiB}
`)
	if err := os.WriteFile(filepath.Join(dir, "agents", "m.yaml"), []byte(agentFile), 0o600); err != nil {
		t.Fatal(err)
	}
	// The control: the same commands without a sandbox reach what the
	// sandboxed ones cannot, so a refusal above is the sandbox's.
	ctl := machineAgent(addr, []string{"exec"}, []string{"exec"}, "sandbox: none\nexec:\n  shell: true\n")
	if err := os.WriteFile(filepath.Join(dir, "agents", "ctl.yaml"), []byte(ctl), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(okRun(t, dir, "token")) // gateway.token, made on first use
	d, _ := serveListen(t, dir, fmt.Sprintf("127.0.0.1:%d", port))

	for _, a := range attacks {
		r := oneResult(t, dir, "m/s1", a.trigger, "exec")
		t.Logf("%s: %s", a.trigger, r.Output)
		if (!r.IsError && !a.inside) || (a.refused != nil && !a.refused(r.Output)) {
			t.Errorf("%s: not refused: %+v", a.trigger, r)
		}
		if strings.Contains(r.Output, tok) {
			t.Errorf("%s: the token came back: %q", a.trigger, r.Output)
		}
		if st := run(t, dir, "status"); st.code != 0 {
			t.Fatalf("after %s agentd status failed: exit %d\n%s\n%s", a.trigger, st.code, st.stderr, d.out.String())
		}
	}
	for _, c := range []struct{ trigger, want string }{{"gateway", "connected"}, {"token", tok}, {"db", "SQLite format"}} {
		if out := oneResult(t, dir, "ctl/s1", c.trigger, "exec").Output; !strings.Contains(out, c.want) {
			t.Errorf("control: %s without a sandbox said %q; want %q in it", c.trigger, out, c.want)
		}
	}
	for _, f := range []string{filepath.Join(dir, "pwned"), "/etc/agentd-pwned", hostTmp, "/root/agentd-pwned"} {
		if _, err := os.Stat(f); err == nil {
			os.Remove(f)
			t.Errorf("a command wrote %s outside its workspace", f)
		}
	}
	// The whole log and the daemon's output hold no token either.
	for _, e := range sessionLog(t, dir, "m/s1") {
		if strings.Contains(string(e.Data), tok) {
			t.Errorf("event %d (%s) holds the token", e.Seq, e.Kind)
		}
	}
	if strings.Contains(d.out.String(), tok) {
		t.Errorf("the daemon's output holds the token")
	}
	if evs, end := sendTurn(t, dir, "m", "shadow", "--session", "s2"); end.Status != event.StatusDone || len(toolResultsOf(evs, "exec")) != 1 {
		t.Errorf("after the attacks a turn ended %+v", end)
	}
}
