package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// readAll reads events until an error and returns them with that error.
func readAll(r *Reader) ([]Event, error) {
	var evs []Event
	for {
		ev, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Event
		wantErr error
	}{
		{
			name: "empty",
			in:   "",
			want: nil, wantErr: io.EOF,
		},
		{
			name: "one event LF",
			in:   "data: hello\n\n",
			want: []Event{{Data: "hello"}}, wantErr: io.EOF,
		},
		{
			name: "CRLF",
			in:   "event: a\r\ndata: x\r\n\r\nevent: b\r\ndata: y\r\n\r\n",
			want: []Event{{Type: "a", Data: "x"}, {Type: "b", Data: "y"}}, wantErr: io.EOF,
		},
		{
			name: "CR only",
			in:   "event: a\rdata: x\r\rdata: y\r\r",
			want: []Event{{Type: "a", Data: "x"}, {Data: "y"}}, wantErr: io.EOF,
		},
		{
			name: "mixed endings",
			in:   "data: 1\r\n\ndata: 2\r\rdata: 3\n\r\n",
			want: []Event{{Data: "1"}, {Data: "2"}, {Data: "3"}}, wantErr: io.EOF,
		},
		{
			name: "multi-line data",
			in:   "data: a\ndata: b\ndata:\ndata:  c\n\n",
			want: []Event{{Data: "a\nb\n\n c"}}, wantErr: io.EOF,
		},
		{
			name: "comments and unknown fields ignored",
			in:   ": keep-alive\nretry: 1000\nfoo: bar\ndata: x\n: more\n\n: tail\n",
			want: []Event{{Data: "x"}}, wantErr: io.EOF,
		},
		{
			name: "no space after colon",
			in:   "event:t\ndata:v\n\n",
			want: []Event{{Type: "t", Data: "v"}}, wantErr: io.EOF,
		},
		{
			name: "field without colon",
			in:   "data\n\ndata\ndata\n\n",
			want: []Event{{Data: ""}, {Data: "\n"}}, wantErr: io.EOF,
		},
		{
			name: "event without data is dropped and type reset",
			in:   "event: lonely\n\ndata: x\n\n",
			want: []Event{{Data: "x"}}, wantErr: io.EOF,
		},
		{
			name: "id persists and NUL id ignored",
			in:   "id: 1\ndata: a\n\ndata: b\n\nid: 2\x00\ndata: c\n\nid\ndata: d\n\n",
			want: []Event{{ID: "1", Data: "a"}, {ID: "1", Data: "b"}, {ID: "1", Data: "c"}, {Data: "d"}}, wantErr: io.EOF,
		},
		{
			name: "byte order mark",
			in:   "\xEF\xBB\xBFdata: x\n\n",
			want: []Event{{Data: "x"}}, wantErr: io.EOF,
		},
		{
			name: "only the first byte order mark is skipped",
			in:   "\xEF\xBB\xBFdata: x\n\n\xEF\xBB\xBFdata: y\n\n",
			want: []Event{{Data: "x"}}, wantErr: io.EOF,
		},
		{
			name: "truncated mid-event",
			in:   "data: a\n\ndata: b\n",
			want: []Event{{Data: "a"}}, wantErr: io.ErrUnexpectedEOF,
		},
		{
			name: "truncated mid-line",
			in:   "data: a\n\ndata: b",
			want: []Event{{Data: "a"}}, wantErr: io.ErrUnexpectedEOF,
		},
		{
			name: "truncated after event field",
			in:   "event: x\n",
			want: nil, wantErr: io.ErrUnexpectedEOF,
		},
		{
			name: "ends after CR",
			in:   "data: a\r\r",
			want: []Event{{Data: "a"}}, wantErr: io.EOF,
		},
		{
			name: "anthropic style",
			in: "event: message_start\ndata: {\"type\":\"message_start\"}\n\n" +
				"event: ping\ndata: {\"type\": \"ping\"}\n\n",
			want: []Event{
				{Type: "message_start", Data: `{"type":"message_start"}`},
				{Type: "ping", Data: `{"type": "ping"}`},
			},
			wantErr: io.EOF,
		},
	}
	readers := map[string]func(string) io.Reader{
		"whole":    func(s string) io.Reader { return strings.NewReader(s) },
		"bytewise": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"halves":   func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
		"dataerr":  func(s string) io.Reader { return iotest.DataErrReader(strings.NewReader(s)) },
	}
	for _, tt := range tests {
		for rname, mk := range readers {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				got, err := readAll(NewReader(mk(tt.in), nil))
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
				if err != tt.wantErr {
					t.Errorf("error = %v, want %v", err, tt.wantErr)
				}
			})
		}
	}
}

func TestStickyError(t *testing.T) {
	r := NewReader(strings.NewReader("data: a\n"), nil)
	for range 3 {
		if _, err := r.Next(); err != io.ErrUnexpectedEOF {
			t.Fatalf("Next() error = %v, want io.ErrUnexpectedEOF", err)
		}
	}
}

func TestReadError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("data: a\n\n"), iotest.ErrReader(boom)), nil)
	if ev, err := r.Next(); err != nil || ev.Data != "a" {
		t.Fatalf("Next() = %+v, %v; want data a", ev, err)
	}
	if _, err := r.Next(); err != boom {
		t.Fatalf("Next() error = %v, want %v", err, boom)
	}
}

func TestMaxEventBytes(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Event
		wantErr bool
	}{
		{name: "exactly the limit", in: "data: " + strings.Repeat("x", 16) + "\n\n", want: []Event{{Data: strings.Repeat("x", 16)}}},
		{name: "joined lines at the limit", in: "data: 1234567\ndata: 12345678\n\n", want: []Event{{Data: "1234567\n12345678"}}},
		{name: "one over", in: "data: " + strings.Repeat("x", 17) + "\n\n", wantErr: true},
		{name: "joined lines over", in: "data: 12345678\ndata: 12345678\n\n", wantErr: true},
		{name: "huge comment line", in: ":" + strings.Repeat("c", 200) + "\ndata: x\n\n", wantErr: true},
		{name: "huge line without terminator", in: strings.Repeat("d", 1000), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(NewReader(strings.NewReader(tt.in), &Options{MaxEventBytes: 16}))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if tt.wantErr != errors.Is(err, ErrEventTooLarge) {
				t.Errorf("error = %v, want ErrEventTooLarge: %v", err, tt.wantErr)
			}
			if !tt.wantErr && err != io.EOF {
				t.Errorf("error = %v, want io.EOF", err)
			}
		})
	}
}

func TestLongLinesGrowBuffer(t *testing.T) {
	big := strings.Repeat("y", 100_000)
	in := "data: " + big + "\r\ndata: z\r\n\r\n"
	got, err := readAll(NewReader(iotest.HalfReader(strings.NewReader(in)), nil))
	if err != io.EOF {
		t.Fatalf("error = %v", err)
	}
	if want := []Event{{Data: big + "\nz"}}; !cmp.Equal(want, got) {
		t.Fatalf("got %d events, first data len %d", len(got), len(got[0].Data))
	}
}

// naive is a line-splitting implementation of the same rules, used as an
// oracle for the fuzz target.
func naive(in []byte, max int) ([]Event, error) {
	s := string(in)
	s = strings.TrimPrefix(s, "\xEF\xBB\xBF")
	var evs []Event
	var data strings.Builder
	hasData, pending := false, false
	typ, id := "", ""
	for len(s) > 0 {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			if len(s) >= max+lineSlack {
				return evs, ErrEventTooLarge
			}
			return evs, io.ErrUnexpectedEOF
		}
		line := s[:i]
		// A line and its terminator must fit in max+lineSlack bytes.
		if len(line) >= max+lineSlack {
			return evs, ErrEventTooLarge
		}
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			s = s[i+2:]
		} else {
			s = s[i+1:]
		}
		if line == "" {
			pending = false
			if hasData {
				evs = append(evs, Event{Type: typ, Data: data.String(), ID: id})
			}
			data.Reset()
			hasData, typ = false, ""
			continue
		}
		if line[0] == ':' {
			continue
		}
		pending = true
		name, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch name {
		case "data":
			n := data.Len() + len(value)
			if hasData {
				n++
			}
			if n > max {
				return evs, ErrEventTooLarge
			}
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
		case "event":
			typ = value
		case "id":
			if !strings.Contains(value, "\x00") {
				id = value
			}
		}
	}
	if pending {
		return evs, io.ErrUnexpectedEOF
	}
	return evs, io.EOF
}

func FuzzReader(f *testing.F) {
	seeds := []string{
		"",
		"data: x\n\n",
		"event: a\r\ndata: 1\r\ndata: 2\r\n\r\n",
		"id: 7\rdata: x\r\r: c\r",
		"\xEF\xBB\xBFdata: x\n\n",
		"data: 0123456789012345678901234567890123\n\n",
		"data",
		"data:\n\n\n\ndata\n",
	}
	if b, err := os.ReadFile("testdata/stream.txt"); err == nil {
		seeds = append(seeds, string(b))
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	const max = 32
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := readAll(NewReader(iotest.HalfReader(bytes.NewReader(in)), &Options{MaxEventBytes: max}))
		for _, ev := range got {
			if len(ev.Data) > max {
				t.Fatalf("event data of %d bytes exceeds the cap of %d", len(ev.Data), max)
			}
		}
		want, wantErr := naive(in, max)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("events differ from the line-splitting oracle (-want +got):\n%s", diff)
		}
		if !errors.Is(err, wantErr) {
			t.Fatalf("error = %v, oracle says %v", err, wantErr)
		}
		// A Reader that read another stream first, then was Reset, reads
		// the same.
		used := NewReader(strings.NewReader("event: e\nid: 9\ndata: half"), &Options{MaxEventBytes: max})
		used.Next()
		used.Reset(iotest.HalfReader(bytes.NewReader(in)))
		again, againErr := readAll(used)
		if diff := cmp.Diff(want, again); diff != "" || !errors.Is(againErr, wantErr) {
			t.Fatalf("after Reset: error %v, events (-want +got):\n%s", againErr, diff)
		}
	})
}

func BenchmarkReader(b *testing.B) {
	var buf bytes.Buffer
	for i := range 200 {
		fmt.Fprintf(&buf, "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d\"},\"finish_reason\":null}]}\n\n", i)
	}
	buf.WriteString("data: [DONE]\n\n")
	in := buf.Bytes()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	rd := bytes.NewReader(in)
	for b.Loop() {
		rd.Reset(in)
		r := NewReader(rd, nil)
		for {
			if _, err := r.Next(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
		}
	}
}

func Example() {
	stream := "event: greeting\ndata: hello\ndata: world\n\n: a comment\ndata: [DONE]\n\n"
	r := NewReader(strings.NewReader(stream), nil)
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Printf("%q %q\n", ev.Type, ev.Data)
	}
	// Output:
	// "greeting" "hello\nworld"
	// "" "[DONE]"
}

func TestRecordedStream(t *testing.T) {
	f, err := os.Open("testdata/stream.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := readAll(NewReader(f, nil))
	if err != io.EOF {
		t.Fatalf("error = %v, want io.EOF", err)
	}
	want := []Event{
		{Type: "message_start", Data: `{"type":"message_start","message":{"id":"msg_1","model":"claude"}}`},
		{Type: "content_block_delta", Data: "{\"type\":\"content_block_delta\",\"index\":0,\n \"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}"},
		{ID: "42", Data: "[DONE]"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
