package openaiapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"agentd/internal/gateway/openaiapi"
	"agentd/internal/testkit"
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
	// A runtime over SQLite whose agent answers with the echo model.
	defs := testkit.Agents{"assistant": testkit.Agent("assistant")}
	k, err := testkit.Open(ctx, dir, &testkit.Options{Agents: defs})
	if err != nil {
		log.Fatal(err)
	}
	defer k.Close()

	srv := httptest.NewServer(openaiapi.New(k.Runtime, defs, nil))
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
