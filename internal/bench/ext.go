package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"agentd/internal/app"
	"agentd/internal/extension"
	"agentd/internal/secret"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// benchWho is who writes the bench's extension rows: a person, as
// through the API or agentd ext put.
var benchWho = extension.Who{Provenance: store.ProvenanceUser, By: "user:bench"}

// extDoc is the i-th of the start figures' extension rows: by thirds an
// action (a tool of its own, a URL to a host of its allow_hosts, names
// never resolved at start), a control (the four kinds in turn) and a
// capability.
func extDoc(i int) extension.Doc {
	var spec string
	switch i % 3 {
	case 0:
		host := fmt.Sprintf("api-%d.example.com", i%50)
		spec = fmt.Sprintf(`{"description": "Look up an item of service %d by its id", "method": "GET",
			"url": "https://%s/v1/items/{{id}}", "query": {"fields": "{{fields}}"},
			"headers": {"Authorization": "Bearer ${secret:api_token_%d}"},
			"input": {"type": "object", "properties": {"id": {"type": "string"}, "fields": {"type": "string"}}, "required": ["id"]},
			"extract": {"path": "data.name"}, "timeout": "10s", "read_only": true, "idempotent": true,
			"allow_hosts": [%q]}`, i, host, i%50, host)
		return extension.Doc{Type: "action", Name: fmt.Sprintf("act-%05d", i), Spec: json.RawMessage(spec)}
	case 1:
		switch i / 3 % 4 {
		case 0:
			spec = `{"kind": "bool", "value": false, "description": "A kill switch people flip in the console"}`
		case 1:
			spec = `{"kind": "enum", "value": "standard", "options": ["economy", "standard", "premium"], "description": "A model tier"}`
		case 2:
			spec = fmt.Sprintf(`{"kind": "number", "value": %d, "min": 0, "max": 10000, "description": "A daily budget"}`, i)
		default:
			spec = `{"kind": "text", "value": "22:00-07:00", "description": "Quiet hours"}`
		}
		return extension.Doc{Type: "control", Name: fmt.Sprintf("ctl-%05d", i), Spec: json.RawMessage(spec)}
	}
	spec = fmt.Sprintf(`{"description": "Research bundle %d", "tools": {"allow": ["act-%05d", "http_fetch"], "ask": ["shell"]},
		"skills": ["summarize"], "prompt": "Cite every source you use, with its URL."}`, i, i-2)
	return extension.Doc{Type: "capability", Name: fmt.Sprintf("cap-%05d", i), Spec: json.RawMessage(spec)}
}

// writeExtRows writes n extension rows (extDoc) into the data directory
// dir through its extension manager, as people put them, and leaves
// agentd.yaml with the run's synchronous mode. The rows are written with
// synchronous=normal: that changes how long writing them takes, not the
// rows.
func writeExtRows(ctx context.Context, dir string, n int, sync string) error {
	cfg := filepath.Join(dir, "agentd.yaml")
	if err := os.WriteFile(cfg, []byte("store:\n  synchronous: normal\n"), 0o600); err != nil {
		return err
	}
	a, err := app.Open(ctx, dir, &app.Options{ReadOnce: true})
	if err != nil {
		return err
	}
	defer a.Close(context.Background())
	if err := a.Start(ctx); err != nil {
		return err
	}
	for i := range n {
		if _, err := a.Ext.Put(ctx, extDoc(i), benchWho); err != nil {
			return fmt.Errorf("bench: extension rows: %w", err)
		}
	}
	return os.WriteFile(cfg, []byte("store:\n  synchronous: "+sync+"\n"), 0o600)
}

// runExtStart measures agentd serve's start over a data directory of
// c.extRows extension rows (written once beforehand): its time to
// accepting on its socket, p50 of c.extStarts starts, and its memory once
// it settled. The directory holds the same agents as ready_ms's, so the
// difference is the rows'. A row that fails to activate fails the run.
func runExtStart(ctx context.Context, dir string, res *Result, c config) error {
	if err := writeExtRows(ctx, dir, c.extRows, c.sync); err != nil {
		return err
	}
	var logs bytes.Buffer
	readies, cmd, err := startReady(ctx, c.exe, dir, c.extStarts, &logs)
	if err != nil {
		return err
	}
	res.ExtRows, res.ExtStartMS = c.extRows, pct(readies, 50)
	time.Sleep(c.settle)
	res.ExtRSSMB, res.ExtAnonMB = rssMB(cmd.Process.Pid), statusMB(cmd.Process.Pid, "RssAnon")
	stopChild(cmd) // its log is complete once it ended
	if s := logs.String(); strings.Contains(s, "not activated") {
		return fmt.Errorf("bench: agentd serve did not activate every extension row:\n%s", s)
	}
	return nil
}

// runActionOverhead measures what an action tool call adds to the HTTP
// request it makes: c.actionCalls calls through the tool registry, as a
// turn's tool call runs, of an action reaching a JSON server on loopback
// (the operator allows 127.0.0.1/32), each beside the same request made
// with a plain http.Client, the two in turn so that both see the same
// load.
func runActionOverhead(ctx context.Context, dir string, res *Result, c config) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"data": {"items": [{"name": "agentd", "stars": 42}]}}`))
	})}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()

	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	yaml := "store:\n  synchronous: " + c.sync + "\nactions:\n  allow_networks: [127.0.0.1/32]\n"
	if err := os.WriteFile(filepath.Join(dir, "agentd.yaml"), []byte(yaml), 0o600); err != nil {
		return err
	}
	if err := secret.NewFile(dir).Set("bench_token", "tok-123"); err != nil {
		return err
	}
	a, err := app.Open(ctx, dir, &app.Options{ReadOnce: true})
	if err != nil {
		return err
	}
	defer a.Close(context.Background())
	if err := a.Start(ctx); err != nil {
		return err
	}
	spec := fmt.Sprintf(`{"description": "A repository's name", "url": "%s/repos/{{repo}}", "query": {"q": "{{q}}"},
		"headers": {"Authorization": "Bearer ${secret:bench_token}"},
		"input": {"type": "object", "properties": {"repo": {"type": "string"}, "q": {"type": "string"}}, "required": ["repo"]},
		"extract": {"path": "data.items[0].name"}, "allow_hosts": [%q]}`, base, ln.Addr().String())
	st, err := a.Ext.Put(ctx, extension.Doc{Type: "action", Name: "repo", Spec: json.RawMessage(spec)}, benchWho)
	if err != nil {
		return fmt.Errorf("bench: action: %w", err)
	}
	if st.Active != st.Version {
		return fmt.Errorf("bench: action not active: %s", st.Error)
	}

	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	bare := func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/repos/agentd?q=a+b", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer tok-123")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var v any
		return json.NewDecoder(resp.Body).Decode(&v)
	}
	opts := &tool.RunOptions{}
	var calls, bares []time.Duration
	for i := range c.actionCalls {
		t0 := time.Now()
		if err := bare(); err != nil {
			return fmt.Errorf("bench: bare round trip: %w", err)
		}
		bares = append(bares, time.Since(t0))
		call := &tool.Call{ID: strconv.Itoa(i), Name: "repo", Args: json.RawMessage(`{"repo": "agentd", "q": "a b"}`),
			Agent: "bench", Session: "bench/action"}
		t0 = time.Now()
		out := a.Tools.Run(ctx, call, opts)
		calls = append(calls, time.Since(t0))
		if out.Result.IsError || out.Result.Output != "agentd" {
			return fmt.Errorf("bench: action call: %s", out.Result.Output)
		}
	}
	res.ActionCallP50ms, res.ActionBareP50ms = pct(calls, 50), pct(bares, 50)
	res.ActionOverheadP50ms = math.Round((res.ActionCallP50ms-res.ActionBareP50ms)*1000) / 1000 // in µs, as its terms
	return nil
}
