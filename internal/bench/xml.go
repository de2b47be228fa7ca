package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"agentd/internal/app"
	"agentd/internal/event"
	"agentd/internal/gateway"
)

// The XML protocol's figure (`agentd bench xml`): what a turn in the XML
// tool protocol costs over the same turn with native tool calls — three
// model steps, two of them calling a tool, then the answer — on fakellm
// through agentd serve, the two kinds of turn in turn so that both see
// the same load.

// XMLOptions say how XML measures.
type XMLOptions struct {
	// Quick runs smaller counts, for CI. Default false: the full counts.
	Quick bool
	// Turns is how many turns of each protocol are timed (default 1,000;
	// quick 100).
	Turns int
	// Synchronous is the store's synchronous mode (default "full").
	Synchronous string
	// Executable is the agentd binary whose serve is measured. Default:
	// the running executable.
	Executable string
	// Version is agentd's version, as the result gives it. Default "".
	Version string
}

// XMLResult is what XML measured; `agentd bench xml --json` prints it.
type XMLResult struct {
	Turns int `json:"turns"`
	// A whole turn through the daemon's socket (POST …/messages, streamed,
	// to its end), p50 and p99, with native tool calls and in the XML
	// protocol, and the XML turn's overhead (xml − native).
	NativeP50ms   float64 `json:"native_turn_p50_ms"`
	NativeP99ms   float64 `json:"native_turn_p99_ms"`
	XMLP50ms      float64 `json:"xml_turn_p50_ms"`
	XMLP99ms      float64 `json:"xml_turn_p99_ms"`
	OverheadP50ms float64 `json:"xml_overhead_p50_ms"`
	OverheadP99ms float64 `json:"xml_overhead_p99_ms"`

	RunInfo
}

// xmlBenchScript: the same three steps written as native tool calls
// (messages starting "native") and in the XML protocol ("xml").
const xmlBenchScript = `match ^native
call clock {}
---
call clock {}
---
say The time, twice.

match ^xml
say <action_call name="clock">{}</action_call>
---
say <action_call name="clock">{}</action_call>
---
say <output type="text">The time, twice.</output>
`

// XML measures a turn's overhead in the XML protocol over native tool
// calls through agentd serve.
func XML(ctx context.Context, o *XMLOptions) (*XMLResult, error) {
	if o == nil {
		o = new(XMLOptions)
	}
	c := *o
	orCount(&c.Turns, 1000, 100, c.Quick)
	if err := daemonDefaults(&c.Synchronous, &c.Executable); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "agentd-bench-xml-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	return runXML(ctx, dir, &c)
}

func runXML(ctx context.Context, dir string, c *XMLOptions) (*XMLResult, error) {
	base, stopFake, err := startFake(ctx, "bench-xml", xmlBenchScript)
	if err != nil {
		return nil, err
	}
	defer stopFake()

	if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o700); err != nil {
		return nil, err
	}
	cfg := "store:\n  synchronous: " + c.Synchronous + "\n"
	if err := os.WriteFile(filepath.Join(dir, "agentd.yaml"), []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	for _, proto := range []string{"native", "xml"} {
		def := "name: Bench\ntool_protocol: " + proto + "\nmodel:\n  provider: openai\n  name: fake\n  base_url: " + base + "\ntools:\n  allow: [clock]\n"
		if err := os.WriteFile(filepath.Join(dir, "agents", proto+".yaml"), []byte(def), 0o600); err != nil {
			return nil, err
		}
	}
	_, cmd, err := startReady(ctx, c.Executable, dir, 1, nil)
	if err != nil {
		return nil, err
	}
	defer stopChild(cmd)
	cl := gateway.NewUnixClient(filepath.Join(dir, app.SocketFile))
	turn := func(proto string, i int) (time.Duration, error) {
		t0 := time.Now()
		_, end, err := cl.Stream(ctx, fmt.Sprintf("%s/t%d", proto, i), gateway.MessageRequest{Text: proto + " what time is it?"},
			func(event.Event) error { return nil })
		d := time.Since(t0)
		switch {
		case err != nil:
			return 0, fmt.Errorf("bench: %s turn: %w", proto, err)
		case end.Status != event.StatusDone || end.Steps != 3 || end.Reply != "The time, twice.":
			return 0, fmt.Errorf("bench: %s turn: %s after %d steps: %q %s", proto, end.Status, end.Steps, end.Reply, end.Reason)
		}
		return d, nil
	}
	warm := min(c.Turns/10+1, 20)
	var native, xml []time.Duration
	for i := range warm + c.Turns {
		n, err := turn("native", i)
		if err != nil {
			return nil, err
		}
		x, err := turn("xml", i)
		if err != nil {
			return nil, err
		}
		if i >= warm {
			native, xml = append(native, n), append(xml, x)
		}
	}
	if len(xml) == 0 {
		return nil, errors.New("bench: no turn timed")
	}
	res := &XMLResult{Turns: c.Turns, NativeP50ms: pct(native, 50), NativeP99ms: pct(native, 99), XMLP50ms: pct(xml, 50), XMLP99ms: pct(xml, 99),
		RunInfo: newRunInfo(c.Quick, c.Synchronous, c.Version)}
	res.OverheadP50ms, res.OverheadP99ms = res.XMLP50ms-res.NativeP50ms, res.XMLP99ms-res.NativeP99ms
	return res, nil
}

// WriteTable writes the result for people.
func (r *XMLResult) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "# a three-step turn (two tool calls, then the answer) through agentd serve on fakellm\nFIGURE\tVALUE\tTARGET\tWHAT\n")
	fmt.Fprintf(tw, "native turn p50 / p99\t%.2f / %.2f ms\t\t%d turns with native tool calls, over the socket, streamed to the end\n", r.NativeP50ms, r.NativeP99ms, r.Turns)
	fmt.Fprintf(tw, "XML turn p50 / p99\t%.2f / %.2f ms\t\tthe same turn in the XML protocol, in turn with the native ones\n", r.XMLP50ms, r.XMLP99ms)
	fmt.Fprintf(tw, "XML overhead p50 / p99\t%.2f / %.2f ms\t≤ 1 ms (p50)\tXML − native\n", r.OverheadP50ms, r.OverheadP99ms)
	if err := tw.Flush(); err != nil {
		return err
	}
	return r.writeFooter(w)
}
