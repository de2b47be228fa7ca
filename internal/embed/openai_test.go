package embed

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"agentd/internal/vector"
)

// server is an OpenAI-compatible embeddings endpoint for tests. By default it
// embeds each input with a Hashed embedder, scaled by 2 so the client's
// normalisation is exercised, and answers in the encoding the request asks
// for. reply, if set, answers instead.
type server struct {
	t     *testing.T
	path  string
	reply func(w http.ResponseWriter, r *http.Request, req request, n int)

	mu   sync.Mutex
	reqs []request
	auth []string
}

func newServer(t *testing.T, path string) (*server, *httptest.Server) {
	s := &server{t: t, path: path}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != s.path {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		http.Error(w, "content type "+ct, http.StatusBadRequest)
		return
	}
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.auth = append(s.auth, r.Header.Get("Authorization"))
	n := len(s.reqs)
	s.mu.Unlock()
	if s.reply != nil {
		s.reply(w, r, req, n)
		return
	}
	writeEmbeddings(w, req)
}

func (s *server) requests() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]request(nil), s.reqs...)
}

// writeEmbeddings answers req the way OpenAI does, with the data in reverse
// order (clients must sort by index).
func writeEmbeddings(w http.ResponseWriter, req request) {
	h := NewHashed(8)
	vecs, _ := h.Embed(context.Background(), req.Input)
	type datum struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	var data []datum
	for i := len(vecs) - 1; i >= 0; i-- {
		v := vecs[i]
		for j := range v {
			v[j] *= 2
		}
		var e any = v
		if req.EncodingFormat == "base64" {
			e = base64.StdEncoding.EncodeToString(vector.Encode(v))
		}
		data = append(data, datum{"embedding", i, e})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model})
}

func fixture(name string) func(http.ResponseWriter, *http.Request, request, int) {
	return func(w http.ResponseWriter, _ *http.Request, _ request, _ int) {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}
}

var approx = cmpopts.EquateApprox(0, 1e-6)

func TestOpenAIFixtures(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		texts   []string
		float   bool
		want    [][]float32
	}{
		{"float", "float.json", []string{"a", "b"}, true, [][]float32{{0.6, 0.8, 0}, {0, 0, -1}}},
		{"base64", "base64.json", []string{"a", "b"}, false, [][]float32{{0.6, 0.8, 0}, {0, 0, -1}}},
		{"out of order", "out_of_order.json", []string{"a", "b", "c"}, false, [][]float32{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ts := newServer(t, "/v1/embeddings")
			s.reply = fixture(tt.fixture)
			c := NewOpenAI(&Options{BaseURL: ts.URL + "/v1/", APIKey: "sk-test", Float: tt.float})
			got, err := c.Embed(context.Background(), tt.texts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("vectors (-want +got):\n%s", diff)
			}
			format := "base64"
			if tt.float {
				format = ""
			}
			want := []request{{Model: DefaultModel, Input: tt.texts, EncodingFormat: format}}
			if diff := cmp.Diff(want, s.requests()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if s.auth[0] != "Bearer sk-test" {
				t.Errorf("Authorization = %q", s.auth[0])
			}
			if c.Dim() != 3 {
				t.Errorf("Dim = %d, want 3 learned from the response", c.Dim())
			}
		})
	}
}

// TestOllamaRoute talks to the route Ollama serves (/v1/embeddings on port
// 11434), with no API key and Ollama's response shape.
func TestOllamaRoute(t *testing.T) {
	s, ts := newServer(t, "/v1/embeddings")
	s.reply = fixture("ollama.json")
	c := NewOpenAI(&Options{BaseURL: ts.URL + "/v1", Model: "nomic-embed-text", Provider: "ollama"})
	got, err := c.Embed(context.Background(), []string{"hello"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]float32{{0.5, -0.5, 0.5, -0.5}}, got); diff != "" {
		t.Errorf("vectors (-want +got):\n%s", diff)
	}
	if s.auth[0] != "" {
		t.Errorf("Authorization sent without a key: %q", s.auth[0])
	}
	if c.Name() != "ollama:nomic-embed-text" {
		t.Errorf("Name = %q", c.Name())
	}
}

func TestOpenAIBatchesAndOrder(t *testing.T) {
	s, ts := newServer(t, "/embeddings")
	c := NewOpenAI(&Options{BaseURL: ts.URL, BatchSize: 2})
	texts := []string{"one", "", "two", "three", "  ", "four", "five"}
	got, err := c.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	var inputs [][]string
	for _, r := range s.requests() {
		inputs = append(inputs, r.Input)
	}
	if diff := cmp.Diff([][]string{{"one", "two"}, {"three", "four"}, {"five"}}, inputs); diff != "" {
		t.Errorf("batches (-want +got):\n%s", diff)
	}
	want := embedAll(t, NewHashed(8), texts...) // blank texts: zero vectors
	if diff := cmp.Diff(want, got, approx); diff != "" {
		t.Errorf("vectors (-want +got):\n%s", diff)
	}
}

func TestOpenAIDimensions(t *testing.T) {
	s, ts := newServer(t, "/embeddings")
	c := NewOpenAI(&Options{BaseURL: ts.URL, Dim: 8, SendDimensions: true, Float: true})
	if _, err := c.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if got := s.requests()[0]; got.Dimensions != 8 || got.EncodingFormat != "" {
		t.Errorf("request = %+v, want dimensions 8 and float encoding", got)
	}

	// A configured Dim the server does not honour is a bad response.
	c = NewOpenAI(&Options{BaseURL: ts.URL, Dim: 16})
	if _, err := c.Embed(context.Background(), []string{"x"}); !errors.Is(err, ErrBadResponse) {
		t.Errorf("err = %v, want ErrBadResponse", err)
	}
	if got := s.requests()[1]; got.Dimensions != 0 {
		t.Errorf("dimensions sent without SendDimensions: %+v", got)
	}
}

func TestOpenAILearnsDim(t *testing.T) {
	s, ts := newServer(t, "/embeddings")
	c := NewOpenAI(&Options{BaseURL: ts.URL})
	if c.Dim() != 0 {
		t.Fatalf("Dim before any response = %d", c.Dim())
	}
	got, err := c.Embed(context.Background(), []string{""})
	if err != nil || len(got) != 1 || got[0] != nil {
		t.Fatalf("blank text with unknown Dim: %v, %v; want one nil vector", got, err)
	}
	embedAll(t, c, "x")
	if c.Dim() != 8 {
		t.Fatalf("Dim = %d, want 8", c.Dim())
	}
	s.reply = fixture("float.json") // 3-element vectors now
	if _, err := c.Embed(context.Background(), []string{"a", "b"}); !errors.Is(err, ErrBadResponse) {
		t.Errorf("vectors of another length: err = %v, want ErrBadResponse", err)
	}
}

func TestOpenAIRetries(t *testing.T) {
	tests := []struct {
		name     string
		statuses []int // answers before success; 0 ends the list
		retries  int
		wantErr  error
		wantReqs int
	}{
		{"429 then success", []int{429}, 0, nil, 2},
		{"503 502 then success", []int{503, 502}, 0, nil, 3},
		{"500 forever", []int{500, 500, 500, 500, 500}, 2, ErrUnavailable, 3},
		{"429 no retries", []int{429, 429}, -1, ErrUnavailable, 1},
		{"401", []int{401}, 0, ErrAuth, 1},
		{"403", []int{403}, 0, ErrAuth, 1},
		{"400", []int{400}, 0, ErrRejected, 1},
		{"404 model", []int{404}, 0, ErrRejected, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ts := newServer(t, "/embeddings")
			s.reply = func(w http.ResponseWriter, r *http.Request, req request, n int) {
				if n <= len(tt.statuses) {
					w.Header().Set("Retry-After", "0")
					w.WriteHeader(tt.statuses[n-1])
					fmt.Fprintf(w, `{"error":{"message":"status %d for key sk-secret-123","type":"x"}}`, tt.statuses[n-1])
					return
				}
				writeEmbeddings(w, req)
			}
			c := NewOpenAI(&Options{BaseURL: ts.URL, APIKey: "sk-secret-123", MaxRetries: tt.retries, Backoff: time.Millisecond})
			got, err := c.Embed(context.Background(), []string{"hello"})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "sk-secret-123") {
				t.Errorf("error shows the API key: %v", err)
			}
			if err != nil && !strings.Contains(err.Error(), "[redacted]") {
				t.Errorf("error lost the server's message: %v", err)
			}
			if err == nil && len(got) != 1 {
				t.Errorf("%d vectors", len(got))
			}
			if n := len(s.requests()); n != tt.wantReqs {
				t.Errorf("%d requests, want %d", n, tt.wantReqs)
			}
		})
	}
}

func TestOpenAIRetryAfterTooLong(t *testing.T) {
	s, ts := newServer(t, "/embeddings")
	s.reply = func(w http.ResponseWriter, _ *http.Request, _ request, _ int) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(429)
	}
	c := NewOpenAI(&Options{BaseURL: ts.URL})
	if _, err := c.Embed(context.Background(), []string{"x"}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if n := len(s.requests()); n != 1 {
		t.Errorf("%d requests; a Retry-After of an hour should end the attempts", n)
	}
}

func TestOpenAIBadResponses(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"malformed json", `{"data":[{"index":0,"embedding":[1,2`},
		{"not json", `<html>gateway</html>`},
		{"too few", `{"data":[]}`},
		{"error object in 200", `{"error":{"message":"model not loaded"}}`},
		{"bad base64", `{"data":[{"index":0,"embedding":"!!!"}]}`},
		{"base64 odd length", `{"data":[{"index":0,"embedding":"AAAAAP8="}]}`},
		{"index out of range", `{"data":[{"index":3,"embedding":[1]}]}`},
		{"number", `{"data":[{"index":0,"embedding":7}]}`},
		{"empty vector", `{"data":[{"index":0,"embedding":[]}]}`},
		{"overflow", `{"data":[{"index":0,"embedding":[1e39]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ts := newServer(t, "/embeddings")
			s.reply = func(w http.ResponseWriter, _ *http.Request, _ request, _ int) { io.WriteString(w, tt.body) }
			c := NewOpenAI(&Options{BaseURL: ts.URL})
			if _, err := c.Embed(context.Background(), []string{"x"}); !errors.Is(err, ErrBadResponse) {
				t.Errorf("err = %v, want ErrBadResponse", err)
			}
			if n := len(s.requests()); n != 1 {
				t.Errorf("%d requests; a bad response is not retried", n)
			}
		})
	}
}

func TestOpenAIHangingServer(t *testing.T) {
	s, ts := newServer(t, "/embeddings")
	release := make(chan struct{})
	defer close(release)
	s.reply = func(w http.ResponseWriter, r *http.Request, _ request, _ int) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	c := NewOpenAI(&Options{BaseURL: ts.URL, Timeout: 50 * time.Millisecond, MaxRetries: 1, Backoff: time.Millisecond})
	_, err := c.Embed(context.Background(), []string{"x"})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if n := len(s.requests()); n != 2 {
		t.Errorf("%d requests, want 2 (one retry)", n)
	}
}

func TestOpenAIUnreachable(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL
	ts.Close()
	c := NewOpenAI(&Options{BaseURL: url, MaxRetries: -1})
	if _, err := c.Embed(context.Background(), []string{"x"}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func TestOpenAICancelled(t *testing.T) {
	s, ts := newServer(t, "/embeddings")
	ctx, cancel := context.WithCancel(context.Background())
	s.reply = func(w http.ResponseWriter, r *http.Request, _ request, _ int) {
		cancel()
		<-r.Context().Done()
	}
	_, err := NewOpenAI(&Options{BaseURL: ts.URL}).Embed(ctx, []string{"x"})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want context.Canceled only", err)
	}
}

func TestDecodeResponse(t *testing.T) {
	tests := []struct {
		name string
		body string
		n    int
		dim  int
		want [][]float32
		err  bool
	}{
		{"no index", `{"data":[{"embedding":[0,2]},{"embedding":[3,0]}]}`, 2, 0, [][]float32{{0, 1}, {1, 0}}, false},
		{"mixed index", `{"data":[{"index":1,"embedding":[0,2]},{"embedding":[3,0]}]}`, 2, 0, nil, true},
		{"duplicate index", `{"data":[{"index":0,"embedding":[0,2]},{"index":0,"embedding":[3,0]}]}`, 2, 0, nil, true},
		{"negative index", `{"data":[{"index":-1,"embedding":[0,2]}]}`, 1, 0, nil, true},
		{"lengths differ", `{"data":[{"index":0,"embedding":[0,2]},{"index":1,"embedding":[3,0,1]}]}`, 2, 0, nil, true},
		{"wrong dim", `{"data":[{"index":0,"embedding":[0,2]}]}`, 1, 3, nil, true},
		{"zero vector kept", `{"data":[{"index":0,"embedding":[0,0]}]}`, 1, 2, [][]float32{{0, 0}}, false},
		{"unpadded base64", `{"data":[{"index":0,"embedding":"AACAPw"}]}`, 1, 0, [][]float32{{1}}, false},
		{"nan in base64", `{"data":[{"index":0,"embedding":"AADAfw=="}]}`, 1, 0, nil, true},
		{"too many", `{"data":[{"embedding":[1]},{"embedding":[1]}]}`, 1, 0, nil, true},
		{"null data", `{"data":null}`, 1, 0, nil, true},
		{"none wanted", `{"data":[]}`, 0, 0, [][]float32{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeResponse([]byte(tt.body), tt.n, tt.dim)
			if tt.err {
				if !errors.Is(err, ErrBadResponse) {
					t.Fatalf("err = %v, want ErrBadResponse", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		h    string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"2", 2 * time.Second},
		{"1.5", 1500 * time.Millisecond},
		{"-1", 0},
		{"soon", 0},
		{"Thu, 02 Jan 2025 03:04:15 GMT", 10 * time.Second},
		{"Thu, 02 Jan 2025 03:04:00 GMT", 0},
		{"99999999", 86400 * time.Second},
	}
	for _, tt := range tests {
		if got := retryAfter(tt.h, now); got != tt.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tt.h, got, tt.want)
		}
	}
}

func FuzzDecodeResponse(f *testing.F) {
	for _, name := range []string{"float.json", "base64.json", "out_of_order.json", "ollama.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, 2, 0)
	}
	f.Add([]byte(`{"data":[{"embedding":"AACAPw"}]}`), 1, 1)
	f.Add([]byte(`{"error":"x"}`), 0, 0)
	f.Fuzz(func(t *testing.T, body []byte, n, dim int) {
		if n < 0 || n > 64 || dim < 0 {
			return
		}
		vecs, err := decodeResponse(body, n, dim)
		if err != nil {
			if !errors.Is(err, ErrBadResponse) {
				t.Fatalf("error %v does not wrap ErrBadResponse", err)
			}
			return
		}
		if len(vecs) != n {
			t.Fatalf("%d vectors for %d inputs", len(vecs), n)
		}
		for i, v := range vecs {
			if len(v) == 0 || len(v) != len(vecs[0]) || (dim > 0 && len(v) != dim) {
				t.Fatalf("vector %d has %d elements (first %d, dim %d)", i, len(v), len(vecs[0]), dim)
			}
			if m := norm(v); m != 0 && (m < 0.999 || m > 1.001) {
				t.Fatalf("vector %d has norm %v", i, m)
			}
		}
	})
}
