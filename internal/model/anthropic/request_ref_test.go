package anthropic

import (
	"encoding/json"
	"testing"

	"agentd/internal/model"
	"agentd/internal/model/internal/wiretest"
)

// The request body as encoding/json makes it from a map: what
// encodeRequest writes must decode to the same (FuzzEncodeRequest).

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// referenceBody is the body encodeRequest must be equal to.
func referenceBody(c *Client, req *model.Request, stream bool) ([]byte, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	body := map[string]any{
		"model":      req.Model,
		"max_tokens": maxTokens,
		"messages":   convertMessages(req.Messages),
	}
	if stream {
		body["stream"] = true
	}
	if req.System != "" {
		body["system"] = req.System
	}
	if len(req.Tools) > 0 {
		tools := make([]wireTool, 0, len(req.Tools))
		for _, t := range req.Tools {
			schema, err := wiretest.RefSchema(t)
			if err != nil {
				return nil, err
			}
			tools = append(tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema})
		}
		body["tools"] = tools
	}
	if req.Temperature != nil {
		body["temperature"] = *req.Temperature
	}
	if req.TopP != nil {
		body["top_p"] = *req.TopP
	}
	if len(req.Stop) > 0 {
		body["stop_sequences"] = req.Stop
	}
	for k, v := range req.Extra {
		if !reserved(k) {
			body[k] = v
		}
	}
	return wiretest.RefEncode(body)
}

// FuzzEncodeRequest holds the body to what encoding/json makes of the
// same request, with and without kept encodings of the tools.
func FuzzEncodeRequest(f *testing.F) {
	f.Add("You are helpful.", "hi <b>&</b>", `{"a":1}`, `{"type":"object"}`, "seed", 0.7, false, true)
	f.Add("", "Zürich\u2028\x00\"\\", `"{\"tz\": \"Eur"`, ` { "type" : "object" } `, "top_k", 1e-9, true, false)
	f.Add("s", "", "", "", "stream", 1e21, true, true)
	c := New(&Options{BaseURL: "http://x"})
	f.Fuzz(func(t *testing.T, system, text, args, schema, key string, temp float64, images, stream bool) {
		want, werr := referenceBody(c, wiretest.FuzzRequest(system, text, args, schema, key, temp, images, false), stream)
		for _, cached := range []bool{false, true} {
			req := wiretest.FuzzRequest(system, text, args, schema, key, temp, images, cached)
			for range 2 { // the second time from what the first kept
				got, err := c.encodeRequest(req, stream)
				if (err != nil) != (werr != nil) {
					t.Fatalf("cached %v: error %v, encoding/json's %v", cached, err, werr)
				}
				if err == nil && !wiretest.SameJSON(t, got, want) {
					t.Fatalf("cached %v: body differs from encoding/json's:\n got %s\nwant %s", cached, got, want)
				}
			}
		}
	})
}
