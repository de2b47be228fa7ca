package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"agentd/internal/gateway"
	"agentd/internal/runtime"
)

// A message's text has a bound, named in the 413 that refuses it.
func TestMessageTextLimit(t *testing.T) {
	e := newEnv(t, setup{})
	at := `{"text":"` + strings.Repeat("x", runtime.MaxText) + `"}`
	if status, _, b := e.do("POST", "/v1/sessions/a/k/messages", at); status != 202 {
		t.Fatalf("a text of MaxText bytes: %d %.200s", status, b)
	}
	over := `{"text":"` + strings.Repeat("x", runtime.MaxText+1) + `"}`
	for _, q := range []string{"", "?wait=true", "?stream=true"} {
		status, _, b := e.do("POST", "/v1/sessions/a/k/messages"+q, over)
		if status != 413 || !strings.Contains(string(b), `"code":"too_large"`) || !strings.Contains(string(b), fmt.Sprint(runtime.MaxText)) {
			t.Errorf("%s: a text over MaxText: %d %.300s", q, status, b)
		}
	}
}

// Large bodies are received within a budget of bytes in flight: past it a
// request waits, and one that waits too long is a 503 busy with
// Retry-After; small ones never wait.
func TestLargeBodiesInFlight(t *testing.T) {
	const budget = 256 << 10
	e := newEnv(t, setup{options: func(o *gateway.Options) {
		o.BodyBytesInFlight = budget
		o.BodyWait = time.Millisecond
	}})
	body := func(n int) string { return `{"text":"` + strings.Repeat("x", n) + `"}` }
	// A request whose body is still coming holds its share.
	held := body(budget - 1000)
	hold := func() (*io.PipeWriter, chan int) {
		pr, pw := io.Pipe()
		req, err := http.NewRequestWithContext(t.Context(), "POST", e.http.URL+"/v1/sessions/a/held/messages", pr)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = int64(len(held))
		first := make(chan int, 1)
		go func() {
			resp, err := e.http.Client().Do(req)
			if err != nil {
				first <- 0
				return
			}
			resp.Body.Close()
			first <- resp.StatusCode
		}()
		if _, err := io.WriteString(pw, held[:100<<10]); err != nil {
			t.Fatal(err)
		}
		return pw, first
	}
	pw, first := hold()
	// The held request's share is taken when its handler starts, which may
	// come after the write above returned: send large bodies until one is
	// refused for want of room (the ones before are accepted).
	var resp *http.Response
	var b []byte
	for deadline := time.Now().Add(20 * time.Second); ; {
		// A large body that arrived before the held request's handler
		// started took the room first, and the held request was refused:
		// hold another.
		select {
		case status := <-first:
			if status != 503 && status != 0 { // 0: refused as its body was being sent
				t.Fatalf("held request answered before its body was sent: %d", status)
			}
			pw, first = hold()
		default:
		}
		req2, err := http.NewRequestWithContext(t.Context(), "POST", e.http.URL+"/v1/sessions/a/k/messages", strings.NewReader(body(200<<10)))
		if err != nil {
			t.Fatal(err)
		}
		if resp, err = e.http.Client().Do(req2); err != nil {
			t.Fatal(err)
		}
		b, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 202 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if resp.StatusCode != 503 || !strings.Contains(string(b), `"code":"busy"`) || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a large body past the budget: %d %s (Retry-After %q)", resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	if status, _, b := e.do("POST", "/v1/sessions/a/small/messages", body(1000)); status != 202 {
		t.Errorf("a small body while the budget is taken: %d %s", status, b)
	}
	// Once the held body has arrived, its share is free again.
	if _, err := io.WriteString(pw, held[100<<10:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if status := recv(t, "the held request", first); status != 202 {
		t.Fatalf("held request: %d", status)
	}
	// The share is given back when the held request's handler returns,
	// which may be just after its answer reached the client: a refusal
	// (busy) meanwhile is retried, as a client told Retry-After would.
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, _, b := e.do("POST", "/v1/sessions/a/k/messages", body(200<<10))
		if status == 202 {
			break
		}
		if status != 503 || time.Now().After(deadline) {
			t.Fatalf("a large body once the budget is free: %d %.200s", status, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
