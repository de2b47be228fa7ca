package testkit_test

import (
	"context"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"agentd/internal/event"
	"agentd/internal/runtime"
	"agentd/internal/testkit"
)

// A test of the runtime with a scripted model is a few lines.
func TestScript(t *testing.T) {
	k := testkit.New(t, &testkit.Options{Script: "match ^hi\nsay hello, {{last_user}}\n"})
	_, end, err := k.Runtime.Send(t.Context(), runtime.Input{Session: "assistant/k", Text: "hi there"})
	if err != nil || end.Status != event.StatusDone || end.Reply != "hello, hi there" {
		t.Fatalf("end %+v, err %v", end, err)
	}
}

// A Model's gate holds a call until it is opened; the Model records what
// it was asked.
func TestModelGate(t *testing.T) {
	m := testkit.NewModel()
	k := testkit.New(t, &testkit.Options{Model: m})
	g := m.Gate("a:1")
	rc, err := k.Runtime.Submit(t.Context(), runtime.Input{Session: "assistant/k", Text: "a:1"})
	if err != nil {
		t.Fatal(err)
	}
	<-g.Entered
	if n := m.Active(); n != 1 {
		t.Errorf("%d calls running at the gate, want 1", n)
	}
	g.Open()
	end, err := k.Runtime.Wait(t.Context(), rc.Turn)
	if err != nil || end.Reply != "re: a:1" {
		t.Fatalf("end %+v, err %v", end, err)
	}
	if n := len(m.Requests("a:1")); n != 1 || m.Calls() != 1 || m.MaxOf("a") != 1 {
		t.Errorf("requests %d, calls %d, at once %d", n, m.Calls(), m.MaxOf("a"))
	}
}

// A test restarts agentd by opening a Kit again on the same database.
func TestReopen(t *testing.T) {
	k := testkit.New(t, nil)
	if _, _, err := k.Runtime.Send(t.Context(), runtime.Input{Session: "assistant/k", Text: "one"}); err != nil {
		t.Fatal(err)
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	k2 := testkit.New(t, &testkit.Options{Path: k.Path})
	_, evs, err := k2.Runtime.Events(t.Context(), "assistant/k", 0, 0)
	if err != nil || len(evs) == 0 {
		t.Fatalf("events after reopening: %d, %v", len(evs), err)
	}
}

// agentd itself never imports testkit: it would bring test servers into
// the binary.
func TestOnlyTestsImportIt(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.Contains(path, filepath.Join("internal", "testkit")) {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, im := range f.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); p == "agentd/internal/testkit" {
				t.Errorf("%s imports testkit", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ExampleOpen answers a message with a fakellm script.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "testkit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	k, err := testkit.Open(ctx, dir, &testkit.Options{Script: "match *\nsay You said: {{last_user}}\n"})
	if err != nil {
		log.Fatal(err)
	}
	defer k.Close()
	_, end, err := k.Runtime.Send(ctx, runtime.Input{Session: "assistant/chat", Text: "hello"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(end.Status, end.Reply)
	// Output: done You said: hello
}
