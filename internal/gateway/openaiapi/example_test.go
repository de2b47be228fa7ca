package openaiapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"agentd/internal/agent"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/gateway/openaiapi"
	"agentd/internal/model/echo"
	"agentd/internal/runtime"
	"agentd/internal/store/sqlite"
	"agentd/internal/tool"
)

// ExampleNew serves an agent (here with the offline echo model) as an
// OpenAI model and sends it a message the way an OpenAI client does.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "agentd-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "agentd.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	defs := agents{"assistant": {ID: "assistant", Name: "Assistant", Model: agent.Model{Provider: agent.ProviderEcho, Name: "echo"}}}
	bus := event.NewBus()
	rt := runtime.New(&runtime.Options{Store: st, Agents: defs, Bus: bus,
		Engine: engine.New(&engine.Options{Live: bus, Models: models{echo.New()}, Tools: tool.NewRegistry(nil)})})
	defer rt.Close(ctx)

	srv := httptest.NewServer(openaiapi.New(rt, defs, nil))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(
		`{"model": "assistant", "user": "alice", "messages": [{"role": "user", "content": "hello there"}]}`))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var c openaiapi.ChatCompletion
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.StatusCode, resp.Header.Get(openaiapi.SessionHeader))
	fmt.Println(c.Object, c.Model, c.Choices[0].FinishReason)
	fmt.Println(c.Choices[0].Message.Content)
	// Output:
	// 200 alice
	// chat.completion assistant stop
	// hello there
}
