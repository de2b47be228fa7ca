package openaiapi

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"agentd/internal/model"
	"agentd/internal/prompttag"
)

// seedPNG is a 1×1 PNG image, base64.
const seedPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

// FuzzDecodeRequest decodes arbitrary bodies: each is a valid request whose
// last message is the user's, or a 400/413 in OpenAI's error shape; the
// input made from a valid one ends with the last user message.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"a","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"a","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`,
		`{"model":"a","messages":[{"role":"developer","content":[{"type":"text","text":"x"}]},{"role":"assistant","content":null},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`,
		`{"model":"a","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`,
		`{"model":"a","messages":[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + seedPNG + `","detail":"low"}}]}]}`,
		`{"model":"a","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + seedPNG + `"}}]},{"role":"assistant","content":"ok"},{"role":"user","content":"and?"}]}`,
		`{"model":"a","messages":[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,` + seedPNG + `"}}]}]}`,
		`{"model":"a","messages":[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"DATA:Image/PNG;name=a.png;BASE64,` + seedPNG + `"}}]}]}`,
		`{"model":"a","messages":[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo"}}]}]}`,
		`{"model":"a","messages":[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"data:image/png;base64,-_-_"}}]}]}`,
		`{"model":"a","messages":[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}`,
		`{"model":"a","messages":[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"data:,x"}}]}]}`,
		`{"model":"a","messages":[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":"data:image/png;base64,AAAA"}]}]}`,
		`{"model":"a","messages":[{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + seedPNG + `"}}]},{"role":"user","content":"hi"}]}`,
		`{"model":"a","messages":[{"role":"user","content":"hi"}],"tools":[],"tool_choice":"auto","n":1,"user":"u"}`,
		`{"model":"a","messages":[{"role":"user","content":"hi"}],"tools":[{}]}`,
		`{"model":"a","messages":[{"role":"tool","content":"x"}]}`,
		`{"model":"a","messages":[{"role":"user","content":7}]}`,
		`{"model":"a","messages":[null]}`,
		`{"model":"a","messages":[{"role":"user","content":[null,1,"x"]}]}`,
		`{"model":"a","n":null,"response_format":{"type":"json_object"},"messages":[]}`,
		`{"model":"a","MESSAGES":[{"ROLE":"user","CONTENT":"hi"}]}`,
		`{"model":"a"}{"model":"b"}`,
		`null`, `[]`, `"x"`, ``, `{`, `{"model":"\ud800"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, err := decodeRequest(strings.NewReader(body), -1, 1<<16)
		if err != nil {
			if req != nil {
				t.Fatal("both a request and an error")
			}
			if err.status != 400 && err.status != 413 || err.typ != typeInvalid || err.message == "" {
				t.Fatalf("body %q: error %+v", body, err)
			}
			b, jerr := json.Marshal(err.body())
			if jerr != nil || !json.Valid(b) {
				t.Fatalf("error body %q: %v", b, jerr)
			}
			return
		}
		if req.model == "" || len(req.messages) == 0 {
			t.Fatalf("body %q: accepted %+v", body, req)
		}
		last := req.messages[len(req.messages)-1]
		if last.role != roleUser || strings.TrimSpace(last.text) == "" {
			t.Fatalf("body %q: last message %+v", body, last)
		}
		if len(req.images) != len(last.images) {
			t.Fatalf("body %q: %d images sent, the last message has %d", body, len(req.images), len(last.images))
		}
		for _, m := range req.messages {
			switch m.role {
			case roleSystem, roleUser, roleAssistant:
			default:
				t.Fatalf("body %q: role %q", body, m.role)
			}
			if len(m.images) > 0 && m.role != roleUser {
				t.Fatalf("body %q: images in a %s message", body, m.role)
			}
			// Every image accepted is one the runtime accepts.
			if err := model.CheckImages(m.images); err != nil {
				t.Fatalf("body %q: accepted images the runtime refuses: %v", body, err)
			}
			if n := strings.Count(m.shown, "[image]"); n < len(m.images) {
				t.Fatalf("body %q: %d images shown as %q", body, len(m.images), m.shown)
			}
		}
		for _, continued := range []bool{false, true} {
			if in := inputText(req.messages, continued); !strings.HasSuffix(in, prompttag.Escape(last.text, wrapperTags)) {
				t.Fatalf("body %q: input %q does not end with %q", body, in, last.text)
			}
		}
	})
}

func seedPNGBytes(t testing.TB) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(seedPNG)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
