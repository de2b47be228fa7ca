package app

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/model/fakellm"
	"agentd/internal/runtime"
)

// newBench builds agentd on a temporary data directory with one agent that
// talks to fakellm over loopback.
func newBench(tb testing.TB, script, sync string) *App {
	tb.Helper()
	s, err := fakellm.ParseScript("bench", []byte(script))
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go fakellm.New(s, nil).Serve(ctx, ln)
	dir := tb.TempDir()
	os.MkdirAll(filepath.Join(dir, "agents"), 0o700)
	os.WriteFile(filepath.Join(dir, "agentd.yaml"), []byte("store:\n  synchronous: "+sync+"\n"), 0o600)
	def := "model:\n  provider: openai\n  name: fake\n  base_url: http://" + ln.Addr().String() + "/v1\ntools:\n  allow: [clock]\n"
	os.WriteFile(filepath.Join(dir, "agents", "bench.yaml"), []byte(def), 0o600)
	a, err := Open(context.Background(), dir, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { a.Close(context.Background()); cancel() })
	return a
}

// BenchmarkTurnWithTool measures one turn with one tool call (two model
// calls) end to end, through the runtime, against fakellm.
func BenchmarkTurnWithTool(b *testing.B) {
	for _, sync := range []string{"full", "normal"} {
		b.Run("sync="+sync, func(b *testing.B) {
			a := newBench(b, "match ^tool\ncall clock {}\n---\nsay done\n", sync)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_, end, err := a.Runtime.Send(context.Background(), runtime.Input{Session: fmt.Sprintf("bench/s%d", i/20), Text: "tool please"})
				if err != nil || end.Status != "done" {
					b.Fatalf("%v %+v", err, end)
				}
				i++
			}
		})
	}
}

// Open takes agentd.yaml as its caller already loaded it (a command reads
// it first for its logger) rather than parse the file again.
func TestOpenUsesLoadedConfig(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "agentd.yaml"), []byte("max_concurrent_turns: 3\n"), 0o600)
	cfg, err := agent.LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "agentd.yaml"), []byte("max_concurrent_turns: 5\n"), 0o600)
	a, err := Open(context.Background(), dir, &Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if a.Config != cfg || a.Config.MaxConcurrentTurns != 3 {
		t.Errorf("Open used %+v, not the configuration it was given", a.Config)
	}
	b, err := Open(context.Background(), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(context.Background())
	if b.Config == nil {
		t.Error("Open without a configuration loaded none")
	}
}
