package openaiapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecodeRequest decodes arbitrary bodies: each is a valid request whose
// last message is the user's, or a 400/413 in OpenAI's error shape; the
// input made from a valid one ends with the last user message.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"model":"a","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"a","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`,
		`{"model":"a","messages":[{"role":"developer","content":[{"type":"text","text":"x"}]},{"role":"assistant","content":null},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`,
		`{"model":"a","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`,
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
		req, err := decodeRequest(strings.NewReader(body), 1<<16)
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
		for _, m := range req.messages {
			switch m.role {
			case roleSystem, roleUser, roleAssistant:
			default:
				t.Fatalf("body %q: role %q", body, m.role)
			}
		}
		for _, continued := range []bool{false, true} {
			if in := inputText(req.messages, continued); !strings.HasSuffix(in, last.text) {
				t.Fatalf("body %q: input %q does not end with %q", body, in, last.text)
			}
		}
	})
}
