package fakellm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"

	"agentd/internal/model/fakellm"
)

func Example() {
	script, err := fakellm.ParseScript("weather.fake", []byte(`
# First call of a turn: call a tool. Second call, after its result: answer.
match (?i)weather
call get_weather {"city": "Paris"}
---
say It is {{tool_result}} in Paris.
`))
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(fakellm.New(script, nil))
	defer srv.Close()

	ask := func(messages string) {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"fake","messages":`+messages+`}`))
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		var out struct {
			Choices []struct {
				Message struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Function struct{ Name, Arguments string } `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			panic(err)
		}
		c := out.Choices[0]
		for _, tc := range c.Message.ToolCalls {
			fmt.Printf("%s: call %s %s\n", c.FinishReason, tc.Function.Name, tc.Function.Arguments)
		}
		if c.Message.Content != nil {
			fmt.Printf("%s: %s\n", c.FinishReason, *c.Message.Content)
		}
	}
	ask(`[{"role":"user","content":"What's the weather?"}]`)
	ask(`[{"role":"user","content":"What's the weather?"},
		{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"sunny"}]`)
	ask(`[{"role":"user","content":"Thanks!"}]`)
	// Output:
	// tool_calls: call get_weather {"city":"Paris"}
	// stop: It is sunny in Paris.
	// stop: Thanks!
}

func ExampleParseScript_error() {
	_, err := fakellm.ParseScript("demo.fake", []byte("match hello\nsya hi\n"))
	fmt.Println(err)
	// Output:
	// demo.fake:2: unknown directive "sya"
}

func ExampleServer_Serve() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fakellm.New(nil, nil).Serve(ctx, ln) }()

	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(string(body))

	cancel()
	fmt.Println(<-done)
	// Output:
	// ok
	// <nil>
}
