package proc

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRing(t *testing.T) {
	tests := []struct {
		limit  int
		writes []string
		want   string
	}{
		{10, nil, ""},
		{10, []string{"hello"}, "hello"},
		{10, []string{"0123456789"}, "0123456789"},
		{10, []string{"0123456789a"}, "01234\n… 1 bytes left out …\n6789a"},
		{10, []string{"01", "23", "45", "67", "89", "ab", "cd"}, "01234\n… 4 bytes left out …\n9abcd"},
		{4, []string{strings.Repeat("x", 1000), "yz"}, "xx\n… 998 bytes left out …\nyz"},
		{6, []string{"aé€", "—", "zz", "ü€"}, "aé\n… 10 bytes left out …\n€"},
		{8, []string{"ab€c", strings.Repeat("x", 10), "€ab"}, "ab\n… 17 bytes left out …\nab"},
	}
	for _, tt := range tests {
		r := newRing(tt.limit)
		for _, w := range tt.writes {
			r.Write([]byte(w))
		}
		if diff := cmp.Diff(tt.want, r.String()); diff != "" {
			t.Errorf("%d %q (-want +got):\n%s", tt.limit, tt.writes, diff)
		}
	}
}

// FuzzRing checks what a ring keeps against the whole output in a
// bytes.Buffer: every read from any offset is a piece of it, the gap is
// where bytes were left out, and at most limit bytes are kept.
func FuzzRing(f *testing.F) {
	f.Add(10, []byte("hello, world, and more words"), uint8(3), int64(0), 4)
	f.Add(3, []byte("ab"), uint8(1), int64(5), 0)
	f.Fuzz(func(t *testing.T, limit int, data []byte, pieces uint8, off int64, readLimit int) {
		if limit < 2 || limit > 1<<16 {
			return
		}
		r := newRing(limit)
		var whole bytes.Buffer
		step := max(1, len(data)/max(1, int(pieces)))
		for i := 0; i < len(data); i += step {
			p := data[i:min(i+step, len(data))]
			r.Write(p)
			whole.Write(p)
		}
		all := whole.Bytes()
		c, _ := r.Since(off, readLimit)
		start := min(max(off, 0), int64(len(all)))
		if c.GapAt > len(c.Data) || c.Lost < 0 || c.Next > int64(len(all)) || (readLimit > 0 && len(c.Data) > readLimit) {
			t.Fatalf("chunk %+v of %d bytes", c, len(all))
		}
		before, after := c.Data[:c.GapAt], c.Data[c.GapAt:]
		if !bytes.Equal(before, all[start:start+int64(len(before))]) {
			t.Fatalf("before the gap %q, want %q", before, all[start:start+int64(len(before))])
		}
		from := start + int64(len(before)) + c.Lost
		if !bytes.Equal(after, all[from:from+int64(len(after))]) || from+int64(len(after)) != c.Next {
			t.Fatalf("after the gap %q from %d, want %q (next %d)", after, from, all[from:from+int64(len(after))], c.Next)
		}
		if readLimit <= 0 && c.Next != int64(len(all)) {
			t.Fatalf("an unlimited read ends at %d of %d", c.Next, len(all))
		}
		if c.Lost > 0 && len(all)-int(c.Lost) > limit+int(start) {
			t.Fatalf("kept %d bytes past the limit %d", len(all)-int(c.Lost), limit)
		}
		if s := r.String(); len(all) <= limit && s != string(all) {
			t.Fatalf("String %q, want %q", s, all)
		}
	})
}
