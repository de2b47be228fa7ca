package action

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"agentd/internal/secret"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// local is the range of the test servers.
var local = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// harness is a Handler over a registry, with a secrets file and an
// environment of its own.
type harness struct {
	t   testing.TB
	reg *tool.Registry
	h   *Handler
	env map[string]string
	dir string
}

func newHarness(t testing.TB, allow []netip.Prefix) *harness {
	t.Helper()
	hs := &harness{t: t, reg: tool.NewRegistry(nil), env: map[string]string{}, dir: t.TempDir()}
	res := secret.NewResolver(hs.dir, &secret.Options{LookupEnv: func(k string) (string, bool) { v, ok := hs.env[k]; return v, ok }})
	hs.h = New(hs.reg, &Options{AllowNetworks: allow, Secrets: res})
	return hs
}

// activate activates spec (JSON, with $URL replaced by the server's URL
// and $HOST by its host:port) as the action name.
func (hs *harness) activate(name, spec string, srv *httptest.Server) error {
	hs.t.Helper()
	if srv != nil {
		u, _ := url.Parse(srv.URL)
		spec = strings.NewReplacer("$URL", srv.URL, "$HOST", u.Host).Replace(spec)
	}
	return hs.h.Activate(context.Background(), &store.Extension{Type: TypeName, Name: name, Spec: json.RawMessage(spec), Enabled: true, Version: 1})
}

// mustActivate is activate that fails the test on an error.
func (hs *harness) mustActivate(name, spec string, srv *httptest.Server) {
	hs.t.Helper()
	if err := hs.activate(name, spec, srv); err != nil {
		hs.t.Fatalf("activate %s: %v", name, err)
	}
}

// run runs the tool through the registry, as a turn does.
func (hs *harness) run(name, args string) tool.Outcome {
	hs.t.Helper()
	return hs.reg.Run(context.Background(), &tool.Call{ID: "c1", Name: name, Args: json.RawMessage(args)}, nil)
}

// call is run's result.
func (hs *harness) call(name, args string) tool.Result {
	hs.t.Helper()
	return hs.run(name, args).Result
}

// seen is what a test server saw of a request.
type seen struct {
	method, path, rawPath, query, body string
	header                             http.Header
}

// recorder is a test server that records each request and answers with
// the handler's answer.
func recorder(t *testing.T, answer http.HandlerFunc) (*httptest.Server, chan seen) {
	t.Helper()
	ch := make(chan seen, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ch <- seen{r.Method, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, string(b), r.Header.Clone()}
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, ch
}

// jsonAnswer answers with body as JSON.
func jsonAnswer(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}
}
