package fakellm

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// discard is a ResponseWriter that keeps nothing, so the benchmarks measure
// fakellm's own work.
type discard struct {
	h http.Header
	n int
}

func (w *discard) Header() http.Header         { return w.h }
func (w *discard) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }
func (w *discard) WriteHeader(int)             {}
func (w *discard) Flush()                      {}

type body struct{ bytes.Reader }

func (*body) Close() error { return nil }

const benchScript = `
match weather
think Let me look that up.
call get_weather {"city": "Paris", "units": "metric"}
---
say It is {{tool_result}} in Paris today, a fine day for a walk along the river.
match *
say Hello! This is a streamed answer of a few words, long enough to be cut into pieces.
`

func benchHandler(b *testing.B, path, reqBody string) {
	s := New(mustParse(b, benchScript), nil)
	w := &discard{h: http.Header{}}
	r := httptest.NewRequest("POST", path, nil)
	rb := &body{}
	r.Body = rb
	data := []byte(reqBody)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		rb.Reset(data)
		clear(w.h)
		s.ServeHTTP(w, r)
	}
	if w.n == 0 {
		b.Fatal("no output")
	}
}

func BenchmarkStreamOpenAIText(b *testing.B) {
	benchHandler(b, "/v1/chat/completions", `{"model":"fake","stream":true,"stream_options":{"include_usage":true},"messages":[`+
		`{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Say hello."}]}`)
}

func BenchmarkStreamAnthropicText(b *testing.B) {
	benchHandler(b, "/v1/messages", `{"model":"fake","max_tokens":1024,"stream":true,"system":"You are a helpful assistant.",`+
		`"messages":[{"role":"user","content":"Say hello."}]}`)
}

func BenchmarkStreamOpenAIToolRound(b *testing.B) {
	benchHandler(b, "/v1/chat/completions", `{"model":"fake","stream":true,"messages":[`+
		`{"role":"user","content":"weather?"},`+
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},`+
		`{"role":"tool","tool_call_id":"c1","content":"21°C and sunny"}]}`)
}

func BenchmarkStreamAnthropicToolRound(b *testing.B) {
	benchHandler(b, "/v1/messages", `{"model":"fake","max_tokens":1024,"stream":true,"messages":[`+
		`{"role":"user","content":"weather?"},`+
		`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"Paris"}}]},`+
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"21°C and sunny"}]}]}`)
}

// BenchmarkHTTP measures whole streamed exchanges over loopback, client
// included, from parallel clients.
func BenchmarkHTTP(b *testing.B) {
	for _, bc := range []struct{ name, path, body string }{
		{"openai", "/v1/chat/completions", `{"model":"fake","stream":true,"messages":[{"role":"user","content":"Say hello."}]}`},
		{"anthropic", "/v1/messages", `{"model":"fake","stream":true,"messages":[{"role":"user","content":"Say hello."}]}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv := httptest.NewServer(New(mustParse(b, benchScript), nil))
			defer srv.Close()
			client := srv.Client()
			client.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Post(srv.URL+bc.path, "application/json", bytes.NewReader([]byte(bc.body)))
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
		})
	}
}
