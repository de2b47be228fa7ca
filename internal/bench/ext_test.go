package bench

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"agentd/internal/app"
)

// The extension rows the start figures load are valid, a third of each
// type, and every one of them is active on a node started over them.
func TestExtRowsActivate(t *testing.T) {
	dir := t.TempDir()
	if err := writeAgents(dir, "http://127.0.0.1:1/v1", "full"); err != nil {
		t.Fatal(err)
	}
	const n = 30
	if err := writeExtRows(t.Context(), dir+"/ext", n, "full"); err != nil {
		t.Fatal(err)
	}
	a, err := app.Open(t.Context(), dir+"/ext", &app.Options{ReadOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	if err := a.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	types := map[string]int{}
	for _, typ := range []string{"action", "control", "capability"} {
		rows, err := a.Ext.List(t.Context(), typ)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range rows {
			if s.Active != s.Version || s.Error != "" {
				t.Errorf("%s/%s: version %d, active %d: %s", s.Type, s.Name, s.Version, s.Active, s.Error)
			}
			types[s.Type]++
		}
	}
	for typ, got := range types {
		if got != n/3 {
			t.Errorf("%d rows of type %s, want %d", got, typ, n/3)
		}
	}
	if len(types) != 3 {
		t.Errorf("types %v", types)
	}
	if _, ok := a.Tools.Get("act-00000"); !ok {
		t.Error("the first action is no tool")
	}
}

// The action overhead figures, in process with quick counts: a call
// answered through the registry, and the bare round trip beside it.
func TestActionOverhead(t *testing.T) {
	c, err := newConfig(&Options{Quick: true, InProcessOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := runActionOverhead(t.Context(), t.TempDir(), &res, c); err != nil {
		t.Fatal(err)
	}
	if res.ActionCallP50ms <= 0 || res.ActionBareP50ms <= 0 || math.Abs(res.ActionOverheadP50ms-(res.ActionCallP50ms-res.ActionBareP50ms)) > 1e-9 {
		t.Errorf("%+v", res)
	}
}

// agentd serve starts over the extension rows, each of them activated,
// and its start and memory are measured. It builds the agentd binary.
func TestExtStart(t *testing.T) {
	exe := agentdBinary(t)
	c, err := newConfig(&Options{Quick: true, Executable: exe})
	if err != nil {
		t.Fatal(err)
	}
	c.extRows, c.extStarts = 30, 2
	dir := t.TempDir()
	if err := writeAgents(dir, "http://127.0.0.1:1/v1", c.sync); err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := runExtStart(t.Context(), filepath.Join(dir, "ext"), &res, c); err != nil {
		t.Fatal(err)
	}
	if res.ExtRows != 30 || res.ExtStartMS <= 0 || res.ExtRSSMB <= 0 || res.ExtAnonMB <= 0 || res.ExtAnonMB > res.ExtRSSMB {
		t.Errorf("%+v", res)
	}
}
