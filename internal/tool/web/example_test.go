package web_test

import (
	"context"
	"fmt"

	"agentd/internal/agent"
	"agentd/internal/tool"
	"agentd/internal/tool/web"
	"agentd/internal/tool/web/webfake"
)

// A web_search through Brave's API (here its fake), the key read from
// the environment variable key_env names.
func ExampleTools() {
	fake := webfake.New(agent.SearchBrave, "brave-key", nil)
	defer fake.Close()
	tools := web.Tools(&web.Options{
		Search: agent.WebSearchConfig{
			Backend: agent.SearchBrave, URL: fake.URL, KeyEnv: "BRAVE_API_KEY", Results: 1,
			AllowNetworks: []string{"127.0.0.1/32"}, // the fake listens on loopback
		},
		LookupEnv: func(name string) (string, bool) { return "brave-key", name == "BRAVE_API_KEY" },
	})
	for _, t := range tools {
		if t.Spec().Name != "web_search" {
			continue
		}
		res, err := t.Call(context.Background(), &tool.Call{Args: []byte(`{"query":"agentd"}`), Session: "s"})
		fmt.Println(res.Output, err)
	}
	// Output:
	// 1. agentd — a runtime for agents — https://agentd.example/
	//    A self-hosted runtime for LLM agents. <nil>
}
