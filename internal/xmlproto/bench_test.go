package xmlproto

import (
	"fmt"
	"testing"
)

// BenchmarkParser parses the recorded three steps of testdata/stream.txtar
// (about 8 KB: thoughts, three action calls, a reply) written in chunks
// of 1 byte, 4 (about a token) and 64.
func BenchmarkParser(b *testing.B) {
	ss := steps(b)
	var n int64
	for _, s := range ss {
		n += int64(len(s))
	}
	for _, size := range []int{1, 4, 64} {
		chunked := make([][]string, len(ss))
		for i, s := range ss {
			chunked[i] = splitEvery(s, size)
		}
		b.Run(fmt.Sprintf("chunk=%d", size), func(b *testing.B) {
			b.SetBytes(n)
			b.ReportAllocs()
			for b.Loop() {
				for _, cs := range chunked {
					p := NewParser(nil)
					for _, c := range cs {
						p.Write(c)
					}
					p.Close()
				}
			}
		})
	}
}

// BenchmarkParserToken is what one 4-byte Write (about a token) adds to
// a stream's latency: ns/op is per Write, over the recorded steps.
func BenchmarkParserToken(b *testing.B) {
	var chunks [][]string
	for _, s := range steps(b) {
		chunks = append(chunks, splitEvery(s, 4))
	}
	b.ReportAllocs()
	p, step, i := NewParser(nil), 0, 0
	for b.Loop() {
		p.Write(chunks[step][i])
		if i++; i == len(chunks[step]) {
			p.Close()
			step, i = (step+1)%len(chunks), 0
		}
	}
}

// splitEvery cuts s into chunks of n bytes.
func splitEvery(s string, n int) []string {
	var out []string
	for len(s) > n {
		out, s = append(out, s[:n]), s[n:]
	}
	return append(out, s)
}
