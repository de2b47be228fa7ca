package action_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"

	"agentd/internal/action"
	"agentd/internal/secret"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// An action row becomes a tool: the model's arguments fill the request,
// the answer's extract is what the model reads.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"city": %q, "now": {"temp_c": 21.5}, "auth": %t}`, r.URL.Query().Get("q"), r.Header.Get("Authorization") == "Bearer k-123")
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	reg := tool.NewRegistry(nil)
	typ := action.Type(reg, &action.Options{
		// The test server is on 127.0.0.1, which the SSRF guard blocks
		// unless agentd.yaml's actions.allow_networks allows it.
		AllowNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Secrets:       secret.NewResolver("", &secret.Options{LookupEnv: func(string) (string, bool) { return "k-123", true }}),
	})
	spec := `{
		"description": "The weather now in a city.",
		"url": "` + srv.URL + `/v1/current?q={{city}}",
		"headers": {"Authorization": "Bearer ${env:WEATHER_KEY}"},
		"input": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
		"extract": {"template": "{{city}}: {{now.temp_c}} °C (authorized: {{auth}})"},
		"read_only": true,
		"allow_hosts": ["` + host + `"]
	}`
	err := typ.Handler.Activate(context.Background(), &store.Extension{Type: "action", Name: "weather", Spec: json.RawMessage(spec), Enabled: true, Version: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	out := reg.Run(context.Background(), &tool.Call{Name: "weather", Args: json.RawMessage(`{"city": "Zürich"}`)}, nil)
	fmt.Println(out.Result.Output)
	// Output: Zürich: 21.5 °C (authorized: true)
}
