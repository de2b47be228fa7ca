package fakellm

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/txtar"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func readArchive(t testing.TB, path string) *txtar.Archive {
	t.Helper()
	a, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// setAfter sets the archive's file name to data; a new file goes right
// after the file after (its source), so a golden section sits beside what
// it was made from.
func setAfter(a *txtar.Archive, after, name, data string) {
	if _, ok := a.Get(name); ok {
		a.Set(name, data)
		return
	}
	i := slices.IndexFunc(a.Files, func(f txtar.File) bool { return f.Name == after })
	a.Files = slices.Insert(a.Files, i+1, txtar.File{Name: name, Data: data})
}

// dump shows a parsed script, one fact a line.
func dump(s *Script) string {
	var b strings.Builder
	showRule := func(r *rule) {
		if r.re == nil {
			fmt.Fprintf(&b, "default rule (line %d)\n", r.line)
		} else {
			fmt.Fprintf(&b, "rule (line %d) match %q\n", r.line, r.re.String())
		}
		for i, resp := range r.responses {
			fmt.Fprintf(&b, "  response %d (line %d)\n", i, resp.line)
			if resp.hasThink {
				fmt.Fprintf(&b, "    think %q\n", showTmpl(resp.think))
			}
			if resp.hasText {
				fmt.Fprintf(&b, "    text %q\n", showTmpl(resp.text))
			}
			for _, c := range resp.calls {
				fmt.Fprintf(&b, "    call %s %s\n", c.name, showTmpl(c.args))
			}
			if f := resp.fail; f != nil {
				fmt.Fprintf(&b, "    fail %d", f.status)
				if f.overflow {
					b.WriteString(" overflow")
				}
				if f.times > 0 {
					fmt.Fprintf(&b, " times=%d", f.times)
				}
				if f.retryAfter >= 0 {
					fmt.Fprintf(&b, " retry_after=%d", f.retryAfter)
				}
				b.WriteString("\n")
			}
			if ns := resp.noStream; ns != nil {
				fmt.Fprintf(&b, "    nostream %d %q\n", ns.status, ns.msg)
			}
			if resp.truncate {
				b.WriteString("    truncate\n")
			}
			if st := resp.stall; st != nil {
				fmt.Fprintf(&b, "    stall times=%d\n", st.times)
			}
			if resp.chunks > 0 {
				fmt.Fprintf(&b, "    chunks %d\n", resp.chunks)
			}
			if resp.delay > 0 {
				fmt.Fprintf(&b, "    delay %v\n", resp.delay)
			}
			if resp.gap > 0 {
				fmt.Fprintf(&b, "    gap %v\n", resp.gap)
			}
			if resp.usage != nil {
				fmt.Fprintf(&b, "    usage %d %d\n", resp.usage[0], resp.usage[1])
			}
		}
	}
	for _, r := range s.rules {
		showRule(r)
	}
	if s.def != nil {
		showRule(s.def)
	}
	return b.String()
}

func showTmpl(t tmpl) string {
	var b strings.Builder
	for _, s := range t {
		switch s.v {
		case varNone:
			b.WriteString(s.lit)
		case varLastUser:
			b.WriteString("{{last_user}}")
		case varToolResult:
			b.WriteString("{{tool_result}}")
		case varNMessages:
			b.WriteString("{{n_messages}}")
		case varImages:
			b.WriteString("{{images}}")
		}
	}
	return b.String()
}

func TestParseScript(t *testing.T) {
	path := filepath.Join("testdata", "parse.txtar")
	a := readArchive(t, path)
	changed := false
	for _, f := range slices.Clone(a.Files) {
		name := f.Name
		base, ok := strings.CutSuffix(name, ".fake")
		if !ok {
			continue
		}
		t.Run(base, func(t *testing.T) {
			src := f.Data
			if strings.HasPrefix(base, "crlf") {
				src = strings.ReplaceAll(src, "\n", "\r\n")
			}
			s, err := ParseScript(name, []byte(src))
			if wantErr, ok := a.Get(base + ".err"); ok {
				if err == nil {
					t.Fatalf("parsed; want error %q", strings.TrimSpace(wantErr))
				}
				var pe *ParseError
				if !errors.As(err, &pe) || pe.File != name {
					t.Errorf("error %T %v: want a *ParseError naming %s", err, err, name)
				}
				if got := err.Error() + "\n"; got != wantErr {
					if *update {
						a.Set(base+".err", got)
						changed = true
						return
					}
					t.Errorf("error:\n got %s\nwant %s", got, wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("error %v; want none", err)
			}
			got := dump(s)
			want, ok := a.Get(base + ".want")
			if !ok || got != want {
				if *update {
					setAfter(a, name, base+".want", got)
					changed = true
					return
				}
				t.Errorf("parse mismatch (-want +got):\n%s", cmp.Diff(want, got))
			}
		})
	}
	if changed {
		if err := os.WriteFile(path, a.Format(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSampleScripts(t *testing.T) {
	a := readArchive(t, filepath.Join("testdata", "samples.txtar"))
	if len(a.Files) < 4 {
		t.Fatalf("samples.txtar has %d scripts", len(a.Files))
	}
	for _, f := range a.Files {
		if _, err := ParseScript(f.Name, []byte(f.Data)); err != nil {
			t.Errorf("%v", err)
		}
	}
}

func TestParseErrorLine(t *testing.T) {
	// Errors count every line, comments and blank ones too.
	src := "# comment\n\nmatch x\n  say ok\n\n  sya typo\n"
	_, err := ParseScript("demo.fake", []byte(src))
	want := `demo.fake:6: unknown directive "sya"`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

func FuzzParseScript(f *testing.F) {
	for _, file := range []string{"parse.txtar", "samples.txtar"} {
		a := readArchive(f, filepath.Join("testdata", file))
		for _, file := range a.Files {
			if strings.HasSuffix(file.Name, ".fake") {
				f.Add([]byte(file.Data))
			}
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := ParseScript("fuzz.fake", src)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a *ParseError", err, err)
			}
			if n := strings.Count(string(src), "\n") + 1; pe.Line < 1 || pe.Line > n {
				t.Fatalf("error line %d outside 1..%d: %v", pe.Line, n, err)
			}
			return
		}
		for _, r := range append(append([]*rule{}, s.rules...), s.def) {
			if r != nil && len(r.responses) == 0 {
				t.Fatalf("rule at line %d has no responses", r.line)
			}
		}
		// Parsing is deterministic.
		s2, err := ParseScript("fuzz.fake", src)
		if err != nil || dump(s) != dump(s2) {
			t.Fatalf("second parse differs: %v", err)
		}
	})
}
