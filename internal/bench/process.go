package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"agentd/internal/app"
	"agentd/internal/event"
	"agentd/internal/gateway"
)

// runServe measures agentd serve as a child process: start-up, idle
// memory, memory after many sessions, and its growth over more turns.
func runServe(ctx context.Context, dir string, res *Result, c config) error {
	exe := c.exe
	// agentd version, as a user runs it.
	var vs []time.Duration
	for i := 0; i < 11; i++ {
		t0 := time.Now()
		if err := exec.CommandContext(ctx, exe, "version").Run(); err != nil {
			return fmt.Errorf("bench: agentd version: %w", err)
		}
		vs = append(vs, time.Since(t0))
	}
	res.VersionMS = pct(vs, 50)

	readies, cmd, err := startReady(ctx, exe, dir, 5, nil)
	if err != nil {
		return err
	}
	defer func() {
		if cmd != nil {
			stopChild(cmd)
		}
	}()
	res.ReadyMS = pct(readies, 50)
	time.Sleep(c.settle)
	res.IdleRSSMB, res.IdleAnonMB = rssMB(cmd.Process.Pid), statusMB(cmd.Process.Pid, "RssAnon")

	cl := gateway.NewUnixClient(filepath.Join(dir, app.SocketFile))
	drive := func(n, sessions int, prefix string) error {
		var next atomic.Int64
		var wg sync.WaitGroup
		var first atomic.Value
		for w := 0; w < c.concurrency; w++ {
			wg.Go(func() {
				for {
					i := next.Add(1) - 1
					if i >= int64(n) {
						return
					}
					addr := fmt.Sprintf("bench/%s-%d", prefix, i%int64(sessions))
					_, end, err := cl.Stream(ctx, addr, gateway.MessageRequest{Text: "hello"}, func(event.Event) error { return nil })
					if err == nil && end.Status != "done" {
						err = errors.New(end.Reason)
					}
					if err != nil {
						first.CompareAndSwap(nil, err)
						return
					}
				}
			})
		}
		wg.Wait()
		if err, _ := first.Load().(error); err != nil {
			return err
		}
		return nil
	}
	if err := drive(c.sessions, c.sessions, "s"); err != nil {
		return fmt.Errorf("bench: sessions: %w", err)
	}
	time.Sleep(c.settle)
	res.RSS10kSessionsMB = rssMB(cmd.Process.Pid)
	if err := drive(c.growthTurns, c.sessions, "s"); err != nil {
		return fmt.Errorf("bench: growth: %w", err)
	}
	time.Sleep(c.settle)
	after := rssMB(cmd.Process.Pid)
	if res.RSS10kSessionsMB > 0 {
		res.RSSGrowthPct = (after - res.RSS10kSessionsMB) / res.RSS10kSessionsMB * 100
	}
	// The gateway's figures from a fresh process over the same data: what
	// the load above left on the heap is not theirs.
	stopChild(cmd)
	srv, err := startServe(ctx, exe, dir)
	if err != nil {
		cmd = nil
		return err
	}
	cmd = srv.cmd
	time.Sleep(c.settle)
	return runGateway(ctx, dir, srv.base(), srv.pid(), res, c)
}

// startReady starts agentd serve on dir n times, each after the one
// before stopped, and returns each start's time to accepting on its
// socket and the last child, running. Its log (warnings and errors) goes
// to logs; nil: only errors are logged, and discarded.
func startReady(ctx context.Context, exe, dir string, n int, logs io.Writer) ([]time.Duration, *exec.Cmd, error) {
	sock := filepath.Join(dir, app.SocketFile)
	port, err := freeTCPPort()
	if err != nil {
		return nil, nil, err
	}
	level := "error"
	if logs != nil {
		level = "warn"
	}
	var readies []time.Duration
	var cmd *exec.Cmd
	for range n {
		if cmd != nil {
			stopChild(cmd)
		}
		cmd = exec.CommandContext(ctx, exe, "serve", "--data", dir, "--log-level", level, "--listen", "127.0.0.1:"+strconv.Itoa(port))
		cmd.Stderr = logs
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			return nil, nil, err
		}
		for {
			conn, err := net.Dial("unix", sock)
			if err == nil {
				conn.Close()
				break
			}
			if time.Since(t0) > 60*time.Second {
				stopChild(cmd)
				return nil, nil, errors.New("bench: agentd serve did not open its socket within 60s")
			}
			time.Sleep(200 * time.Microsecond)
		}
		readies = append(readies, time.Since(t0))
	}
	return readies, cmd, nil
}

// freeTCPPort returns a loopback port nothing listens on (for a child to bind).
func freeTCPPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func stopChild(cmd *exec.Cmd) {
	cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}
