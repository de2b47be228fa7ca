package openai

import (
	"agentd/internal/model/internal/wiretest"
	"encoding/json"
	"testing"

	"agentd/internal/model"
)

// FuzzEncodeRequest holds the hand-written body to what encoding/json
// makes of the same request, with and without kept encodings, and the
// kept encodings to a body encoded afresh.
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

// A message changed after it was sent, with a new Encoded as the rule
// says, is sent as it now is.
func TestEncodeRequestChangedMessage(t *testing.T) {
	c := New(nil)
	req := &model.Request{Model: "m", Messages: []model.Message{{Role: model.RoleUser, Content: "one", Wire: new(model.Encoded)}}}
	if _, err := c.encodeRequest(req, true); err != nil {
		t.Fatal(err)
	}
	req.Messages[0].Content, req.Messages[0].Wire = "two", new(model.Encoded)
	got, err := c.encodeRequest(req, true)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"messages":[{"role":"user","content":"two"}],"model":"m","stream":true,"stream_options":{"include_usage":true}}`
	if string(got) != want {
		t.Errorf("body = %s, want %s", got, want)
	}
}

// benchRequest is a turn's second request: a conversation of 10 turns and
// eight tools, each kept encoded when cached.
func benchRequest(cached bool) *model.Request {
	req := &model.Request{Model: "fake", System: "You are a helpful, friendly assistant. Answer clearly and concisely."}
	for i := range 10 {
		req.Messages = append(req.Messages,
			model.Message{Role: model.RoleUser, Content: "What's the time in Zürich, and is it raining there? Turn " + string(rune('a'+i))},
			model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_1", Name: "clock", Args: json.RawMessage(`{"tz":"Europe/Zurich"}`)}}},
			model.Message{Role: model.RoleTool, ToolCallID: "call_1", ToolName: "clock", Content: "2026-11-25T14:05:00+01:00"},
			model.Message{Role: model.RoleAssistant, Content: "It is 14:05 in Zürich; I cannot see the weather from here."})
	}
	schema := json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"words to look for"},"limit":{"type":"integer","minimum":1,"maximum":50}},"required":["query"],"additionalProperties":false}`)
	for _, n := range []string{"clock", "search_history", "wm_get", "wm_set", "wm_delete", "recall", "remember", "skill"} {
		req.Tools = append(req.Tools, model.ToolSpec{Name: n, Description: "The " + n + " tool: what it does, when to use it, and what it returns.", Parameters: schema})
	}
	if cached {
		for i := range req.Messages {
			req.Messages[i].Wire = new(model.Encoded)
		}
		for i := range req.Tools {
			req.Tools[i].Wire = new(model.Encoded)
		}
	}
	t := 0.7
	req.Temperature, req.TopP = &t, &t
	return req
}

// BenchmarkEncodeRequest: a step's request body (request build), by
// encoding/json (the reference), by hand, and by hand from kept encodings.
func BenchmarkEncodeRequest(b *testing.B) {
	c := New(nil)
	for _, bc := range []struct {
		name   string
		cached bool
		enc    func(*model.Request) ([]byte, error)
	}{
		{"encoding-json", false, func(r *model.Request) ([]byte, error) { return referenceBody(c, r, true) }},
		{"by-hand", false, func(r *model.Request) ([]byte, error) { return c.encodeRequest(r, true) }},
		{"kept", true, func(r *model.Request) ([]byte, error) { return c.encodeRequest(r, true) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			req := benchRequest(bc.cached)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.enc(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
