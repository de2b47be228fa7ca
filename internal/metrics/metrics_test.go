package metrics

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/event"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.prom")

// openStore is a real store with sessions of two agents: ids 1 (ada) and 2 (bob).
func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "agentd.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, a := range []string{"ada", "bob"} {
		if _, _, err := st.Session(t.Context(), a, "chat"); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// turnEvents is what a few turns publish: model calls that worked and
// failed, tool calls of every outcome, lifecycle phase calls (and the
// lifecycle events that are not calls), turn ends, and events the
// collector ignores.
func turnEvents() []event.Event {
	ev := event.New
	return []event.Event{
		ev(1, 1, event.Input, event.InputData{Text: "hello"}),
		{Session: 1, Turn: 1, Kind: event.TextDelta, Data: []byte(`{"text":"hi"}`)},
		ev(1, 1, event.ModelCall, event.ModelCallData{Provider: "openai", Model: "gpt-4o-mini", LatencyMS: 1200, InputTokens: 100, OutputTokens: 20, CostUSD: 0.0015}),
		ev(1, 1, event.ToolResult, event.ToolResultData{Name: "calculator", DurationMS: 3}),
		ev(1, 1, event.ToolResult, event.ToolResultData{Name: "http_fetch", IsError: true, DurationMS: 250}),
		ev(1, 1, event.ToolResult, event.ToolResultData{Name: "http_fetch", IsError: true, Interrupted: true}),
		ev(1, 1, event.ToolResult, event.ToolResultData{Name: "odd\"tool\\name\nx", DurationMS: 70}),
		ev(1, 1, event.ModelCall, event.ModelCallData{Provider: "openai", Model: "gpt-4o-mini", LatencyMS: 400, InputTokens: 150, OutputTokens: 30, CostUSD: 0.0025}),
		ev(1, 1, event.TurnEnd, event.TurnEndData{Status: event.StatusDone}),
		ev(2, 2, event.ModelCall, event.ModelCallData{Provider: "anthropic", Model: "claude-sonnet-4-5", LatencyMS: 80, Error: "429", ErrorKind: "rate_limited"}),
		ev(2, 2, event.ModelCall, event.ModelCallData{Provider: "anthropic", Model: "claude-sonnet-4-5", LatencyMS: 2600, InputTokens: 1000, OutputTokens: 5, CostUSD: 0.003}),
		ev(2, 2, event.Lifecycle, event.LifecycleData{Phase: event.PhaseApproval, Approval: []byte(`{}`)}),
		ev(2, 2, event.Lifecycle, event.LifecycleData{Phase: event.PhaseAction, Start: []string{"demo__quote"}}),
		ev(2, 2, event.Lifecycle, event.LifecycleData{Phase: event.PhaseAction, Tool: "demo__quote", DurationMS: 12.5}),
		ev(2, 2, event.ModelCall, event.ModelCallData{Provider: "anthropic", Model: "claude-sonnet-4-5", LatencyMS: 30, Error: "boom"}),
		ev(2, 2, event.Error, event.ErrorData{Kind: "other", Message: "boom"}),
		ev(2, 2, event.TurnEnd, event.TurnEndData{Status: event.StatusError}),
		ev(99, 3, event.TurnEnd, event.TurnEndData{Status: event.StatusCancelled}),
		{Session: 1, Kind: event.TurnEnd, Data: []byte(`not json`)},
	}
}

// figures are the scrape-time reads, as the store would answer.
type figures struct {
	depth  int64
	states map[string]int64
	err    error
}

func (f figures) QueueDepth(context.Context) (int64, error) { return f.depth, f.err }
func (f figures) SessionStates(context.Context) (map[string]int64, error) {
	return f.states, f.err
}

// volatile are the lines whose values change from run to run.
var volatile = regexp.MustCompile(`(?m)^(agentd_uptime_seconds|process_resident_memory_bytes|go_goroutines|go_memstats_\w+) \S+$`)

func scrape(t *testing.T, c *Collector) string {
	t.Helper()
	var b bytes.Buffer
	if err := c.WriteMetrics(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	if _, err := parseExposition(b.String()); err != nil {
		t.Fatalf("exposition does not parse: %v\n%s", err, b.String())
	}
	return b.String()
}

func TestGoldenExposition(t *testing.T) {
	st := openStore(t)
	c := New(nil, &Options{Sessions: st, Queue: figures{depth: 7}, States: figures{states: map[string]int64{"idle": 3, "active": 1}},
		Version: "v1.2.3", Start: time.Unix(1700000000, 500_000_000)})
	for _, e := range turnEvents() {
		c.Observe(t.Context(), e)
	}
	c.JobFired("brief", "cron", 3*time.Millisecond, nil)
	c.JobFired("brief", "cron", 2*time.Hour, nil) // a catch-up after downtime
	c.JobFired("tick", "every", 0, errors.New("store closed"))
	c.JobRunEnded("brief", "done")
	c.JobRunEnded("brief", "error")
	c.JobRunEnded("tick", "skipped")
	got := volatile.ReplaceAllString(scrape(t, c), "$1 X")
	golden := filepath.Join("testdata", "golden.prom")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("exposition (-want +got); go test -update rewrites it\n%s", d)
	}
	// A second scrape is the same: the order is stable.
	if again := volatile.ReplaceAllString(scrape(t, c), "$1 X"); again != got {
		t.Errorf("a second scrape differs:\n%s", cmp.Diff(got, again))
	}
}

// Scrape-time figures that cannot be read are left out; the rest is served.
func TestScrapeWithoutFigures(t *testing.T) {
	c := New(nil, &Options{Queue: figures{err: store.ErrClosed}, States: figures{err: store.ErrClosed}})
	c.Observe(t.Context(), event.New(1, 1, event.TurnEnd, event.TurnEndData{Status: event.StatusDone}))
	out := scrape(t, c)
	for _, absent := range []string{"agentd_queue_depth", "agentd_sessions"} {
		if strings.Contains(out, absent) {
			t.Errorf("%s written although it could not be read", absent)
		}
	}
	if !strings.Contains(out, `agentd_turns_total{agent="unknown",status="done"} 1`) {
		t.Errorf("turn not counted under the unknown agent:\n%s", out)
	}
}

// SQLite's memory is written while it is counted, and left out otherwise.
func TestSQLiteMemory(t *testing.T) {
	for _, tc := range []struct {
		f    func() int64
		want string
	}{
		{nil, ""},
		{func() int64 { return 0 }, ""},
		{func() int64 { return 524288 }, "agentd_sqlite_memory_bytes 524288\n"},
	} {
		out := scrape(t, New(nil, &Options{SQLiteMemory: tc.f}))
		got := ""
		for line := range strings.Lines(out) {
			if strings.HasPrefix(line, "agentd_sqlite_memory_bytes ") {
				got += line
			}
		}
		if got != tc.want {
			t.Errorf("got %q, want %q in\n%s", got, tc.want, out)
		}
	}
}

func TestSeriesCap(t *testing.T) {
	c := New(nil, &Options{MaxSeries: 3})
	for i := range 10 {
		c.Observe(t.Context(), event.New(1, 1, event.ToolResult, event.ToolResultData{Name: fmt.Sprintf("tool%02d", i), DurationMS: 1}))
	}
	fams, err := parseExposition(scrape(t, c))
	if err != nil {
		t.Fatal(err)
	}
	var calls []string
	for _, f := range fams {
		if f.name != "agentd_tool_calls_total" {
			continue
		}
		for _, s := range f.samples {
			calls = append(calls, fmt.Sprintf("%s/%s/%s=%v", s.labels["agent"], s.labels["tool"], s.labels["outcome"], s.value))
		}
	}
	want := []string{"other/other/other=7", "unknown/tool00/ok=1", "unknown/tool01/ok=1", "unknown/tool02/ok=1"}
	if d := cmp.Diff(want, calls); d != "" {
		t.Errorf("tool calls past the cap (-want +got)\n%s", d)
	}
}

// Label values are escaped, made valid UTF-8 and bounded, and read back as
// written.
func TestLabelEscaping(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`plain`, `plain`},
		{`back\slash`, `back\slash`},
		{`"quoted"`, `"quoted"`},
		{"two\nlines", "two\nlines"},
		{`\n literally`, `\n literally`},
		{"bad \xff utf8", "bad \uFFFD utf8"},
		{"nul\x00byte", "nul\uFFFDbyte"},
		{"", ""},
		{strings.Repeat("é", 100), strings.Repeat("é", 64)},
		{"x" + strings.Repeat("é", 100), "x" + strings.Repeat("é", 63)},
	} {
		got := roundTrip(t, tc.in)
		if got != tc.want {
			t.Errorf("%q: read back %q, want %q", tc.in, got, tc.want)
		}
	}
}

// roundTrip writes a counter with v as its label value and parses it back.
func roundTrip(t testing.TB, v string) string {
	f := newFamily("x_total", typeCounter, "help with \\ and\nnewline", 10, nil, "l")
	f.add(1, v)
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	writeFamily(w, f)
	w.Flush()
	fams, err := parseExposition(b.String())
	if err != nil {
		t.Fatalf("%q: %v\n%s", v, err, b.String())
	}
	if fams[0].help != "help with \\ and\nnewline" {
		t.Fatalf("help read back as %q", fams[0].help)
	}
	return fams[0].samples[0].labels["l"]
}

func FuzzLabelEscaping(f *testing.F) {
	for _, s := range []string{"", `a"b`, `a\b`, "a\nb", `\"`, `\\n`, "\xff", "\x00", "}", `",x="`, "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got, want := roundTrip(t, v), labelValue(v); got != want {
			t.Fatalf("%q: read back %q, want %q", v, got, want)
		}
	})
}

func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 3: "3", 1e6: "1000000", 0.0015: "0.0015", 1e20: "1e+20", -2: "-2", 1.5e-7: "1.5e-07"} {
		if got := formatValue(v); got != want {
			t.Errorf("%v: %q, want %q", v, got, want)
		}
	}
}

func TestParseStatm(t *testing.T) {
	if n, ok := parseStatm([]byte("5000 1200 300 10 0 900 0\n"), 4096); !ok || n != 1200*4096 {
		t.Errorf("statm: %d %v", n, ok)
	}
	for _, bad := range []string{"", "5000", "5000 x", "5000 -1"} {
		if _, ok := parseStatm([]byte(bad), 4096); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// agentsByID gives sessions' agents without a database, for tests in a
// synctest bubble (which must not wait on I/O).
type agentsByID map[int64]string

func (a agentsByID) SessionByID(_ context.Context, id int64) (store.Session, error) {
	if ag, ok := a[id]; ok {
		return store.Session{ID: id, Agent: ag}, nil
	}
	return store.Session{}, store.ErrNotFound
}

// heldAgents gives sessions' agents once gate is closed, so that a test
// can hold the collector in the middle of an event.
type heldAgents struct {
	agentsByID
	gate chan struct{}
}

func (h heldAgents) SessionByID(ctx context.Context, id int64) (store.Session, error) {
	<-h.gate
	return h.agentsByID.SessionByID(ctx, id)
}

// Run counts what the bus publishes; when the bus drops it for falling
// behind, it subscribes again, counts the drop and goes on counting.
func TestRunFollowsTheBus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := event.NewBus()
		gate := make(chan struct{})
		c := New(bus, &Options{Sessions: heldAgents{agentsByID{1: "ada"}, gate}, Buffer: 2})
		done := make(chan error)
		go func() { done <- c.Run(t.Context()) }()
		turnEnd := event.New(1, 1, event.TurnEnd, event.TurnEndData{Status: event.StatusDone})

		bus.Publish(turnEnd)
		synctest.Wait() // Run holds the first event, waiting for its agent
		// Three more overflow the buffer of two: the bus drops the
		// subscription, and the third is not counted.
		bus.Publish(turnEnd, turnEnd, turnEnd)
		close(gate)
		synctest.Wait()
		bus.Publish(turnEnd)
		synctest.Wait()
		out := scrape(t, c)
		for _, want := range []string{`agentd_turns_total{agent="ada",status="done"} 4`, "agentd_metrics_bus_drops_total 1"} {
			if !strings.Contains(out, want) {
				t.Errorf("want %s in\n%s", want, out)
			}
		}
		c.Close()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		c.Close() // twice is fine
	})
}

func TestRunEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Without a bus, Run waits for Close.
		c := New(nil, nil)
		done := make(chan error)
		go func() { done <- c.Run(t.Context()) }()
		synctest.Wait()
		c.Close()
		<-done

		// With one, it ends with its context and leaves no subscriber.
		bus := event.NewBus()
		c = New(bus, nil)
		ctx, cancel := context.WithCancel(t.Context())
		go func() { done <- c.Run(ctx) }()
		synctest.Wait()
		cancel()
		<-done
		c.Close()
		bus.Publish(event.New(1, 1, event.TurnEnd, event.TurnEndData{Status: event.StatusDone}))
		if out := scrape(t, c); strings.Contains(out, "agentd_turns_total{") {
			t.Errorf("counted after Run ended:\n%s", out)
		}

		// Closed before Run: Run returns at once.
		c = New(bus, nil)
		c.Close()
		if err := c.Run(t.Context()); err != nil {
			t.Error(err)
		}
	})
}

// countedStates counts how often sessions are counted.
type countedStates struct{ n *int }

func (c countedStates) SessionStates(context.Context) (map[string]int64, error) {
	*c.n++
	return map[string]int64{"idle": int64(*c.n)}, nil
}

// Sessions are counted at most every StatesEvery; scrapes in between
// show the last count.
func TestSessionStatesReused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		c := New(nil, &Options{States: countedStates{&n}, StatesEvery: time.Minute})
		for range 3 {
			scrape(t, c)
		}
		time.Sleep(59 * time.Second)
		if out := scrape(t, c); n != 1 || !strings.Contains(out, `agentd_sessions{state="idle"} 1`) {
			t.Errorf("within a minute: counted %d times", n)
		}
		time.Sleep(time.Second)
		if out := scrape(t, c); n != 2 || !strings.Contains(out, `agentd_sessions{state="idle"} 2`) {
			t.Errorf("after a minute: counted %d times", n)
		}
	})
}

func FuzzParseStatm(f *testing.F) {
	for _, s := range []string{"5000 1200 300 10 0 900 0\n", "", "1", "1 -2", "1 99999999999999999999", " 7  8 ", "1 4503599627370496"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok := parseStatm(b, 4096)
		if !ok {
			return
		}
		f := strings.Fields(string(b))
		if len(f) < 2 || n < 0 || n%4096 != 0 || fmt.Sprint(n/4096) != strings.TrimLeft(strings.TrimPrefix(f[1], "+"), "0") && n != 0 {
			t.Fatalf("%q: %d", b, n)
		}
	})
}

// The session-to-agent cache is bounded, and the map that held it is let
// go when it is emptied rather than kept at the size it grew to.
func TestAgentCacheBounded(t *testing.T) {
	ids := agentsByID{}
	for id := range int64(maxAgentCache + 1) {
		ids[id] = "ada"
	}
	bus := event.NewBus()
	c := New(bus, &Options{Sessions: ids})
	defer c.Close()
	for id := range int64(maxAgentCache) {
		if a := c.agent(t.Context(), id); a != "ada" {
			t.Fatalf("session %d: agent %q", id, a)
		}
	}
	c.mu.Lock()
	full := reflect.ValueOf(c.agents).UnsafePointer()
	c.mu.Unlock()
	c.agent(t.Context(), maxAgentCache)
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.agents); n != 1 {
		t.Errorf("%d sessions cached past the bound, want 1", n)
	}
	if reflect.ValueOf(c.agents).UnsafePointer() == full {
		t.Error("the full cache was kept (cleared), with the room it grew to")
	}
}

// The chat connectors' figures are read on each scrape: none without
// connectors, and one series per connector (refusals by reason) with them.
func TestConnectorMetrics(t *testing.T) {
	if out := scrape(t, New(nil, &Options{Connectors: func() []ConnectorFigures { return nil }})); strings.Contains(out, "agentd_connector_") {
		t.Errorf("connector metrics without connectors:\n%s", out)
	}
	figs := []ConnectorFigures{
		{Name: "tg-main", Platform: "telegram", Up: true, Queue: 2, Received: 120, Delivered: 117, Retried: 4, Failed: 1, Edits: 310,
			Refused: map[string]uint64{"pairing": 3, "mention": 40}},
		{Name: "dc\"\n", Platform: "discord", Received: 1},
	}
	var got []string
	for line := range strings.Lines(scrape(t, New(nil, &Options{Connectors: func() []ConnectorFigures { return figs }}))) {
		if strings.HasPrefix(line, "agentd_connector_") {
			got = append(got, strings.TrimSuffix(line, "\n"))
		}
	}
	want := []string{
		`agentd_connector_received_total{connector="dc\"\n",platform="discord"} 1`,
		`agentd_connector_received_total{connector="tg-main",platform="telegram"} 120`,
		`agentd_connector_delivered_total{connector="dc\"\n"} 0`,
		`agentd_connector_delivered_total{connector="tg-main"} 117`,
		`agentd_connector_retries_total{connector="dc\"\n"} 0`,
		`agentd_connector_retries_total{connector="tg-main"} 4`,
		`agentd_connector_failed_total{connector="dc\"\n"} 0`,
		`agentd_connector_failed_total{connector="tg-main"} 1`,
		`agentd_connector_edits_total{connector="dc\"\n"} 0`,
		`agentd_connector_edits_total{connector="tg-main"} 310`,
		`agentd_connector_queue{connector="dc\"\n"} 0`,
		`agentd_connector_queue{connector="tg-main"} 2`,
		`agentd_connector_up{connector="dc\"\n"} 0`,
		`agentd_connector_up{connector="tg-main"} 1`,
		`agentd_connector_refused_total{connector="tg-main",reason="mention"} 40`,
		`agentd_connector_refused_total{connector="tg-main",reason="pairing"} 3`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("connector metrics (-want +got):\n%s", diff)
	}
}
