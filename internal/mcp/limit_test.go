package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// testLimits are small limits: every frame over 16 bytes is parsed.
func testLimits(text int) limits {
	return limits{small: 16, text: text, short: 4, binary: 40, frame: 1 << 20}
}

// limited passes in through a limitReader and returns what comes out.
func limited(t testing.TB, in string, framing int, lim limits) string {
	t.Helper()
	out, err := io.ReadAll(newLimitReader(iotest.HalfReader(strings.NewReader(in)), framing, lim))
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(out)
}

func textFrame(id int, text string) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{
		"content": []any{map[string]any{"type": "text", "text": text}}}})
	return string(b)
}

func TestLimitReaderPassesWhatFits(t *testing.T) {
	long := strings.Repeat("x", 100)
	in := []string{
		textFrame(1, "short"),
		// Outside a result's payload nothing is cut.
		`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"t","description":"` + long + `"}]}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + long + `"}}`,
		// Whitespace, escapes and numbers come out as they came.
		"  {\"id\" : 3 , \"result\" : {\"content\" : [ {\"text\":\"a\\u00e9\\n\\\"\"} ] , \"n\": -1.5e+3, \"t\": true, \"z\": null } }",
		`not JSON at all, but long enough to be parsed`,
		`{"result":{"content":[{"text":"unterminated`,
		`{"result":{"content":[{"text":"bad \x escape"}]}}`,
		`[1,2,3]`,
		`"a string"`,
		`{"result":{"content":["` + long + `"]} trailing bytes`,
	}
	for _, s := range in {
		for _, framing := range []int{framedLines, framedSSE} {
			frame := s + "\n"
			if framing == framedSSE {
				frame = "event: message\ndata: " + s + "\n\n"
			}
			lim := testLimits(1000)
			if got := limited(t, frame, framing, lim); got != frame {
				t.Errorf("framing %d changed\n%q\ninto\n%q", framing, frame, got)
			}
		}
		if got := limited(t, s, framedBody, testLimits(1000)); got != s {
			t.Errorf("body changed\n%q\ninto\n%q", s, got)
		}
	}
}

func decodeResult(t *testing.T, frame string) *sdk.CallToolResult {
	t.Helper()
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(frame), &msg); err != nil {
		t.Fatalf("frame %q: %v", frame, err)
	}
	var r sdk.CallToolResult
	if err := json.Unmarshal(msg.Result, &r); err != nil {
		t.Fatalf("result %s: %v", msg.Result, err)
	}
	return &r
}

func TestLimitReaderCutsPayloads(t *testing.T) {
	text := strings.Repeat("0123456789", 100) // 1000 bytes
	img := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 30))
	bigImg := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 60))
	tests := []struct {
		name    string
		frame   string
		texts   []string // the content's texts after the cut
		data    []int    // the images' sizes after the cut
		omitted float64
	}{
		{"one long text", textFrame(1, text), []string{text[:100]}, nil, 900},
		{"the budget is shared", `{"id":1,"result":{"content":[{"type":"text","text":"` + text[:80] + `"},{"type":"text","text":"` + text[:80] + `"}]}}`,
			[]string{text[:80], text[:20]}, nil, 60},
		{"short strings stay whole", `{"id":1,"result":{"content":[{"text":"` + text[:200] + `","type":"text"}]}}`,
			[]string{text[:100]}, nil, 100},
		{"result before id", `{"result":{"content":[{"type":"text","text":"` + text + `"}]},"jsonrpc":"2.0","id":7}`,
			[]string{text[:100]}, nil, 900},
		{"escapes are whole and count decoded", `{"id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat(`\u00e9`, 50) + `"}]}}`,
			[]string{strings.Repeat("é", 16)}, nil, 34 * 2},
		{"UTF-8 is whole", `{"id":1,"result":{"content":[{"type":"text","text":"` + strings.Repeat("é", 60) + `"}]}}`,
			[]string{strings.Repeat("é", 50)}, nil, 20},
		{"an image that fits", `{"id":1,"result":{"content":[{"type":"image","mimeType":"image/png","data":"` + img + `"}]}}`,
			nil, []int{30}, 0},
		{"an image too big is emptied", `{"id":1,"result":{"content":[{"type":"image","mimeType":"image/png","data":"` + bigImg + `"}]}}`,
			nil, []int{0}, float64(len(bigImg))},
		{"the binary budget is shared", `{"id":1,"result":{"content":[{"type":"image","mimeType":"image/png","data":"` + img + `"},{"type":"image","mimeType":"image/png","data":"` + img + `"}]}}`,
			nil, []int{30, 0}, float64(len(img))},
		{"existing _meta is kept", `{"id":1,"result":{"_meta":{"k":"v"},"content":[{"type":"text","text":"` + text + `"}]}}`,
			[]string{text[:100]}, nil, 900},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := limited(t, tt.frame+"\n"+textFrame(2, "next")+"\n", framedLines, testLimits(100))
			frames := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(frames) != 2 || frames[1] != textFrame(2, "next") {
				t.Fatalf("frames %q", frames)
			}
			if !strings.Contains(frames[0], `"id":`) {
				t.Errorf("the id was lost: %s", frames[0])
			}
			r := decodeResult(t, frames[0])
			var texts []string
			var data []int
			for _, c := range r.Content {
				switch c := c.(type) {
				case *sdk.TextContent:
					texts = append(texts, c.Text)
				case *sdk.ImageContent:
					data = append(data, len(c.Data))
				}
			}
			if fmt.Sprint(texts) != fmt.Sprint(tt.texts) || fmt.Sprint(data) != fmt.Sprint(tt.data) {
				t.Errorf("texts %q, images %v; want %q, %v", texts, data, tt.texts, tt.data)
			}
			got, _ := r.Meta[MetaOmitted].(float64)
			if got != tt.omitted {
				t.Errorf("omitted %v, want %v (meta %v)", got, tt.omitted, r.Meta)
			}
			if tt.name == "existing _meta is kept" && r.Meta["k"] != "v" {
				t.Errorf("meta %v", r.Meta)
			}
		})
	}
}

func TestLimitReaderDropsItemsPastTheHardLimit(t *testing.T) {
	items := make([]string, 200000)
	for i := range items {
		items[i] = fmt.Sprintf(`{"n":%d}`, i)
	}
	frame := `{"id":1,"result":{"content":[],"structuredContent":[` + strings.Join(items, ",") + `]}}`
	out := limited(t, frame+"\n", framedLines, testLimits(100))
	if len(out) > hardSlack+1000 {
		t.Errorf("%d bytes came out of %d", len(out), len(frame))
	}
	var r struct {
		Result struct {
			Structured []map[string]int `json:"structuredContent"`
			Meta       map[string]int   `json:"_meta"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	n := len(r.Result.Structured)
	if n == 0 || n == len(items) || r.Result.Structured[n-1]["n"] != n-1 || r.Result.Meta[MetaOmitted] == 0 {
		t.Errorf("kept %d items, meta %v", n, r.Result.Meta)
	}
}

func TestLimitReaderErrorsAndEvents(t *testing.T) {
	text := strings.Repeat("z", 500)
	errFrame := `{"jsonrpc":"2.0","id":4,"error":{"code":-32000,"message":"` + text + `"}}`
	out := limited(t, errFrame+"\n", framedLines, testLimits(100))
	var e struct {
		Error struct{ Message string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &e); err != nil || e.Error.Message != text[:100] {
		t.Errorf("error frame came out as %q (%v)", out, err)
	}

	sse := "id: 1\nevent: message\ndata: " + textFrame(1, text) + "\n\ndata: " + textFrame(2, "b") + "\n\n"
	out = limited(t, sse, framedSSE, testLimits(100))
	want := "id: 1\nevent: message\ndata: " + strings.Replace(textFrame(1, text[:100]), `}]}`, `}],"_meta":{"agentd/omitted":400}}`, 1) + "\n\ndata: " + textFrame(2, "b") + "\n\n"
	if out != want {
		t.Errorf("events\n%q\nwant\n%q", out, want)
	}

	body := limited(t, textFrame(3, text), framedBody, testLimits(100))
	if r := decodeResult(t, body); r.Content[0].(*sdk.TextContent).Text != text[:100] {
		t.Errorf("body %q", body)
	}
}

func FuzzLimitReader(f *testing.F) {
	f.Add([]byte(textFrame(1, strings.Repeat("a", 50))), uint8(10))
	f.Add([]byte(`{"result":{"content":[{"type":"image","data":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}]},"id":1}`), uint8(0))
	f.Add([]byte(`[{"id":1,"result":{"contents":[{"uri":"x","text":"\ud83d\ude00\ud83d\ude00\ud83d\ude00"}]}},{"id":2,"error":{"message":"\u00e9\u00e9\u00e9\u00e9"}}]`), uint8(3))
	f.Add([]byte(`{"result":{"structuredContent":{"a":[1,2,3,4,5,6,7,8,9],"b":{"c":"dddddddddddd"}}}}`), uint8(1))
	f.Fuzz(func(t *testing.T, in []byte, text uint8) {
		if bytes.IndexByte(in, '\n') >= 0 {
			return
		}
		frame := string(in) + "\n"
		// With budgets larger than the frame, nothing changes, valid or not.
		big := limits{small: 16, text: len(frame), short: 4, binary: len(frame), frame: 1 << 20}
		if got := limited(t, frame, framedLines, big); got != frame {
			t.Fatalf("changed\n%q\ninto\n%q", frame, got)
		}
		// With small budgets, valid JSON stays valid, and the id stays.
		out := limited(t, frame, framedLines, testLimits(int(text)))
		if !json.Valid(in) {
			return
		}
		if !strings.HasSuffix(out, "\n") || !json.Valid([]byte(out)) {
			t.Fatalf("valid %q came out invalid: %q", frame, out)
		}
		var a, b struct{ ID any }
		if json.Unmarshal(in, &a) == nil {
			json.Unmarshal([]byte(out), &b)
			if fmt.Sprint(a.ID) != fmt.Sprint(b.ID) {
				t.Fatalf("id %v became %v", a.ID, b.ID)
			}
		}
	})
}
