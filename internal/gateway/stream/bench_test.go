package stream_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentd/internal/event"
	"agentd/internal/gateway/stream"
	"agentd/internal/testkit"
)

// childEnv makes the test binary serve a stream instead of running tests,
// so that a test can measure a server process apart from its clients.
const childEnv = "AGENTD_STREAM_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if err := serveChild(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Mem is a server process's memory, after a collection.
type Mem struct {
	HeapInuse, StackInuse, Sys, RSS uint64
	RawRSS                          uint64 // before the collection
	Goroutines, Conns               int
}

// serveChild serves a Handler on a loopback port, and its memory at /mem,
// until its standard input closes.
func serveChild() error {
	if os.Getenv("STREAM_HEAP_PROFILE") != "" {
		runtime.MemProfileRate = 1
	}
	dir, err := os.MkdirTemp("", "stream-child")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	k, err := testkit.Open(ctx, dir, &testkit.Options{Agents: anyAgent{}})
	if err != nil {
		return err
	}
	defer k.Close()
	h := stream.New(stream.Join(k.Runtime, k.Store), nil)
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle("/v1/stream", h)
	mux.HandleFunc("/conns", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, h.Stats().Conns)
	})
	mux.HandleFunc("/mem", func(w http.ResponseWriter, r *http.Request) {
		raw := rss() // as the process holds it, before a collection
		runtime.GC()
		debug.FreeOSMemory()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if p := r.URL.Query().Get("heapprofile"); p != "" {
			if f, err := os.Create(p); err == nil {
				pprof.WriteHeapProfile(f)
				f.Close()
			}
		}
		json.NewEncoder(w).Encode(Mem{HeapInuse: ms.HeapInuse, StackInuse: ms.StackInuse, Sys: ms.Sys, RSS: rss(), RawRSS: raw,
			Goroutines: runtime.NumGoroutine(), Conns: h.Stats().Conns})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	fmt.Printf("listening %s\n", ln.Addr())
	bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes it
	srv.Close()
	return nil
}

// rss is the process's resident set size from /proc, 0 where there is none.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

type child struct {
	addr string
}

func startChild(t testing.TB) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		t.Fatalf("child server: %q %v", line, err)
	}
	return &child{addr: addr}
}

func (c *child) conns(t testing.TB) int {
	t.Helper()
	resp, err := http.Get("http://" + c.addr + "/conns")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var n int
	fmt.Fscan(resp.Body, &n)
	return n
}

func (c *child) mem(t testing.TB) Mem {
	t.Helper()
	resp, err := http.Get("http://" + c.addr + "/mem")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m Mem
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// idleCost holds n idle subscribed connections to a server in another
// process and returns what each costs it.
func idleCost(t testing.TB, n int) (perConn, rssPerConn float64, after Mem) {
	c := startChild(t)
	before := c.mem(t)
	closeAll, err := stream.HoldIdle(context.Background(), "ws://"+c.addr+"/v1/stream?agent=idle", nil, n)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAll()
	waitFor(t, "the connections", func() bool { return c.conns(t) == n })
	after = c.mem(t)
	if p := os.Getenv("STREAM_HEAP_PROFILE"); p != "" {
		http.Get("http://" + c.addr + "/mem?heapprofile=" + p)
	}
	t.Logf("heap %d -> %d, stack %d -> %d, RSS %d -> %d (%d before a forced collection)",
		before.HeapInuse, after.HeapInuse, before.StackInuse, after.StackInuse, before.RSS, after.RSS, after.RawRSS)
	perConn = float64(after.HeapInuse+after.StackInuse-before.HeapInuse-before.StackInuse) / float64(n)
	rssPerConn = float64(after.RSS-before.RSS) / float64(n)
	return perConn, rssPerConn, after
}

// TestIdleConnectionMemory measures what an idle subscribed connection
// costs the server: heap and stacks after a collection, and resident
// memory.
func TestIdleConnectionMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 2,000 connections")
	}
	const n = 2000
	perConn, rssPerConn, after := idleCost(t, n)
	t.Logf("%d idle connections: %.0f heap+stack bytes and %.0f RSS bytes each; goroutines %d; process RSS %.1f MB",
		n, perConn, rssPerConn, after.Goroutines, float64(after.RSS)/(1<<20))
	if after.Goroutines > n+50 {
		t.Errorf("%d goroutines for %d idle connections: want at most one each", after.Goroutines, n)
	}
	if !raceEnabled && perConn > 16<<10 {
		t.Errorf("%.0f bytes per idle connection, want at most 16 KiB", perConn)
	}
}

// BenchmarkIdleConnections holds 10,000 idle connections to a server in
// another process and reports its memory.
func BenchmarkIdleConnections(b *testing.B) {
	const n = 10000
	perConn, rssPerConn, after := idleCost(b, n)
	for b.Loop() {
	}
	b.ReportMetric(perConn, "heap+stack-B/conn")
	b.ReportMetric(rssPerConn, "rss-B/conn")
	b.ReportMetric(float64(after.RSS)/(1<<20), "rss-MB")
	b.ReportMetric(float64(after.RawRSS)/(1<<20), "rss-before-gc-MB")
}

// BenchmarkFanout1000 publishes text-delta events to 1,000 subscribers on
// loopback TCP, one event at a time, and reports delivery latency.
func BenchmarkFanout1000(b *testing.B) {
	benchFanout(b, 1000, b.N, 1)
}

// BenchmarkFanoutBurst publishes text deltas to 200 subscribers 20 at a
// time, faster than they can be written one by one: the queues fill, and
// what waits goes out joined. frames/delivery says how many frames a
// delivered delta took.
func BenchmarkFanoutBurst(b *testing.B) {
	benchFanout(b, 200, max(b.N, 20), 20)
}

func benchFanout(b testing.TB, subscribers, events, burst int) stream.FanoutResult {
	e := newEnv(b, nil)
	sess := e.src.session(b, "bench/k")
	payload, _ := json.Marshal(event.DeltaData{Text: "token ", Step: 1, Attempt: 1})
	publish := func(context.Context) (int, error) {
		for range burst {
			e.src.bus.Publish(event.Event{Session: sess.ID, Turn: 1, Kind: event.TextDelta, Time: time.Now(), Data: payload})
		}
		return burst, nil
	}
	res, err := stream.BenchFanout(context.Background(), e.url+"?session=bench/k", nil, subscribers, events, publish)
	if err != nil {
		b.Fatal(err)
	}
	if bb, ok := b.(*testing.B); ok {
		bb.ReportMetric(float64(res.P50.Microseconds())/1000, "p50-ms")
		bb.ReportMetric(float64(res.P99.Microseconds())/1000, "p99-ms")
		bb.ReportMetric(float64(res.Max.Microseconds())/1000, "max-ms")
		bb.ReportMetric(float64(res.Frames)/float64(res.Events*res.Subscribers), "frames/delivery")
	}
	return res
}

// BenchFanout works end to end (the figures are not checked).
func TestBenchFanout(t *testing.T) {
	res := benchFanout(t, 20, 30, 1)
	if res.Subscribers != 20 || res.Events != 30 || res.P50 <= 0 || res.P99 < res.P50 || res.Max < res.P99 {
		t.Errorf("%+v", res)
	}
	t.Logf("20 subscribers: p50 %v, p99 %v", res.P50, res.P99)
}
