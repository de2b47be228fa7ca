package jsonstr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// check fails t unless s encodes as a valid JSON string that decodes to
// what encoding/json's encoding of s decodes to, alike from a string and
// from bytes.
func check(t *testing.T, s string) {
	t.Helper()
	got := Append([]byte("x"), s)[1:]
	if !json.Valid(got) {
		t.Fatalf("%q encodes as %s: not valid JSON", s, got)
	}
	if b := Append(nil, []byte(s)); !bytes.Equal(b, got) {
		t.Fatalf("%q encodes as %s from a string and %s from bytes", s, got, b)
	}
	if e := AppendEscaped(nil, s); !bytes.Equal(e, got[1:len(got)-1]) {
		t.Fatalf("%q escapes as %s, quoted as %s", s, e, got)
	}
	var dec string
	if err := json.Unmarshal(got, &dec); err != nil {
		t.Fatalf("%q encodes as %s: %v", s, got, err)
	}
	ref, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var want string
	if err := json.Unmarshal(ref, &want); err != nil {
		t.Fatal(err)
	}
	if dec != want {
		t.Fatalf("%q decodes as %q, want %q", s, dec, want)
	}
}

func TestAppend(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"plain <&> text", `"plain <&> text"`},
		{"quote\" back\\slash", `"quote\" back\\slash"`},
		{"esc \x1b[A", `"esc \u001b[A"`},
		{"nl\ncr\rtab\t", `"nl\ncr\rtab\t"`},
		{"\x00\x08\x0c\x1f", `"\u0000\u0008\u000c\u001f"`},
		{"del \x7f", "\"del \x7f\""},
		{"ls \u2028 ps \u2029", `"ls \u2028 ps \u2029"`},
		{"bad \xff\xfe end", `"bad \ufffd\ufffd end"`},
		{"cut \xe2\x80", `"cut \ufffd\ufffd"`},
		{"surrogate \xed\xa0\x80", `"surrogate \ufffd\ufffd\ufffd"`},
		{"overlong \xc0\xaf", `"overlong \ufffd\ufffd"`},
		{"past max \xf4\x90\x80\x80", `"past max \ufffd\ufffd\ufffd\ufffd"`},
		{"é日😀\ufffd", `"é日😀` + "\ufffd" + `"`},
	} {
		if got := string(Append(nil, tc.in)); got != tc.want {
			t.Errorf("Append(%q) = %s, want %s", tc.in, got, tc.want)
		}
		check(t, tc.in)
	}
}

// Every character below U+0100, U+2028, U+2029 and every single byte, on
// its own and between text.
func TestAppendEveryControl(t *testing.T) {
	for r := rune(0); r < 0x100; r++ {
		check(t, string(r))
		check(t, "a"+string(r)+"b")
	}
	for _, r := range []rune{0x2028, 0x2029, 0xfffd, 0x10ffff} {
		check(t, string(r))
	}
	for c := 0; c < 0x100; c++ {
		check(t, string([]byte{byte(c)}))
		check(t, "é"+string([]byte{byte(c)})+"日")
	}
}

func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "plain", "quote\" back\\slash", "\x00\x1f\x7f", "\xff\xfe", "é\u2028\u2029😀",
		"<&>", "\xe2\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf0\x9f\x98"} {
		f.Add(s)
	}
	f.Fuzz(check)
}

func BenchmarkAppend(b *testing.B) {
	corpus := []string{
		"Hello! This is a streamed answer of a few words, long enough to be cut into pieces.",
		"token ",
		"It is 21°C and sunny in Paris today, a fine day for a walk along the river — café au lait?",
		"line one\nline two\t\"quoted\" back\\slash",
		"日本語のテキストも少し混ぜておきます。絵文字😀も。",
	}
	var n int64
	for _, s := range corpus {
		n += int64(len(s))
	}
	b.SetBytes(n)
	b.ReportAllocs()
	buf := make([]byte, 0, 1024)
	for b.Loop() {
		for _, s := range corpus {
			buf = Append(buf[:0], s)
		}
	}
	if len(buf) == 0 || strings.Count(string(buf), `"`) != 2 {
		b.Fatal(string(buf))
	}
}

func ExampleAppend() {
	b := []byte(`{"text":`)
	b = Append(b, "esc \x1b[A, tab\t, bad \xff")
	b = append(b, '}')
	fmt.Println(string(b), json.Valid(b))
	// Output: {"text":"esc \u001b[A, tab\t, bad \ufffd"} true
}
