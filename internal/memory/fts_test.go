package memory

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestQueryTerms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"What does Alice like?", []string{"alice", "like"}},
		{`"quoted" AND NOT x* OR (y) NEAR/2 col:z`, []string{"quoted", "x", "y", "near", "2", "col", "z"}},
		{"Café crème, café!", []string{"café", "crème"}},
		{"the of and", nil},
		{"", nil},
	} {
		if d := cmp.Diff(tc.want, queryTerms(tc.in), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("queryTerms(%q) (-want +got):\n%s", tc.in, d)
		}
	}
}

func TestSnippet(t *testing.T) {
	long := "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen " +
		"seventeen eighteen nineteen twenty alpha twentytwo twentythree twentyfour twentyfive twentysix twentyseven " +
		"twentyeight twentynine thirty"
	for _, tc := range []struct {
		text  string
		terms []string
		want  string
	}{
		{"Alice likes green tea.", []string{"green", "tea"}, "Alice likes «green» «tea»."},
		{"Alice likes GREEN tea.", []string{"green"}, "Alice likes «GREEN» tea."},
		{"nothing here", []string{"x"}, "nothing here"},
		// Near the end, the window reaches back to show snippetWords words.
		{long, []string{"alpha"}, "…seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty «alpha» twentytwo twentythree twentyfour twentyfive twentysix twentyseven twentyeight twentynine thirty"},
		{long, []string{"three"}, "one two «three» four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty alpha twentytwo twentythree twentyfour…"},
	} {
		if got := snippet(tc.text, tc.terms); got != tc.want {
			t.Errorf("snippet(%q, %q)\n got %q\nwant %q", tc.text, tc.terms, got, tc.want)
		}
	}
}

// FuzzRecallQuery: whatever the user types, the keyword query is valid
// (FTS5, or PostgreSQL's tsquery) and the snippet code does not fail.
func FuzzRecallQuery(f *testing.F) {
	for _, s := range []string{"", `"`, `a"b`, "AND", "NOT x", "x*", "(", "col:x", "NEAR(a b)", "^a", "a + b", "{a b}: c",
		"\x00", "ümlaut ß", "😀 emoji", "a OR", `"" ""`, "-x", "'"} {
		f.Add(s)
	}
	s, _ := newStore(f, nil)
	if _, err := s.Remember(context.Background(), "a1", Remember{Insight: "some searchable text with words"}, Provenance{}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		terms := queryTerms(q)
		if _, err := s.idx.search(context.Background(), s.rdb, terms, []string{"a1", Shared}, []int64{keyInsight}, 10); err != nil {
			t.Fatalf("query %q: %v", q, err)
		}
		_ = snippet(q, terms)
	})
}
