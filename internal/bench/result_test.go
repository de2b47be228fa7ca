package bench

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// Every figure --json prints has a row of its own in the table, under the
// same name, showing that figure's value; the counts and the run's
// settings are said in the notes.
func TestTableShowsEveryFigure(t *testing.T) {
	// Each figure a value of its own, so that a row showing another
	// figure's value is caught.
	r := &Result{RunInfo: RunInfo{Quick: true, Synchronous: "full"}}
	rv := reflect.ValueOf(r).Elem()
	want := map[string]float64{}
	// Figures a row's note gives rather than a row of their own.
	inNote := map[string]bool{"ws_idle_base_rss_mb": true}
	for i := range rv.NumField() {
		f := rv.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch f.Type.Kind() {
		case reflect.Float64:
			rv.Field(i).SetFloat(float64(i + 1))
			if !inNote[name] {
				want[name] = float64(i + 1)
			}
		case reflect.Int:
			rv.Field(i).SetInt(int64(i + 1)) // the counts that show sections
		}
	}
	got := map[string]float64{}
	for _, s := range r.sections() {
		if !s.shown {
			t.Errorf("section %q not shown with every figure set", s.title)
		}
		for _, f := range s.figs {
			if _, dup := got[f.name]; dup {
				t.Errorf("figure %s has two rows", f.name)
			}
			got[f.name] = f.value
		}
	}
	for name, v := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("figure %s has no row in the table", name)
		} else if g != v {
			t.Errorf("row %s shows %v, the figure is %v", name, g, v)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("row %s is no figure of --json", name)
		}
	}

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
	for name := range want {
		if !rows[name] {
			t.Errorf("figure %s is not printed:\n%s", name, b.String())
		}
	}
	if !strings.Contains(b.String(), "synchronous=full, --quick counts)") {
		t.Errorf("the table does not say how it was run:\n%s", b.String())
	}
}

// A figure with a floor is printed with the floor and its ratio to it.
func TestTableShowsRatioToFloor(t *testing.T) {
	r := &Result{FloorRelayCPUms: 0.1, CPUmsPerTurn: 0.75, APITurnP50ms: 1, FloorRTTms: 0.05}
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(b.String()) {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "cpu_ms_per_turn" {
			if want := "cpu_ms_per_turn 0.750 ms 0.100 ms 7.5×"; !strings.HasPrefix(strings.Join(f, " "), want) {
				t.Errorf("got %q, want it to start %q", strings.Join(f, " "), want)
			}
			return
		}
	}
	t.Errorf("no cpu_ms_per_turn row:\n%s", b.String())
}
