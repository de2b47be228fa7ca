package txtar_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/txtar"
)

func TestParse(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		want     *txtar.Archive
	}{
		{"empty", "", &txtar.Archive{}},
		{"comment only", "just words\n", &txtar.Archive{Comment: "just words\n"}},
		{"files", "about\n-- a.yaml --\nx: 1\n--  b  --\n-- c --\nlast", &txtar.Archive{Comment: "about\n",
			Files: []txtar.File{{Name: "a.yaml", Data: "x: 1\n"}, {Name: "b"}, {Name: "c", Data: "last\n"}}}},
		{"not markers", "-- --\n--a --\n-- b --\r\ndata\r\n", &txtar.Archive{Comment: "-- --\n--a --\n",
			Files: []txtar.File{{Name: "b", Data: "data\r\n"}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := txtar.Parse([]byte(tt.in))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if again := txtar.Parse(got.Format()); !cmp.Equal(got, again) {
				t.Errorf("Format does not read back: %q", got.Format())
			}
		})
	}
}

// Parsing what Format wrote gives the archive back, whatever the input.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("c\n-- a --\nx\n-- b --\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a := txtar.Parse(data)
		if b := txtar.Parse(a.Format()); !cmp.Equal(a, b) {
			t.Fatalf("%q: %+v, then %+v", data, a, b)
		}
	})
}

func ExampleArchive_Set() {
	a := txtar.Parse([]byte("A fixture.\n-- input --\nhello\n-- want --\nold\n"))
	in, _ := a.Get("input")
	a.Set("want", "HELLO\n") // what a test with -update writes back
	fmt.Printf("%q\n%s", in, a.Format())
	// Output:
	// "hello\n"
	// A fixture.
	// -- input --
	// hello
	// -- want --
	// HELLO
}
