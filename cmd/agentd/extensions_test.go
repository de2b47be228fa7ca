package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// An agent creates an HTTP action in the middle of a conversation with its
// extensions tool, and calls it in the next turn; a person disables it and
// the next request no longer offers it. Through `agentd serve`, then the
// same in process.
func TestAgentMakesAnActionMidConversation(t *testing.T) {
	for _, viaDaemon := range []bool{true, false} {
		t.Run(fmt.Sprintf("daemon=%v", viaDaemon), func(t *testing.T) {
			var mu sync.Mutex
			var cities []string
			weather := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				cities = append(cities, r.URL.Query().Get("city"))
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"temp": 21, "unit": "C"}`)
			}))
			defer weather.Close()
			host := strings.TrimPrefix(weather.URL, "http://")
			// The URL template's {{city}} is written with JSON escapes,
			// which fakellm passes through as they are.
			spec := fmt.Sprintf(`{"description":"The temperature in a city now","url":"http://%s/w?city=\u007b\u007bcity}}",`+
				`"allow_hosts":["%s"],"input":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},`+
				`"extract":{"path":"temp"},"read_only":true}`, host, host)
			script := "match ^make\ncall extensions {\"op\":\"put\",\"type\":\"action\",\"name\":\"weather\",\"spec\":" + spec +
				"}\n---\nsay made: {{tool_result}}\n\nmatch ^weather\ncall weather {\"city\": \"Paris\"}\n---\nsay it is {{tool_result}}\n\nmatch *\nsay ok\n"
			rec := fakeRec(t, script)
			dir := dataDir(t, map[string]string{
				"agentd.yaml":           "actions:\n  allow_networks: [127.0.0.1/32]\n",
				"agents/assistant.yaml": openaiAgent(rec.addr, "tools:\n  allow: [extensions, weather, clock]\n"),
			})
			if viaDaemon {
				serve(t, dir)
			}
			out := okRun(t, dir, "send", "assistant", "make a weather tool")
			mustContain(t, out, "made:")
			mustContain(t, out, `"provenance":"agent:assistant"`)
			out = okRun(t, dir, "send", "assistant", "weather in Paris?")
			mustContain(t, out, "it is 21")
			mu.Lock()
			got := slices.Clone(cities)
			mu.Unlock()
			if !slices.Equal(got, []string{"Paris"}) {
				t.Fatalf("the weather service saw %q", got)
			}
			if tools := rec.lastTools(t); !slices.Contains(tools, "weather") {
				t.Fatalf("the action is not offered: %q", tools)
			}
			okRun(t, dir, "ext", "disable", "action/weather")
			okRun(t, dir, "send", "assistant", "anything else")
			if tools := rec.lastTools(t); slices.Contains(tools, "weather") {
				t.Fatalf("a disabled action is still offered: %q", tools)
			}
		})
	}
}
