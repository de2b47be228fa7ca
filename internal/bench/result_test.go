package bench

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// Every figure --json prints has a row of its own in the table, under the
// same name; the counts and the run's settings are said in the notes.
func TestTableShowsEveryFigure(t *testing.T) {
	r := &Result{HistoryMessages: 1, ReadyMS: 1, WSSubscribers: 1, Quick: true, Synchronous: "full"}
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for line := range strings.Lines(b.String()) {
		if f := strings.Fields(line); len(f) > 0 {
			rows[f[0]] = true
		}
	}
	// Figures a row's note gives rather than a row of their own.
	inNote := map[string]bool{"ws_idle_base_rss_mb": true}
	rt := reflect.TypeFor[Result]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Type.Kind() != reflect.Float64 || inNote[name] {
			continue
		}
		if !rows[name] {
			t.Errorf("figure %s (%s) has no row in the table:\n%s", name, f.Name, b.String())
		}
	}
	if !strings.Contains(b.String(), "synchronous=full, --quick counts)") {
		t.Errorf("the table does not say how it was run:\n%s", b.String())
	}
}
