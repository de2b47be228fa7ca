package files

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/tool"
	"agentd/internal/workspace"
)

// benchTools returns the tools over a workspace in a TempDir, filled by
// fill.
func benchTools(b *testing.B, fill func(dir string)) map[string]tool.Tool {
	b.Helper()
	base := b.TempDir()
	set := workspace.NewSet(func(id string) (string, error) { return filepath.Join(base, id), nil })
	b.Cleanup(func() { set.Close() })
	dir := filepath.Join(base, "a")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	fill(dir)
	out := map[string]tool.Tool{}
	for _, t := range Tools(set, nil) {
		out[t.Spec().Name] = t
	}
	return out
}

func benchCall(b *testing.B, t tool.Tool, args string) string {
	res, err := t.Call(context.Background(), &tool.Call{Agent: "a", Args: json.RawMessage(args)})
	if err != nil {
		b.Fatal(err)
	}
	return res.Output
}

// BenchmarkGrep100k: grep over a workspace of 100,000 small files (100
// folders of 1,000), one in a thousand holding the match.
func BenchmarkGrep100k(b *testing.B) {
	body := strings.Repeat("func handle(w http.ResponseWriter, r *http.Request) { return }\n", 5)
	tools := benchTools(b, func(dir string) {
		for d := range 100 {
			sub := filepath.Join(dir, fmt.Sprintf("pkg%02d", d/10), fmt.Sprintf("mod%d", d%10))
			if err := os.MkdirAll(sub, 0o700); err != nil {
				b.Fatal(err)
			}
			for f := range 1000 {
				text := body
				if f == 500 {
					text += "// NEEDLE-42 found here\n"
				}
				if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%04d.go", f)), []byte(text), 0o600); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.ResetTimer()
	for b.Loop() {
		out := benchCall(b, tools["grep"], `{"pattern":"NEEDLE-\\d+"}`)
		if n := strings.Count(out, "NEEDLE-42"); n != 100 {
			b.Fatalf("%d matches:\n%s", n, out)
		}
	}
}

// BenchmarkReadFile10MB: read_file of 100 lines in the middle of a 10 MB
// file.
func BenchmarkReadFile10MB(b *testing.B) {
	tools := benchTools(b, func(dir string) {
		line := strings.Repeat("x", 99) + "\n"
		if err := os.WriteFile(filepath.Join(dir, "big.log"), []byte(strings.Repeat(line, 100_000)), 0o600); err != nil {
			b.Fatal(err)
		}
	})
	b.ResetTimer()
	for b.Loop() {
		out := benchCall(b, tools["read_file"], `{"path":"big.log","offset":50000,"limit":100}`)
		if !strings.HasPrefix(out, "big.log lines 50000–50099 of 100000\n") {
			b.Fatal(out[:80])
		}
	}
}
