package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"agentd/internal/gateway"
	"agentd/internal/testkit"
)

// BenchmarkMessageWait measures a one-step turn as a client of the API
// sees it: POST /v1/sessions/…/messages?wait=true over loopback HTTP, the
// runtime and store beneath it real, the model fakellm over HTTP. serial:
// one turn after another; sessions100: 100 clients at once, each on its
// own session (a fresh one every 20 turns, as agentd bench does).
func BenchmarkMessageWait(b *testing.B) {
	for _, bc := range []struct {
		name    string
		clients int
	}{{"serial", 1}, {"sessions100", 100}} {
		b.Run(bc.name, func(b *testing.B) {
			k := testkit.New(b, &testkit.Options{Agents: testAgents(), Script: "match *\necho\n"})
			srv := httptest.NewServer(gateway.New(&gateway.Options{Runtime: k.Runtime, Sessions: k.Store, Agents: testAgents()}))
			b.Cleanup(srv.Close)
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
			post := func(session string) error {
				resp, err := hc.Post(srv.URL+"/v1/sessions/a/"+session+"/messages?wait=true", "application/json", strings.NewReader(`{"text":"hello"}`))
				if err != nil {
					return err
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil && (resp.StatusCode != 200 || !strings.Contains(string(body), `"done"`)) {
					err = fmt.Errorf("%s: %s", resp.Status, body)
				}
				return err
			}
			var client atomic.Int64
			b.SetParallelism((bc.clients + 1) / 2) // GOMAXPROCS is 2 here
			b.ReportAllocs()
			b.ResetTimer()
			if bc.clients == 1 {
				for i := 0; b.Loop(); i++ {
					if err := post(fmt.Sprintf("s%d", i/20)); err != nil {
						b.Fatal(err)
					}
				}
				return
			}
			b.RunParallel(func(pb *testing.PB) {
				c := client.Add(1)
				for i := 0; pb.Next(); i++ {
					if err := post(fmt.Sprintf("p%d-%d", c, i/20)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
