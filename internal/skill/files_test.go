package skill

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/txtar"
)

// loadBodyFixture loads testdata/body.txtar and adds its binary and large
// files.
func loadBodyFixture(t *testing.T) (*txtar.Archive, string, *Set) {
	t.Helper()
	a, root, set := loadFixture(t, "testdata/body.txtar")
	data := filepath.Join(root, "skills", "pdf", "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "blob.bin"), []byte("PK\x03\x04\x00\x00binary"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The cut falls inside the €, so it is made before it.
	big := strings.Repeat("a", MaxFileBytes-1) + "€ and the rest"
	if err := os.WriteFile(filepath.Join(data, "big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	return a, root, set
}

// testdata/body.txtar's want/<skill> sections are the golden Body of each
// skill, its folder written as $ROOT.
func TestBody(t *testing.T) {
	const path = "testdata/body.txtar"
	a, root, set := loadBodyFixture(t)
	for _, name := range []string{"pdf", "bare"} {
		got, err := set.Body(name)
		if err != nil {
			t.Fatalf("Body(%s): %v", name, err)
		}
		got = relative(root, got)
		if *update {
			a.Set("want/"+name, got)
			continue
		}
		if diff := cmp.Diff(section(a, "want/"+name), got); diff != "" {
			t.Errorf("Body(%s) (-want +got):\n%s", name, diff)
		}
	}
	if *update {
		if err := os.WriteFile(path, a.Format(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := set.Body("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Body(nope): %v, want ErrNotFound", err)
	}
}

func TestBodyListIsBounded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "skills", "many")
	if err := os.MkdirAll(filepath.Join(dir, "files"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("---\nname: many\ndescription: d\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range maxListed + 5 {
		if err := os.WriteFile(filepath.Join(dir, "files", fmt.Sprintf("f%03d.txt", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := Load([]string{filepath.Dir(dir)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := set.Body("many")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(body, "\n- files/"); n != maxListed {
		t.Errorf("%d files listed, want %d", n, maxListed)
	}
	if !strings.HasSuffix(body, "- files/f199.txt\n- ... and 5 more\n") {
		t.Errorf("body does not end with the count of the rest:\n%s", body[len(body)-200:])
	}
}

func TestReadFile(t *testing.T) {
	_, root, set := loadBodyFixture(t)
	tests := []struct {
		file    string
		want    string
		wantErr string // a part of the error; "" for none
	}{
		{file: "scripts/fill.py", want: "print(\"fill\")\n"},
		{file: "./scripts//fill.py", want: "print(\"fill\")\n"},
		{file: "reference/../scripts/fill.py", wantErr: `contains ".."`},
		{file: "link-in.md", want: "# Field types\n"},
		{file: "dir-in/forms.md", want: "# Field types\n"},
		{file: "SKILL.md", want: "---\nname: pdf\n"},
		{file: "../bare/SKILL.md", wantErr: `"../bare/SKILL.md" contains ".."`},
		{file: "..", wantErr: `contains ".."`},
		{file: `..\bare\SKILL.md`, wantErr: `contains ".."`},
		{file: "/etc/passwd", wantErr: `"/etc/passwd" is absolute`},
		{file: root + "/outside/secret.txt", wantErr: "is absolute"},
		{file: "link-out.txt", wantErr: `"link-out.txt" leads outside the skill's folder`},
		{file: "dir-out/secret.txt", wantErr: `"dir-out/secret.txt" leads outside the skill's folder`},
		{file: "abs-out", wantErr: "leads outside the skill's folder"},
		{file: "to-hidden", wantErr: `"to-hidden" leads to a hidden file`},
		{file: ".env", wantErr: `".env" is a hidden file`},
		{file: ".git/config", wantErr: "is a hidden file"},
		{file: "reference/.draft.md", wantErr: "is a hidden file"},
		{file: "dangling", wantErr: `no file "dangling" in the skill's folder`},
		{file: "missing.txt", wantErr: `no file "missing.txt" in the skill's folder`},
		{file: "scripts", wantErr: `"scripts" is a folder`},
		{file: ".", wantErr: `"." is a folder`},
		{file: "", wantErr: "no file given"},
		{file: "a\x00b", wantErr: "NUL"},
		{file: "data/blob.bin", wantErr: `"data/blob.bin" is a binary file`},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := set.ReadFile("pdf", tt.file)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				if strings.Contains(tt.wantErr, "binary") {
					return
				}
				if !errors.Is(err, ErrBadPath) {
					t.Errorf("error does not match ErrBadPath: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("content = %q, want it to start with %q", got, tt.want)
			}
		})
	}

	t.Run("large file is cut", func(t *testing.T) {
		got, err := set.ReadFile("pdf", "data/big.txt")
		if err != nil {
			t.Fatal(err)
		}
		content, note, ok := strings.Cut(got, "\n[file cut: ")
		if !ok {
			t.Fatalf("no note about the cut at the end of %q", got[len(got)-100:])
		}
		if len(content) != MaxFileBytes-1 || strings.ContainsRune(content, '\uFFFD') {
			t.Errorf("kept %d bytes, want %d, a whole character short of the limit", len(content), MaxFileBytes-1)
		}
		size := MaxFileBytes - 1 + len("€ and the rest")
		if want := fmt.Sprintf("showing the first %d of %d bytes]", MaxFileBytes-1, size); note != want {
			t.Errorf("note %q, want %q", note, want)
		}
	})
	t.Run("unknown skill", func(t *testing.T) {
		if _, err := set.ReadFile("nope", "x"); !errors.Is(err, ErrNotFound) {
			t.Errorf("error = %v, want ErrNotFound", err)
		}
	})
}
