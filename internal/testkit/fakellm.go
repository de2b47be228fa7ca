package testkit

import (
	"net/http/httptest"
	"testing"

	"agentd/internal/model"
	"agentd/internal/model/fakellm"
	"agentd/internal/model/openai"
)

// FakeLLM runs fakellm with script (docs/fakellm.md) on a loopback port
// until t ends, and returns the OpenAI client pointed at it: a model whose
// answers take the whole wire path.
func FakeLLM(t testing.TB, script string) model.Provider {
	t.Helper()
	p, stop, err := startFakeLLM(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return p
}

func startFakeLLM(script string) (model.Provider, func(), error) {
	s, err := fakellm.ParseScript("testkit.fake", []byte(script))
	if err != nil {
		return nil, nil, err
	}
	srv := httptest.NewServer(fakellm.New(s, nil))
	return openai.New(&openai.Options{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()}), srv.Close, nil
}
