package secret

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFileSetListRemove(t *testing.T) {
	dir := t.TempDir()
	f := NewFile(dir)
	if names, err := f.Names(); err != nil || len(names) != 0 {
		t.Fatalf("no file: %v, %v", names, err)
	}
	for _, kv := range [][2]string{{"B", "two = 2"}, {"A", "one"}, {"B", "three#3"}} {
		if err := f.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(f.Path())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secrets file: %v, %v; want mode 0600", fi, err)
	}
	if names, err := f.Names(); err != nil || !cmp.Equal(names, []string{"A", "B"}) {
		t.Fatalf("Names = %v, %v", names, err)
	}
	if v, ok, err := f.Get("B"); err != nil || !ok || v != "three#3" {
		t.Fatalf("Get(B) = %q %v %v", v, ok, err)
	}
	if ok, err := f.Remove("A"); err != nil || !ok {
		t.Fatalf("Remove(A) = %v %v", ok, err)
	}
	if ok, err := f.Remove("A"); err != nil || ok {
		t.Fatalf("Remove(A) again = %v %v", ok, err)
	}
	if names, _ := f.Names(); !cmp.Equal(names, []string{"B"}) {
		t.Fatalf("after Remove: %v", names)
	}
	// No temporary file is left behind.
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("data directory holds %v", ents)
	}
}

func TestFileRefusesBadInput(t *testing.T) {
	f := NewFile(t.TempDir())
	if err := f.Set("1X", "v"); !errors.Is(err, ErrSyntax) {
		t.Errorf("Set(1X): %v", err)
	}
	if err := f.Set("X", "a\nY=b"); !errors.Is(err, ErrBadValue) {
		t.Errorf("Set with a line break: %v", err)
	}
	if err := os.WriteFile(f.Path(), []byte("# c\n\nA=1\nnot a line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Load(); err == nil || !strings.Contains(err.Error(), FileName+":4:") {
		t.Errorf("a bad line: %v, want its line number", err)
	}
}

// A secrets file others may read is refused, whatever it holds, and the
// error shows no value.
func TestFileRefusedUnlessPrivate(t *testing.T) {
	f := NewFile(t.TempDir())
	if err := os.WriteFile(f.Path(), []byte("TOKEN=hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o660, 0o700} {
		if err := os.Chmod(f.Path(), mode); err != nil {
			t.Fatal(err)
		}
		_, _, err := f.Get("TOKEN")
		if mode&0o077 == 0 {
			if err != nil {
				t.Errorf("mode %04o: %v", mode, err)
			}
			continue
		}
		if !errors.Is(err, ErrInsecure) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("mode %04o: %v, want ErrInsecure", mode, err)
		}
		if err := f.Set("OTHER", "x"); !errors.Is(err, ErrInsecure) {
			t.Errorf("Set with mode %04o: %v, want ErrInsecure", mode, err)
		}
	}
	// A directory is refused.
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, FileName), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := NewFile(dir).Load(); !errors.Is(err, ErrInsecure) {
		t.Errorf("a directory: %v", err)
	}
}

func TestResolverExpand(t *testing.T) {
	dir := t.TempDir()
	if err := NewFile(dir).Set("TOKEN", "s3cr3t-value"); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"USER_ID": "42"}
	r := NewResolver(dir, &Options{LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	got, vals, err := r.Expand("Bearer ${secret:TOKEN} for ${env:USER_ID}")
	if err != nil || got != "Bearer s3cr3t-value for 42" {
		t.Fatalf("Expand = %q, %v", got, err)
	}
	if red := Redact("echo: "+got, vals); red != "echo: Bearer ${secret:TOKEN} for ${env:USER_ID}" {
		t.Errorf("Redact = %q", red)
	}
	for in, want := range map[string]string{
		"${secret:NOPE}": "secret not set: ${secret:NOPE}",
		"${env:NOPE}":    "secret not set: ${env:NOPE}",
	} {
		if _, _, err := r.Expand(in); !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), want) {
			t.Errorf("Expand(%q): %v, want %q", in, err, want)
		}
	}
	if _, _, err := NewResolver("", nil).Expand("${secret:TOKEN}"); !errors.Is(err, ErrMissing) {
		t.Errorf("no secrets file: %v", err)
	}
}
