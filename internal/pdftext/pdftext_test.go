package pdftext_test

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/pdftext"
)

// TestHandMade reads testdata/hand.pdf, a two-page PDF written by hand
// with plain content streams: literal strings with escapes, a TJ array,
// hex strings, the ' operator and a UTF-16 string.
func TestHandMade(t *testing.T) {
	data, err := os.ReadFile("testdata/hand.pdf")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pdftext.Extract(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "A PDF made by hand\n" +
		"Its text is shown with Tj, (parentheses) and an octal é escape.\n" +
		"Kernedtext with a gap\n\n" +
		"Second page\nNext line by quoteHi 'у"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// pdf wraps content streams in a minimal PDF, each compressed with the
// standard library's zlib when flate is set.
func pdf(flate bool, streams ...string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n")
	for i, s := range streams {
		body := []byte(s)
		filter := ""
		if flate {
			var z bytes.Buffer
			w := zlib.NewWriter(&z)
			w.Write(body)
			w.Close()
			body, filter = z.Bytes(), " /Filter /FlateDecode"
		}
		fmt.Fprintf(&b, "%d 0 obj\n<< /Length %d%s >>\nstream\n%s\nendstream\nendobj\n", i+1, len(body), filter, body)
	}
	b.WriteString("trailer\n<< >>\n%%EOF\n")
	return b.Bytes()
}

func TestFlate(t *testing.T) {
	got, err := pdftext.Extract(pdf(true, "BT (compressed text) Tj ET"), nil)
	if err != nil || got != "compressed text" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"not a pdf", []byte("<html>"), pdftext.ErrNotPDF},
		{"no text", pdf(false, "0 0 m 10 10 l S"), pdftext.ErrNoText},
		{"text outside BT", pdf(false, "(stray) Tj"), pdftext.ErrNoText},
		{"other filter", []byte("%PDF-1.4\n1 0 obj << /Filter /LZWDecode >> stream\nBT (x) Tj ET\nendstream"), pdftext.ErrNoText},
		{"bad flate", []byte("%PDF-1.4\n1 0 obj << /Filter /FlateDecode >> stream\nBT (x) Tj ET\nendstream"), pdftext.ErrNoText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := pdftext.Extract(tt.data, nil); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestBounded: a stream that inflates far past the budget is cut at it,
// and the text at MaxText.
func TestBounded(t *testing.T) {
	big := "BT " + strings.Repeat("(abcdefgh) Tj ", 200000) + " ET"
	got, err := pdftext.Extract(pdf(true, big), &pdftext.Options{MaxInflated: 1 << 16, MaxText: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 1<<16 {
		t.Errorf("%d bytes of text from a 64 KiB budget", len(got))
	}
	got, _ = pdftext.Extract(pdf(false, big), &pdftext.Options{MaxText: 100})
	if len(got) > 100 {
		t.Errorf("%d bytes of text, cap 100", len(got))
	}
}

// FuzzExtract: Extract never panics, its text is valid UTF-8 and within
// MaxText, and a content stream reads the same stored plain or
// compressed by the standard library's zlib.
func FuzzExtract(f *testing.F) {
	if data, err := os.ReadFile("testdata/hand.pdf"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("BT (a\\) b) Tj [(x) -500 (y)] TJ <41 4> Tj ET"))
	f.Add([]byte("BT ((((( ET"))
	f.Fuzz(func(t *testing.T, data []byte) {
		o := &pdftext.Options{MaxText: 4096, MaxInflated: 1 << 20, MaxStreams: 50}
		text, err := pdftext.Extract(data, o)
		check := func(text string, err error) {
			if err == nil && (!utf8.ValidString(text) || len(text) > o.MaxText) {
				t.Fatalf("bad text %q", text)
			}
		}
		check(text, err)
		if bytes.Contains(data, []byte("stream")) {
			return // the fuzzed bytes as one content stream need no stream keyword in them
		}
		plain, err1 := pdftext.Extract(pdf(false, string(data)), o)
		check(plain, err1)
		packed, err2 := pdftext.Extract(pdf(true, string(data)), o)
		check(packed, err2)
		if plain != packed || (err1 == nil) != (err2 == nil) {
			t.Fatalf("plain %q, %v; flate %q, %v", plain, err1, packed, err2)
		}
	})
}
