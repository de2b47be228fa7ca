package openai

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecodeChunk holds decodeChunk to encoding/json: whatever it decodes,
// encoding/json decodes without error to the same chunk.
func FuzzDecodeChunk(f *testing.F) {
	// Every chunk of the recorded streams.
	files, _ := filepath.Glob("testdata/*.sse")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if data, ok := strings.CutPrefix(line, "data:"); ok {
				f.Add(strings.TrimSpace(data))
			}
		}
	}
	for _, s := range []string{
		`{"choices":[{"index":0,"delta":{"Content":"x"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"a","content":"b"}}]}`,
		`{"choices":[{"index":1.0,"delta":{"content":"a\u00e9\n"}}],"usage":null}`,
		`{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"x"}]},"finish_reason":null}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":null,"id":"c","function":{"name":"f","arguments":{"a":1}}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"function":null}]}}],"usage":{"prompt_tokens":9223372036854775808}}`,
		`{"object":"error","message":"m","type":"t","code":400}`,
		` {"choices":null,"x":[1,{"y":"\""}],"model":"m\xff"} `,
		// Not JSON, each in a way a reader that trusts its input misses.
		`{"x":1,}`, `{"x":1 "model":"m"}`, `{"x":[1,]}`, `{"x":[1 2]}`, `{"x":01}`, `{"x":1.}`, `{"x":-}`,
		`{"x":1e}`, `{"x":"\q"}`, `{"x":"\u12"}`, "{\"x\":\"\t\"}", `{"x":tru}`, `{"x":nul}`, `{"model":"m"}x`,
		`{"x":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`, `{"choices":[{"index":1,}]}`, `{"model" "m"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		var got chunk
		if !decodeChunk(data, &got) {
			if diff := cmp.Diff(chunk{}, got); diff != "" {
				t.Fatalf("decodeChunk changed the chunk without decoding it:\n%s", diff)
			}
			return
		}
		var want chunk
		if err := json.Unmarshal([]byte(data), &want); err != nil {
			t.Fatalf("decodeChunk decoded %q, which encoding/json refuses: %v", data, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("decodeChunk(%q) differs from encoding/json (-want +got):\n%s", data, diff)
		}
	})
}

// BenchmarkDecodeChunk: one streamed text chunk (provider stream decode),
// by encoding/json and by decodeChunk.
func BenchmarkDecodeChunk(b *testing.B) {
	data := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764000000,"model":"fake","choices":[{"index":0,"delta":{"content":"Hello, how"},"finish_reason":null}]}`
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var ch chunk
			if err := json.Unmarshal([]byte(data), &ch); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decodeChunk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var ch chunk
			if !decodeChunk(data, &ch) {
				b.Fatal("not decoded")
			}
		}
	})
}
