package event

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// decodeBoth decodes data with Decode and with encoding/json alone.
func decodeBoth[T any](data []byte) (fast, slow T, fastErr, slowErr error) {
	e := Event{Data: data}
	fastErr = e.Decode(&fast)
	slowErr = json.Unmarshal(data, &slow)
	return
}

func checkSame[T any](t *testing.T, data []byte) {
	t.Helper()
	fast, slow, ferr, serr := decodeBoth[T](data)
	if (ferr == nil) != (serr == nil) {
		t.Fatalf("%q: Decode error %v, encoding/json error %v", data, ferr, serr)
	}
	if ferr == nil {
		if diff := cmp.Diff(slow, fast); diff != "" {
			t.Fatalf("%q: Decode differs from encoding/json (-json +Decode):\n%s", data, diff)
		}
	}
}

var flatSeeds = []string{
	`{"text":"hello","step":2}`,
	`{"text":"line\nbreak \"quoted\" \u00e9 \ud83d\ude00","source":"cli"}`,
	` { "text" : "spaced" , "silent" : true } `,
	`{"text":"a","text":"b"}`,
	`{"Text":"case"}`,
	`{"text":null,"step":null}`,
	`{"step":1.5}`, `{"step":1e2}`, `{"step":-0}`, `{"step":01}`, `{"step":99999999999999999999}`,
	`{"text":"x","extra":{"nested":[1,2]}}`,
	`{"id":"c1","name":"clock","output":"{\"time\":\"now\"}","is_error":false,"duration_ms":12}`,
	`{"text":"tab	inside"}`, "{\"text\":\"bad utf8 \xff\"}", `{"text":"é"}`,
	`{}`, ``, `null`, `[]`, `{"text":"unterminated`, `{"text":"x",}`, `{"text":"x"} trailing`, `{"silent":"yes"}`,
	`{"text":"look","images":[{"mime_type":"image/png","size":4,"data":"iVBORw=="}]}`,
	`{"text":"hop","source":"agent","origin":"ck3x","hops":3}`, `{"text":"hop","hops":-1}`, `{"hops":2.5}`,
	`{"text":"look","images":null}`, `{"text":"look","images":[]}`, `{"images":[{"data":"not base64"}]}`,
	`{"id":"c1","name":"shot","output":"[image]","duration_ms":3,"images":[{"mime_type":"image/gif","size":3,"data":"R0lG"}]}`,
}

func TestDecodeMatchesEncodingJSON(t *testing.T) {
	for _, s := range flatSeeds {
		checkSame[InputData](t, []byte(s))
		checkSame[TextData](t, []byte(s))
		checkSame[ToolResultData](t, []byte(s))
	}
}

// The fast path takes the payloads the engine itself writes.
func TestDecodeFastTakesOwnPayloads(t *testing.T) {
	for _, v := range []any{
		&InputData{Text: "hi there", Source: "api", IdempotencyKey: "k1"},
		&InputData{Text: "hop 3", Source: "agent", Origin: "ck3x", Silent: true, Hops: 3},
		&TextData{Text: "It is four o'clock.", Step: 3},
		&ToolResultData{ID: "c1", Name: "clock", Output: "ok", DurationMS: 4},
	} {
		b, _ := json.Marshal(v)
		var ok bool
		switch v.(type) {
		case *InputData:
			ok = decodeFast(b, new(InputData))
		case *TextData:
			ok = decodeFast(b, new(TextData))
		case *ToolResultData:
			ok = decodeFast(b, new(ToolResultData))
		}
		if !ok {
			t.Errorf("%s: not decoded by the fast path", b)
		}
	}
}

// Payloads with images are left to encoding/json, and decode whole.
func TestDecodeImages(t *testing.T) {
	in := InputData{Text: "look", Source: "cli", Images: []ImageRef{{MIMEType: "image/png", Size: 4, Data: []byte{0x89, 'P', 'N', 'G'}}}}
	res := ToolResultData{ID: "c1", Name: "shot", Output: "[image]", Images: []ImageRef{{MIMEType: "image/gif", Size: 3, Data: []byte("GIF")}}}
	for _, v := range []any{&in, &res} {
		b, _ := json.Marshal(v)
		e := Event{Data: b}
		switch v := v.(type) {
		case *InputData:
			if decodeFast(b, new(InputData)) {
				t.Errorf("%s: taken by the fast path", b)
			}
			var got InputData
			if err := e.Decode(&got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(*v, got); diff != "" {
				t.Errorf("InputData (-want +got):\n%s", diff)
			}
		case *ToolResultData:
			if decodeFast(b, new(ToolResultData)) {
				t.Errorf("%s: taken by the fast path", b)
			}
			var got ToolResultData
			if err := e.Decode(&got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(*v, got); diff != "" {
				t.Errorf("ToolResultData (-want +got):\n%s", diff)
			}
		}
	}
}

func FuzzDecodeFlat(f *testing.F) {
	for _, s := range flatSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSame[InputData](t, data)
		checkSame[TextData](t, data)
		checkSame[ToolResultData](t, data)
	})
}

// An agent event's payload reads back as it was written, each op.
func TestAgentDataRoundTrip(t *testing.T) {
	for _, op := range AgentOps() {
		want := AgentData{Op: op, ID: "ck3xq0v1w2e3r4t5y6u7i8o9", Type: "subagent", Parent: "assistant",
			Guard: "max_hops", Limit: 10, Value: 11, Target: "c043", Reason: "too many hops"}
		e := New(1, 2, Agent, want)
		var got AgentData
		if err := e.Decode(&got); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", op, diff)
		}
	}
}
