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
