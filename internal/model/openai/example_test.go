package openai_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"agentd/internal/model"
	"agentd/internal/model/openai"
)

func Example() {
	// A stand-in for an OpenAI-compatible server such as Ollama.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"model":"llama3.2","choices":[{"index":0,"delta":{"content":"Hello"}}]}`+"\n\n")
		io.WriteString(w, `data: {"model":"llama3.2","choices":[{"index":0,"delta":{"content":", world"},"finish_reason":"stop"}]}`+"\n\n")
		io.WriteString(w, `data: {"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3}}`+"\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()

	client := openai.New(&openai.Options{BaseURL: srv.URL + "/v1", Name: "ollama"})
	resp, err := client.Stream(context.Background(), &model.Request{
		Model:    "llama3.2",
		System:   "Be brief.",
		Messages: []model.Message{{Role: model.RoleUser, Content: "Say hello."}},
	}, func(d model.Delta) {
		fmt.Printf("delta %q\n", d.Text)
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Printf("%s (%s, stop=%s, %d in / %d out)\n", resp.Text, resp.Model, resp.StopReason, resp.Usage.InputTokens, resp.Usage.OutputTokens)
	// Output:
	// delta "Hello"
	// delta ", world"
	// Hello, world (llama3.2, stop=stop, 12 in / 3 out)
}
