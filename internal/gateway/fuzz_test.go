package gateway_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"agentd/internal/gateway"
)

// FuzzMessageBody posts arbitrary bodies as messages: each is accepted or
// refused with a 4xx and the {error, code} body, never a server error.
func FuzzMessageBody(f *testing.F) {
	for _, s := range []string{
		`{"text":"hello"}`,
		`{"text":"x","idempotency_key":"k","system":true,"silent":true,"origin":"cron","source":"test"}`,
		`{"text":""}`,
		`{"text":null}`,
		`{"text":"x","extra":1}`,
		`[]`,
		`{"text":"\u0000"}`,
		`{"text":"x"}{}`,
		``,
		`{`,
	} {
		f.Add(s)
	}
	e := newEnv(f, setup{})
	f.Fuzz(func(t *testing.T, body string) {
		status, _, b := e.doT(t, "POST", "/v1/sessions/a/fuzz/messages", body)
		switch {
		case status == 202:
			var mr gateway.MessageResponse
			if err := json.Unmarshal(b, &mr); err != nil || mr.Turn <= 0 {
				t.Fatalf("202 %s: %v", b, err)
			}
		case status >= 400 && status < 500:
			var er gateway.Error
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&er); err != nil || er.Error == "" || er.Code == "" {
				t.Fatalf("%d %s: %v", status, b, err)
			}
		default:
			t.Fatalf("body %q: status %d %s", body, status, b)
		}
	})
}
