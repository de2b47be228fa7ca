package event_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"agentd/internal/event"
)

// kindRow is a row of the package doc's list of kinds.
type kindRow struct {
	kind, log, data string
	writers         []string
}

// docKinds reads the list of kinds in the package doc (doc.go).
func docKinds(t *testing.T, fset *token.FileSet) []kindRow {
	f, err := parser.ParseFile(fset, "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(f.Doc.Text(), "# Kinds")
	if !ok {
		t.Fatal("doc.go: no section Kinds")
	}
	var rows []kindRow
	for _, line := range strings.Split(list, "\n") {
		w := strings.Fields(line)
		if !strings.HasPrefix(line, "\t") || len(w) < 4 || w[0] == "kind" {
			continue
		}
		r := kindRow{kind: w[0], log: w[1], data: w[len(w)-1]}
		// The writers are the words before a colon or a semicolon.
		for _, part := range strings.Split(strings.Join(w[2:len(w)-1], " "), ";") {
			name, _, _ := strings.Cut(strings.TrimSpace(part), ":")
			r.writers = append(r.writers, name)
		}
		rows = append(rows, r)
	}
	return rows
}

// TestDocListsEveryKind holds the package doc's list of kinds to the code:
// every Kind constant is listed once, as stored, live or inbox as Kind.Live
// says; its data is a type of this package; its writers are packages of
// agentd.
func TestDocListsEveryKind(t *testing.T) {
	fset := token.NewFileSet()
	names, _ := filepath.Glob("*.go")
	kinds := map[string]bool{} // the values of the Kind constants
	types := map[string]bool{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range g.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					types[s.Name.Name] = true
				case *ast.ValueSpec:
					if id, ok := s.Type.(*ast.Ident); g.Tok == token.CONST && ok && id.Name == "Kind" {
						v, _ := strconv.Unquote(s.Values[0].(*ast.BasicLit).Value)
						kinds[v] = true
					}
				}
			}
		}
	}
	if len(kinds) == 0 {
		t.Fatal("no Kind constants found")
	}
	listed := map[string]bool{}
	for _, r := range docKinds(t, fset) {
		if listed[r.kind] {
			t.Errorf("doc.go lists %s twice", r.kind)
		}
		listed[r.kind] = true
		if !kinds[r.kind] {
			t.Errorf("doc.go lists %s, which is no Kind constant", r.kind)
		}
		live := event.Kind(r.kind).Live()
		if want := map[bool][]string{true: {"live"}, false: {"stored", "inbox"}}[live]; !slices.Contains(want, r.log) {
			t.Errorf("doc.go: %s is %s; Kind.Live says %v", r.kind, r.log, live)
		}
		if r.data != "-" && !types[r.data] {
			t.Errorf("doc.go: the data of %s is %s, which is no type of this package", r.kind, r.data)
		}
		for _, w := range r.writers {
			if fi, err := os.Stat(filepath.Join("..", w)); err != nil || !fi.IsDir() {
				t.Errorf("doc.go: %s is written by %q, which is no package of agentd", r.kind, w)
			}
		}
	}
	for k := range kinds {
		if !listed[k] {
			t.Errorf("doc.go does not list the kind %s", k)
		}
	}
}

// docs/api.md's section on events names every kind a reader of the log or
// the stream meets: the stored ones in its table, the live ones where it
// says what is live only.
func TestAPIDocNamesEveryKind(t *testing.T) {
	b, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Events\n")
	if !ok {
		t.Fatal("docs/api.md has no section Events")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	stored, live, ok := strings.Cut(section, "Live only")
	if !ok {
		t.Fatal("docs/api.md, Events: nothing says what is live only")
	}
	for _, r := range docKinds(t, token.NewFileSet()) {
		where := map[string]string{"stored": stored, "live": live}[r.log]
		if where != "" && !strings.Contains(where, "`"+r.kind+"`") {
			t.Errorf("docs/api.md, Events: no %s kind `%s`", r.log, r.kind)
		}
	}
}
