package tool_test

import (
	"encoding/json"
	"testing"

	"agentd/internal/tool"
)

// DecodeArgs takes the arguments a schema lets through and refuses what
// the tool would otherwise read as something the model did not ask for.
func TestDecodeArgs(t *testing.T) {
	type args struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	for _, c := range []struct {
		raw  string
		want args
		ok   bool
	}{
		{``, args{}, true},
		{"  \n", args{}, true},
		{`{}`, args{}, true},
		{`{"query":"q","limit":3}`, args{"q", 3}, true},
		{`{"query":"q","limt":3}`, args{}, false},
		{`{"query":"q"} {"query":"r"}`, args{}, false},
		{`{"query":3}`, args{}, false},
	} {
		var got args
		err := tool.DecodeArgs(json.RawMessage(c.raw), &got)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("DecodeArgs(%q) = %+v, %v; want %+v, ok %v", c.raw, got, err, c.want, c.ok)
		}
	}
}
