package embed_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"agentd/internal/embed"
	"agentd/internal/vector"
)

func ExampleHashed() {
	h := embed.NewHashed(0)
	v, err := h.Embed(context.Background(), []string{
		"The deploy to staging failed",
		"staging deployment failure",
		"The user prefers dark mode",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(h.Name(), len(v[0]))
	fmt.Println(vector.Dot(v[0], v[1]) > vector.Dot(v[0], v[2]))
	// Output:
	// hashed-ngram-384 384
	// true
}

func ExampleNewOpenAI() {
	// A stand-in for an OpenAI-compatible server such as Ollama.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[3,4]}]}`)
	}))
	defer srv.Close()

	e := embed.NewOpenAI(&embed.Options{BaseURL: srv.URL + "/v1", Model: "nomic-embed-text", Provider: "ollama"})
	v, err := e.Embed(context.Background(), []string{"hello"})
	fmt.Println(e.Name(), v, err, e.Dim())
	// Output:
	// ollama:nomic-embed-text [[0.6 0.8]] <nil> 2
}
