package main

import (
	"encoding/json"
	"strings"
	"testing"

	"agentd/internal/gateway"
	"agentd/internal/store"
)

// Through the daemon, a query parameter whose values are a list refuses
// any other value with a 400 bad_request naming them.
func TestEnumeratedParametersThroughTheDaemon(t *testing.T) {
	t.Parallel()
	dir := dataDir(t, map[string]string{"agents/a.yaml": openaiAgent(fake(t, "say hi\n"), "")})
	serve(t, dir)
	hc := unixHTTP(dir)
	for _, c := range []struct {
		method, path, body, want string
	}{
		{"GET", "/v1/sessions?state=bogus", "", "state: \"bogus\" is not one of " + strings.Join(store.States(), ", ")},
		{"GET", "/v1/usage?group=week", "", "group: \"week\" is not one of " + strings.Join(store.UsageGroups(), ", ")},
		{"GET", "/v1/memory?agent=a&q=x&shared=yes", "", "shared: want true or false"},
		{"POST", "/v1/sessions/a/k/messages?wait=yes", `{"text":"x"}`, "wait: want true or false"},
		{"POST", "/v1/sessions/a/k/messages?stream=on", `{"text":"x"}`, "stream: want true or false"},
	} {
		a := call(t, hc, c.method, c.path, c.body)
		var er gateway.Error
		json.Unmarshal([]byte(a.body), &er)
		if a.status != 400 || er.Code != "bad_request" || !strings.Contains(er.Error, c.want) {
			t.Errorf("%s %s: %d %s, want a 400 saying %s", c.method, c.path, a.status, a.body, c.want)
		}
	}
	if r := run(t, dir, "sessions"); strings.Contains(r.stdout, "a/k") {
		t.Errorf("a refused message made a session:\n%s", r.stdout)
	}
}
