package main

// How agentd talks to model servers that cannot stream, that fail with a
// message of their own, or whose stream stalls, through both providers.

import (
	"context"
	"net"
	"strings"
	"testing"

	"agentd/internal/event"
	"agentd/internal/model/fakellm"
)

// fakeServer is fake, also returning the server for its counts.
func fakeServer(t *testing.T, script string) (string, *fakellm.Server) {
	t.Helper()
	s, err := fakellm.ParseScript("test.fake", []byte(script))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := fakellm.New(s, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String(), srv
}

// providers are the agent files of one model behind addr in each wire
// format, with extra model fields.
func providers(addr, extra string) map[string]string {
	return map[string]string{
		"openai": "model:\n  provider: openai\n  name: fake\n  base_url: http://" + addr + "/v1\n  api_key_env: AGENTD_TEST_KEY\n" + extra +
			"tools:\n  allow: [calculator]\n",
		"anthropic": "model:\n  provider: anthropic\n  name: fake\n  base_url: http://" + addr + "\n  api_key_env: AGENTD_TEST_KEY\n" + extra +
			"tools:\n  allow: [calculator]\n",
	}
}

// A server that cannot stream tool calls (it answers a streamed request
// with HTTP 500 "Cannot use tools with stream", as llama.cpp did) gets the
// request again whole, and the turn goes on; with model.stream: false it
// is never asked to stream.
func TestServerThatCannotStream(t *testing.T) {
	t.Parallel()
	const script = "match ^weather\nnostream\ncall calculator {\"expression\": \"6*7\"}\n---\nnostream\nsay the answer is {{tool_result}}\n"
	for _, name := range []string{"openai", "anthropic"} {
		for _, stream := range []string{"", "  stream: false\n"} {
			addr, srv := fakeServer(t, script)
			dir := dataDir(t, map[string]string{"agents/a.yaml": providers(addr, stream)[name]})
			r := run(t, dir, "send", "--json", "a", "weather?")
			evs, end := jsonEvents(t, r.stdout)
			if r.code != 0 || end == nil || end.Reply != "the answer is 42" {
				t.Fatalf("%s %q: exit %d, end %+v\n%s", name, stream, r.code, end, r.stderr)
			}
			for _, e := range evs {
				var d event.ModelCallData
				if e.Kind == event.ModelCall && e.Decode(&d) == nil && d.Error != "" {
					t.Errorf("%s %q: a failed attempt was logged: %+v", name, stream, d)
				}
			}
			// Asked to stream once, told it cannot, then never again; or
			// never asked.
			want := int64(1)
			if stream != "" {
				want = 0
			}
			if got := srv.Stats().Failures; got != want {
				t.Errorf("%s %q: %d streamed requests refused, want %d", name, stream, got, want)
			}
		}
	}
}

// A server error is reported as one, with the server's message, minus the
// API key and anything like a bearer token.
func TestServerErrorMessage(t *testing.T) {
	t.Parallel()
	addr := fake(t, "match ^secret\nnostream 500 upstream refused key test-key-not-secret (Authorization: Bearer abcdef0123456789)\n"+
		"match ^plain\nfail 500\n")
	for name, def := range providers(addr, "  retries: 1\n") {
		dir := dataDir(t, map[string]string{"agents/a.yaml": def})
		r := run(t, dir, "send", "a", "secret")
		want := "server error (HTTP 500): upstream refused key [redacted] (Authorization: Bearer [redacted])"
		if r.code != 4 || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "test-key-not-secret") || strings.Contains(r.stderr, "abcdef0123456789") {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant %q", name, r.code, r.stderr, want)
		}
		r = run(t, dir, "send", "--json", "a", "plain")
		evs, end := jsonEvents(t, r.stdout)
		if end == nil || !strings.Contains(end.Reason, "server error (HTTP 500): ") {
			t.Errorf("%s: end %+v", name, end)
		}
		for _, e := range evs {
			var d event.ModelCallData
			if e.Kind == event.ModelCall && e.Decode(&d) == nil && d.ErrorKind != "server_error" {
				t.Errorf("%s: attempt %+v, want the kind server_error", name, d)
			}
		}
		if log := run(t, dir, "log", "a"); strings.Contains(log.stdout, "test-key-not-secret") {
			t.Errorf("%s: the key is in the log:\n%s", name, log.stdout)
		}
	}
}

// A stream that stalls fails after model.idle_timeout, not the whole
// model.timeout, and is retried; here the retry is answered. In process
// and through the daemon.
func TestStalledStreamRetried(t *testing.T) {
	t.Parallel()
	addr := fake(t, "match *\nstall times=1\nchunks 4\nsay answered after a stall: {{last_user}}\n")
	for name, def := range providers(addr, "  timeout: 10m\n  idle_timeout: 200ms\n") {
		dir := dataDir(t, map[string]string{"agents/a.yaml": def})
		var d *daemon
		for _, how := range []string{"in process", "through the daemon"} {
			if how != "in process" {
				d = serve(t, dir)
			}
			msg := name + " " + how
			r := run(t, dir, "send", "--json", "a", msg)
			evs, end := jsonEvents(t, r.stdout)
			if r.code != 0 || end == nil || end.Reply != "answered after a stall: "+msg {
				t.Fatalf("%s %s: exit %d, end %+v\n%s", name, how, r.code, end, r.stderr)
			}
			var stalls int
			for _, e := range evs {
				var mc event.ModelCallData
				if e.Kind == event.ModelCall && e.Decode(&mc) == nil && mc.Error != "" {
					if mc.ErrorKind != "transport" || !strings.Contains(mc.Error, "stalled: nothing arrived for 200ms") {
						t.Errorf("%s %s: attempt %+v", name, how, mc)
					}
					stalls++
				}
			}
			if stalls != 1 {
				t.Errorf("%s %s: %d stalled attempts logged, want 1", name, how, stalls)
			}
		}
		d.stop(t)
	}
}
