package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"agentd/internal/event"
	"agentd/internal/gateway"
)

// TestExecKillRestart SIGKILLs agentd serve at random points while its
// agent runs commands in the sandbox (each appends a line to a file in its
// workspace after a short sleep) and writes a big file, restarts it, and
// counts outside agentd: no command ran twice for one call (exec is not
// idempotent: a call cut by a kill is recorded as interrupted, never run
// again), no sandboxed process outlived agentd, every turn ended, and the
// big file is whole — the old content or the new, never part of either.
// AGENTD_KILLS sets the rounds (divided by 3; default 8).
func TestExecKillRestart(t *testing.T) {
	needBwrap(t)
	kills := killCount(t, 8, 3, 3)
	mark := fmt.Sprintf("agentd-kill-%d", time.Now().UnixNano())
	big := strings.Repeat("0123456789abcdef", 4096) // 64 KiB, then the input's text
	script := fmt.Sprintf(`match ^job
delay 15ms
call exec {"argv": [": %s; echo {{last_user}} >> starts.txt; sleep 0.3; echo {{last_user}} >> appends.txt"], "shell": true}
---
delay 15ms
call write_file {"path": "big.txt", "content": "%s{{last_user}}"}
---
delay 15ms
say finished {{last_user}}
`, mark, big)
	addr := fake(t, script)
	dir := dataDir(t, map[string]string{
		"agents/k.yaml": machineAgent(addr, []string{"exec", "write_file"}, []string{"exec", "write_file"}, "exec:\n  shell: true\n"),
	})
	ws := filepath.Join(dir, "workspace", "k")
	sock := filepath.Join(dir, "agentd.sock")

	var inputs []*input
	newInputs := func(n int) {
		for range n {
			i := len(inputs)
			inputs = append(inputs, &input{session: fmt.Sprintf("k/s%d", i%4), text: fmt.Sprintf("job-%d", i)})
		}
	}
	submit := func(ctx context.Context, c *gateway.Client) {
		for _, in := range inputs {
			if in.accepted {
				continue
			}
			if _, err := c.Submit(ctx, in.session, gateway.MessageRequest{Text: in.text, IdempotencyKey: in.text}); err != nil {
				return
			}
			in.accepted = true
		}
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 18))
	survivors, lateAppends := 0, 0
	for range kills {
		d := serve(t, dir)
		newInputs(2)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { submit(ctx, gateway.NewUnixClient(sock)); close(done) }()
		time.Sleep(time.Duration(rng.IntN(700)) * time.Millisecond)
		d.kill()
		cancel()
		<-done
		// A command must not go on without agentd. bubblewrap's init binds
		// itself to agentd's life only a moment after it has started the
		// command (docs/tools.md, "When agentd dies"): a kill in that moment
		// leaves the command to run to its end, so such survivors are
		// counted, not failed; they must still run at most once, and none
		// may outlive agentd's next start, which ends what is left in the
		// cgroups of an agentd that is gone.
		before := len(lines(t, filepath.Join(ws, "appends.txt")))
		if ps := processesWith(mark); len(ps) > 0 {
			survivors++
			d = serve(t, dir)
			waitPidsGone(t, ps)
			d.kill()
		}
		if after := len(lines(t, filepath.Join(ws, "appends.txt"))); after != before {
			lateAppends += after - before
		}
	}

	// A last, clean run: every input (resubmitted with its key) finishes.
	d := serve(t, dir)
	c := gateway.NewUnixClient(sock)
	submit(context.Background(), c)
	want := map[string]int{}
	for _, in := range inputs {
		if !in.accepted {
			t.Fatalf("input %s never accepted", in.text)
		}
		want[in.session]++
	}
	for s, n := range want {
		waitLog(t, dir, s, fmt.Sprintf("%d turn ends", n), func(evs []event.Event) bool { return countEnds(evs) >= n })
	}
	d.stop(t)
	waitGone(t, mark)

	st := openDataStore(t, dir)
	integrity(t, st)
	starts := countLines(lines(t, filepath.Join(ws, "starts.txt")))
	appends := countLines(lines(t, filepath.Join(ws, "appends.txt")))
	var interruptedN int
	logs := map[string][]event.Event{}
	for s := range want {
		logs[s] = sessionLog(t, dir, s)
	}
	for _, in := range inputs {
		evs := logs[in.session]
		turn := inputTurn(evs, in.text)
		var results []event.ToolResultData
		ends := 0
		for _, e := range evs {
			if e.Turn != turn {
				continue
			}
			switch e.Kind {
			case event.ToolResult:
				var r event.ToolResultData
				e.Decode(&r)
				if r.Name == "exec" {
					results = append(results, r)
				}
			case event.TurnEnd:
				var end event.TurnEndData
				e.Decode(&end)
				ends++
				if end.Status != event.StatusDone || end.Reply != "finished "+in.text {
					t.Errorf("%s ended %s with %q (%s)", in.text, end.Status, end.Reply, end.Reason)
				}
			}
		}
		if ends != 1 || len(results) != 1 {
			t.Errorf("%s: %d turn ends and %d exec results, want 1 and 1", in.text, ends, len(results))
			continue
		}
		r := results[0]
		switch {
		case starts[in.text] > 1 || appends[in.text] > 1:
			t.Errorf("%s: the command ran %d times and appended %d times; exec must never run twice", in.text, starts[in.text], appends[in.text])
		case r.Interrupted:
			interruptedN++
			if !strings.Contains(r.Output, "restarted") {
				t.Errorf("%s: the interrupted call says %q", in.text, r.Output)
			}
		case r.IsError || !strings.HasPrefix(r.Output, "exit 0 · ") || starts[in.text] != 1 || appends[in.text] != 1:
			t.Errorf("%s: exec said %+v, started %d and appended %d times; want exit 0, once", in.text, r, starts[in.text], appends[in.text])
		}
	}
	b, err := os.ReadFile(filepath.Join(ws, "big.txt"))
	if err != nil || !strings.HasPrefix(string(b), big) || !regexp.MustCompile(`^job-\d+$`).MatchString(string(b[len(big):])) {
		t.Errorf("big.txt is not whole: %d bytes, %v, ends %q", len(b), err, b[max(0, len(b)-32):])
	}
	t.Logf("%d kills, %d inputs, %d exec calls interrupted by a kill; %d kills left a command running (%d lines appended after)", kills, len(inputs), interruptedN, survivors, lateAppends)
}

// waitPidsGone waits until none of pids runs, at most a minute (a bound
// for a failing test, not a timing assertion).
func waitPidsGone(t *testing.T, pids []string) {
	t.Helper()
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		left := slices.DeleteFunc(slices.Clone(pids), func(p string) bool {
			_, err := os.Stat("/proc/" + p)
			return err != nil
		})
		if len(left) == 0 {
			return
		}
	}
	t.Errorf("processes %v of a killed agentd outlived its next start", pids)
}

// lines are the lines of the file at p (none when it does not exist).
func lines(t *testing.T, p string) []string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// countLines counts each line.
func countLines(ls []string) map[string]int {
	n := map[string]int{}
	for _, l := range ls {
		n[l]++
	}
	return n
}

// inputTurn is the turn whose input is text (0: none).
func inputTurn(evs []event.Event, text string) int64 {
	for _, e := range evs {
		var d event.InputData
		if e.Kind == event.Input && e.Decode(&d) == nil && d.Text == text {
			return e.Turn
		}
	}
	return 0
}
