package skill

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"agentd/internal/agent"
)

func TestParse(t *testing.T) {
	const file = "skills/x/SKILL.md"
	long := strings.Repeat("é", maxDescription)
	tests := []struct {
		name     string
		data     string
		want     Skill
		wantBody string
		wantErr  string
	}{
		{
			name:     "minimal",
			data:     "---\nname: x\ndescription: Does x.\n---\n# X\n\nDo it.\n",
			want:     Skill{Name: "x", Description: "Does x."},
			wantBody: "# X\n\nDo it.\n",
		},
		{
			name:     "crlf and byte order mark",
			data:     "\uFEFF---\r\nname: x\r\ndescription: Does x.\r\n---\r\nBody\r\n",
			want:     Skill{Name: "x", Description: "Does x."},
			wantBody: "Body\r\n",
		},
		{
			name: "closing line at the end, spaces after the delimiters",
			data: "---  \nname: x\ndescription: d\n--- ",
			want: Skill{Name: "x", Description: "d"},
		},
		{
			name:     "later delimiters belong to the body",
			data:     "---\nname: x\ndescription: d\n---\nabove\n---\nbelow\n",
			want:     Skill{Name: "x", Description: "d"},
			wantBody: "above\n---\nbelow\n",
		},
		{
			name: "aliases and quoting",
			data: "---\nname: &n \"x\"\ndescription: 'It''s x.'\nalias_of_name: *n\n---\n",
			want: Skill{Name: "x", Description: "It's x.", Extra: map[string]any{"alias_of_name": "x"}},
		},
		{
			name: "description of exactly 1024 characters",
			data: "---\nname: x\ndescription: " + long + "\n---\n",
			want: Skill{Name: "x", Description: long},
		},
		{
			name:    "description too long",
			data:    "---\nname: x\ndescription: " + long + "a\n---\n",
			wantErr: file + ":3: description is 1025 characters long; the limit is 1024",
		},
		{
			name:    "name too long",
			data:    "---\nname: " + strings.Repeat("x", 65) + "\ndescription: d\n---\n",
			wantErr: file + `:2: invalid name "` + strings.Repeat("x", 65) + `": want 1 to 64 lowercase letters, digits and '-'`,
		},
		{
			name:    "nothing but the opening line",
			data:    "---",
			wantErr: file + `:1: front matter has no closing "---" line`,
		},
		{
			name:    "empty file",
			data:    "",
			wantErr: file + `:1: missing front matter: the file must start with a line "---", then YAML fields (name, description), then another "---" line`,
		},
		{
			name:    "delimiter with text after it",
			data:    "--- name: x\n---\n",
			wantErr: file + `:1: missing front matter: the file must start with a line "---", then YAML fields (name, description), then another "---" line`,
		},
		{
			name:    "scalar front matter",
			data:    "---\njust text\n---\n",
			wantErr: file + `:2: front matter must be YAML fields (name: ..., description: ...), got the string "just text"`,
		},
		{
			name:    "null name and description",
			data:    "---\nname:\ndescription: ~\n---\n",
			wantErr: file + ":2: name must be a string, got nothing\n" + file + ":3: description must be a string, got nothing",
		},
		{
			name:    "non-string key",
			data:    "---\nname: x\ndescription: d\n[a]: b\n---\n",
			wantErr: file + ":4: field names must be plain strings, got a list",
		},
		{
			name:    "two documents",
			data:    "---\nname: x\ndescription: d\n...\n---\n",
			wantErr: "",
			want:    Skill{Name: "x", Description: "d"},
		},
		{
			name:    "duplicate key inside metadata",
			data:    "---\nname: x\ndescription: d\nmetadata:\n  a: 1\n  a: 2\n---\n",
			wantErr: file + `:6: metadata: mapping key "a" already defined at line 5`,
		},
		{
			name: "servers get the skill folder as their directory later",
			data: "---\nname: x\ndescription: d\nmcp_servers:\n  s: {command: ./s, dir: sub}\n---\n",
			want: Skill{Name: "x", Description: "d", MCPServers: map[string]agent.MCPServer{"s": {Command: "./s", Dir: "sub"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, body, err := parse(file, "x", []byte(tt.data))
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("no error; want %s", tt.wantErr)
				}
				if diff := cmp.Diff(tt.wantErr, err.Error()); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				if !errors.Is(err, ErrInvalid) {
					t.Errorf("error does not match ErrInvalid")
				}
				return
			}
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("skill (-want +got):\n%s", diff)
			}
			if body != tt.wantBody {
				t.Errorf("body = %q, want %q", body, tt.wantBody)
			}
		})
	}
}

func TestLoadServerDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "skills")
	folder := filepath.Join(dir, "x")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	data := "---\nname: x\ndescription: d\nmcp_servers:\n  a: {command: ./a}\n  b: {command: b, dir: sub}\n  c: {command: c, dir: /opt/c}\n---\n"
	if err := os.WriteFile(filepath.Join(folder, FileName), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := Load([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sk, _ := set.Get("x")
	got := map[string]string{}
	for name, s := range sk.MCPServers {
		got[name] = s.Dir
	}
	want := map[string]string{"a": folder, "b": filepath.Join(folder, "sub"), "c": "/opt/c"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("server dirs (-want +got):\n%s", diff)
	}
}

// FuzzParse feeds arbitrary bytes to the SKILL.md parser. It must never
// panic; every failure is a *ParseError naming the file and a line of it;
// a skill that parses has a valid name equal to its folder's, a
// description within the limit, and a body taken from the end of the file.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*.txtar")
	more, _ := filepath.Glob("testdata/load/*.txtar")
	for _, p := range append(paths, more...) {
		for _, file := range readArchive(f, p).Files {
			if strings.HasSuffix(file.Name, "/"+FileName) {
				f.Add([]byte(file.Data))
			}
		}
	}
	f.Add([]byte("---\nname: x\ndescription: d\nm: &a [*a, *a]\n---\n"))
	f.Add([]byte("---\nname: x\ndescription: d\nmetadata: {<<: [{a: 1}, {b: 2}]}\n---\n"))
	f.Add([]byte("---\r\nname: x\r\ndescription: |\r\n  d\r\n---\r\n"))
	f.Add([]byte("---\nname: x\ndescription: d\nmcp_servers: {s: {command: c, timeout: 1s, kinds: {t: context}}}\n---\n"))

	const file = "skills/x/SKILL.md"
	f.Fuzz(func(t *testing.T, data []byte) {
		sk, body, err := parse(file, "x", data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not match ErrInvalid: %v", err)
			}
			// YAML also breaks lines at a lone "\r".
			lines := bytes.Count(data, []byte("\n")) + bytes.Count(data, []byte("\r")) + 2
			var errs []error
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				errs = j.Unwrap()
			} else {
				errs = []error{err}
			}
			for _, e := range errs {
				pe, ok := e.(*ParseError)
				if !ok {
					t.Fatalf("not a *ParseError: %T %v", e, e)
				}
				if pe.File != file || pe.Line < 1 || pe.Line > lines || pe.Msg == "" {
					t.Fatalf("malformed error %#v (file has %d lines)", pe, lines)
				}
			}
			return
		}
		if sk.Name != "x" {
			t.Fatalf("name %q accepted for folder x", sk.Name)
		}
		if sk.Description == "" || utf8.RuneCountInString(sk.Description) > maxDescription || strings.TrimSpace(sk.Description) != sk.Description {
			t.Fatalf("bad description %q", sk.Description)
		}
		if !bytes.HasSuffix(data, []byte(body)) {
			t.Fatalf("body %q is not the end of the file", body)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	data := []byte(section(readArchive(b, "testdata/load/valid.txtar"), "skills/pdf-forms/SKILL.md"))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := parse("SKILL.md", "pdf-forms", data); err != nil {
			b.Fatal(err)
		}
	}
}
