package openaiapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"agentd/internal/event"
	"agentd/internal/gateway/openaiapi"
	"agentd/internal/runtime"
	"agentd/internal/testkit"
)

// BenchmarkTurn measures one turn with the offline echo model: through the
// runtime directly, and through this API over loopback HTTP, streamed and
// not; the difference is the API's cost.
func BenchmarkTurn(b *testing.B) {
	ctx := context.Background()
	defs := agents{"assistant": testkit.Agent("assistant")}
	rt := testkit.New(b, &testkit.Options{Agents: defs}).Runtime
	srv := httptest.NewServer(openaiapi.New(rt, defs, nil))
	defer srv.Close()
	hc := srv.Client()

	b.Run("runtime", func(b *testing.B) {
		i := 0
		for b.Loop() {
			_, end, err := rt.Send(ctx, runtime.Input{Session: fmt.Sprintf("assistant/direct:%d", i/20), Text: "hello there agent"})
			if err != nil || end.Status != event.StatusDone {
				b.Fatal(err, end)
			}
			i++
		}
	})
	b.Run("runtime/stream", func(b *testing.B) {
		i := 0
		for b.Loop() {
			_, end, err := rt.Stream(ctx, runtime.Input{Session: fmt.Sprintf("assistant/directs:%d", i/20), Text: "hello there agent"}, func(event.Event) error { return nil })
			if err != nil || end.Status != event.StatusDone {
				b.Fatal(err, end)
			}
			i++
		}
	})
	for _, stream := range []bool{false, true} {
		b.Run(fmt.Sprint("api/stream=", stream), func(b *testing.B) {
			i := 0
			for b.Loop() {
				req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(
					fmt.Sprintf(`{"model":"assistant","stream":%v,"messages":[{"role":"user","content":"hello there agent"}]}`, stream)))
				req.Header.Set(openaiapi.SessionHeader, fmt.Sprintf("b%v-%d", stream, i/20))
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.Contains(string(body), "agent") {
					b.Fatalf("%d %s", resp.StatusCode, body)
				}
				i++
			}
		})
	}
}
