package action

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"agentd/internal/tool"
)

// benchServer answers every request with a small JSON document.
func benchServer(b *testing.B) *httptest.Server {
	srv := httptest.NewServer(jsonAnswer(`{"data": {"items": [{"name": "agentd", "stars": 42}]}}`))
	b.Cleanup(srv.Close)
	return srv
}

// reportP50 times each of b.N runs of op and reports their median.
func reportP50(b *testing.B, op func()) {
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		op()
		d = append(d, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds())/1e3, "p50-µs")
}

// BenchmarkBareRoundTrip is the same request as BenchmarkActionCall
// through a plain http.Client: the baseline its overhead is measured
// against.
func BenchmarkBareRoundTrip(b *testing.B) {
	srv := benchServer(b)
	client := &http.Client{Transport: &http.Transport{}}
	reportP50(b, func() {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/repos/agentd?q=a+b", nil)
		req.Header.Set("Authorization", "Bearer tok-123")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkActionCall is a call of an action tool as a turn makes it
// (tool.Registry.Run: arguments checked against the input schema, the
// URL filled, a header's secret reference resolved, the request through
// the SSRF guard, the answer's extract taken, secrets redacted).
func BenchmarkActionCall(b *testing.B) {
	srv := benchServer(b)
	hs := newHarness(b, local)
	hs.env["TOKEN"] = "tok-123"
	spec := `{"description": "d", "url": "$URL/repos/{{repo}}", "query": {"q": "{{q}}"},
		"headers": {"Authorization": "Bearer ${env:TOKEN}"},
		"input": {"type": "object", "properties": {"repo": {"type": "string"}, "q": {"type": "string"}}, "required": ["repo"]},
		"extract": {"path": "data.items[0].name"}, "allow_hosts": ["$HOST"]}`
	if err := hs.activate("repo", spec, srv); err != nil {
		b.Fatal(err)
	}
	call := &tool.Call{ID: "c1", Name: "repo", Args: json.RawMessage(`{"repo": "agentd", "q": "a b"}`)}
	reportP50(b, func() {
		if out := hs.reg.Run(context.Background(), call, nil); out.Result.IsError || out.Result.Output != "agentd" {
			b.Fatal(out.Result)
		}
	})
}
