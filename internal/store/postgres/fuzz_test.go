package postgres

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"agentd/internal/store/postgres/pgtest"
	"agentd/internal/store/search"
)

// FuzzSearchSyntax feeds arbitrary text to the tsvector and tsquery
// encoders: PostgreSQL accepts what they write whatever the text, and a
// query of a text's own words (each a prefix, so that words the index
// leaves out do not matter) finds it.
func FuzzSearchSyntax(f *testing.F) {
	for _, s := range []string{
		"paris", "it's 'quoted' \\ back", "a:1 b:*", "!(x & y) | z <-> w", "café CAFÉ naïve", "日本語のテキスト",
		"x* * y**", "\x00", "ｆｕｌｌ ｗｉｄｔｈ", strings.Repeat("long", 600), "é̀", "lock-timeout 3.14 v2",
	} {
		f.Add(s)
	}
	conn, err := pgx.Connect(f.Context(), pgtest.URL(f))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { conn.Close(f.Context()) })
	f.Fuzz(func(t *testing.T, text string) {
		data, _ := json.Marshal(map[string]string{"text": text})
		v := tsvector(data)
		var words []string
		for _, w := range search.Words(text) {
			if len(w) <= maxIndexedWord {
				words = append(words, w+"*")
			}
		}
		if len(words) > search.MaxTerms {
			words = words[:search.MaxTerms]
		}
		_, terms := search.FTS5(strings.Join(words, " "))
		q := tsquery(terms)
		if q == "" {
			q = "'x'"
		}
		var match bool
		if err := conn.QueryRow(t.Context(), `SELECT $1::tsvector @@ $2::tsquery`, v, q).Scan(&match); err != nil {
			t.Fatalf("text %q: tsvector %q, tsquery %q: %v", text, v, q, err)
		}
		if len(terms) > 0 && v != "" && !match {
			t.Errorf("text %q is not found by its own words: tsvector %q, tsquery %q", text, v, q)
		}
	})
}
