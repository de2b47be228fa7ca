package app

import (
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"agentd/internal/agent"
	"agentd/internal/model"
	"agentd/internal/model/anthropic"
	"agentd/internal/model/echo"
	"agentd/internal/model/openai"
)

// Models builds and caches one provider client per (provider, base URL,
// key variable), shared by every agent that uses it.
type Models struct {
	hc *http.Client
	mu sync.Mutex
	m  map[string]model.Provider
}

// ModelsOptions configure NewModels.
type ModelsOptions struct {
	HTTPClient *http.Client
}

// modelWriteBuffer is the write buffer of a connection to a model: most
// requests fit (with 8 tools and 10 turns of history one is about 8
// KiB), and an idle connection holds 16 KiB rather than 4.
const modelWriteBuffer = 16 << 10

// NewModels returns an empty provider cache.
func NewModels(o *ModelsOptions) *Models {
	hc := &http.Client{Transport: &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
		// A request (the conversation and the tools) goes out in one
		// write while it fits, rather than the buffer's first 4 KiB and
		// then the rest from a buffer made for it.
		WriteBufferSize: modelWriteBuffer,
	}}
	if o != nil && o.HTTPClient != nil {
		hc = o.HTTPClient
	}
	return &Models{hc: hc, m: make(map[string]model.Provider)}
}

// Provider returns the client for m.
func (ms *Models) Provider(m agent.Model) (model.Provider, error) {
	k := m.Provider + "\x00" + m.BaseURL + "\x00" + m.APIKeyEnv
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if p, ok := ms.m[k]; ok {
		return p, nil
	}
	var key string
	if m.APIKeyEnv != "" {
		key = os.Getenv(m.APIKeyEnv)
		if key == "" {
			return nil, fmt.Errorf("model %s/%s: environment variable %s is not set", m.Provider, m.Name, m.APIKeyEnv)
		}
	}
	var p model.Provider
	switch m.Provider {
	case agent.ProviderEcho, "":
		p = echo.New()
	case agent.ProviderOpenAI:
		p = openai.New(&openai.Options{BaseURL: m.BaseURL, APIKey: key, HTTPClient: ms.hc})
	case agent.ProviderAnthropic:
		p = anthropic.New(&anthropic.Options{BaseURL: m.BaseURL, APIKey: key, HTTPClient: ms.hc})
	default:
		return nil, fmt.Errorf("model %s/%s: unknown provider", m.Provider, m.Name)
	}
	ms.m[k] = p
	return p, nil
}
