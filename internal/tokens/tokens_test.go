package tokens

import (
	"encoding/json"
	"math"
	"os"
	"testing"
	"unicode"

	"agentd/internal/model"
)

// The reference counts in testdata/reference.json come from OpenAI's BPE
// vocabularies (o200k_base, cl100k_base); the estimate must stay close to
// them over varied text: prose in several scripts, code, JSON, URLs, ids.
func TestTextAgainstReference(t *testing.T) {
	b, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Text  string `json:"text"`
		O200k int    `json:"o200k_base"`
	}
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	var est, ref int
	for _, r := range rows {
		got := Text(r.Text)
		est += got
		ref += r.O200k
		if dev := math.Abs(float64(got-r.O200k)) / float64(r.O200k); dev > 0.45 {
			t.Errorf("%q: estimate %d, reference %d (off by %.0f%%)", r.Text, got, r.O200k, dev*100)
		}
	}
	if dev := math.Abs(float64(est-ref)) / float64(ref); dev > 0.15 {
		t.Errorf("over the corpus: estimate %d, reference %d (off by %.0f%%)", est, ref, dev*100)
	}
	t.Logf("corpus: estimate %d, reference %d", est, ref)
}

func TestRequest(t *testing.T) {
	r := &model.Request{System: "be brief", Messages: []model.Message{
		{Role: model.RoleUser, Content: "hello there"},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "1", Name: "clock", Args: json.RawMessage(`{}`)}}},
		{Role: model.RoleTool, Content: "12:00", ToolCallID: "1"},
	}, Tools: []model.ToolSpec{{Name: "clock", Description: "the time", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	n := Request(r)
	if n < 20 || n > 60 {
		t.Errorf("Request = %d", n)
	}
	if Text("") != 0 || Messages(nil) != 0 {
		t.Error("empty input has tokens")
	}
}

// An image costs ImageTokens, however large it is.
func TestMessageImages(t *testing.T) {
	small := model.Image{MIMEType: "image/png", Data: make([]byte, 10)}
	large := model.Image{MIMEType: "image/png", Data: make([]byte, 4<<20)}
	text := model.Message{Role: model.RoleUser, Content: "what is in the picture?"}
	tests := []struct {
		name   string
		images []model.Image
		want   int // tokens beyond the text's
	}{
		{"none", nil, 0},
		{"one small", []model.Image{small}, ImageTokens},
		{"one large", []model.Image{large}, ImageTokens},
		{"three", []model.Image{small, large, small}, 3 * ImageTokens},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := text
			m.Images = tt.images
			if got := Message(&m) - Message(&text); got != tt.want {
				t.Errorf("images add %d tokens, want %d", got, tt.want)
			}
		})
	}
	tool := model.Message{Role: model.RoleTool, Content: "[image]", ToolCallID: "c1", Images: []model.Image{large}}
	r := &model.Request{Messages: []model.Message{text, tool}}
	if got, want := Request(r), Message(&text)+Message(&tool); got != want || got < ImageTokens {
		t.Errorf("Request = %d, want %d", got, want)
	}
	// Exact counting counts images alike, so calibration compares like
	// with like.
	bytesCount := func(s string) int { return len(s) }
	plain := &model.Request{Messages: []model.Message{text}}
	if got, want := CountRequest(r, bytesCount)-CountRequest(plain, bytesCount), perMessage+len(tool.Content)+ImageTokens; got != want {
		t.Errorf("CountRequest: the tool message with an image adds %d, want %d", got, want)
	}
}

func TestCalibrator(t *testing.T) {
	var c Calibrator
	if got := c.Scale("m", 100); got != 100 {
		t.Errorf("uncalibrated Scale = %d", got)
	}
	c.Observe("m", 100, 120)
	if got := c.Scale("m", 100); got != 120 {
		t.Errorf("after one report Scale = %d, want 120", got)
	}
	for range 20 {
		c.Observe("m", 100, 150)
	}
	if r, _ := c.Ratio("m"); math.Abs(r-1.5) > 0.01 {
		t.Errorf("ratio %.3f, want about 1.5", r)
	}
	c.Observe("m", 100, 100000) // clamped
	if r, _ := c.Ratio("m"); r > maxRatio {
		t.Errorf("ratio %.3f above the bound", r)
	}
	c.Observe("other", 0, 10)
	if _, ok := c.Ratio("other"); ok {
		t.Error("a zero estimate was recorded")
	}
}

func FuzzText(f *testing.F) {
	f.Add("hello, world")
	f.Add("会議のメモ")
	f.Fuzz(func(t *testing.T, s string) {
		n := Text(s)
		if n < 0 || (s != "" && n == 0 && len([]rune(s)) > 0 && !onlySpace(s)) || n > len(s)+1 {
			t.Fatalf("Text(%q) = %d", s, n)
		}
	})
}

func onlySpace(s string) bool {
	for _, r := range s {
		if r != ' ' && r != '\t' && r != '\n' && r != '\r' && r != '\v' && r != '\f' && r != 0x85 && r != 0xA0 && !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

func BenchmarkText(b *testing.B) {
	s := "The quick brown fox jumps over the lazy dog; func main() { fmt.Println(42) } https://example.com/a/b?c=d"
	b.ReportAllocs()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		Text(s)
	}
}

// The embedded vocabularies count exactly what the reference says.
func TestBPEMatchesReference(t *testing.T) {
	b, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Text   string `json:"text"`
		O200k  int    `json:"o200k_base"`
		Cl100k int    `json:"cl100k_base"`
	}
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	var bpe BPE
	o200k, cl100k := bpe.Counter("openai", "gpt-4o-mini"), bpe.Counter("openai", "gpt-4-turbo")
	if o200k == nil || cl100k == nil {
		t.Fatal("no counter for gpt-4o-mini or gpt-4-turbo")
	}
	for _, r := range rows {
		if got := o200k(r.Text); got != r.O200k {
			t.Errorf("o200k %q: %d, want %d", r.Text, got, r.O200k)
		}
		if got := cl100k(r.Text); got != r.Cl100k {
			t.Errorf("cl100k %q: %d, want %d", r.Text, got, r.Cl100k)
		}
	}
	for _, m := range [][2]string{{"openai", "llama3.2"}, {"anthropic", "claude-sonnet-4-5"}, {"openai", "fake"}} {
		if bpe.Counter(m[0], m[1]) != nil {
			t.Errorf("%s/%s has a counter", m[0], m[1])
		}
	}
}
