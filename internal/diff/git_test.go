package diff

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitPairs are before/after contents the checks against git run on.
var gitPairs = []struct{ name, a, b string }{
	{"one change", "a\nb\nc\nd\ne\nf\ng\nh\n", "a\nb\nC\nd\ne\nf\ng\nh\n"},
	{"far apart", strings.Repeat("x\n", 3) + "a\n" + strings.Repeat("y\n", 12) + "b\n", strings.Repeat("x\n", 3) + "A\n" + strings.Repeat("y\n", 12) + "B\n"},
	{"no newline at the end", "a\nb\nc", "a\nb\nc\nd"},
	{"newline added", "a\nb", "a\nb\n"},
	{"moved block", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "6\n7\n8\n1\n2\n3\n4\n5\n9\n"},
	{"blank lines", "\n\nx\n\n", "x\n\n\n\ny\n"},
	{"create", "", "new\nfile\n"},
	{"delete", "old\nfile\n", ""},
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 && args[0] == "diff" {
			return string(out) // differences found
		}
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func needGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// TestGitDiffApplies: the diff git diff --no-index writes parses and
// applies with Apply to git's result.
func TestGitDiffApplies(t *testing.T) {
	needGit(t)
	for _, p := range gitPairs {
		t.Run(p.name, func(t *testing.T) {
			dir := t.TempDir()
			old, new := "a/f.txt", "b/f.txt"
			if p.a == "" {
				old = "/dev/null"
			}
			if p.b == "" {
				new = "/dev/null"
			}
			writeSide(t, dir, "a/f.txt", p.a, p.a != "")
			writeSide(t, dir, "b/f.txt", p.b, p.b != "")
			patch := git(t, dir, "diff", "--no-index", "--no-color", old, new)
			fs, err := Parse(patch)
			if err != nil {
				t.Fatalf("Parse: %v\n%s", err, patch)
			}
			got, err := Apply(p.a, fs[0])
			if err != nil || got != p.b {
				t.Fatalf("Apply = %q, %v; want %q\n%s", got, err, p.b, patch)
			}
		})
	}
}

// TestGitApplyAccepts: git apply takes Unified's diff and gives b.
func TestGitApplyAccepts(t *testing.T) {
	needGit(t)
	for _, p := range gitPairs {
		t.Run(p.name, func(t *testing.T) {
			dir := t.TempDir()
			git(t, dir, "init", "-q")
			oldPath, newPath := "f.txt", "f.txt"
			if p.a == "" {
				oldPath = ""
			} else {
				writeSide(t, dir, "f.txt", p.a, true)
			}
			if p.b == "" {
				newPath = ""
			}
			patch := Unified(oldPath, newPath, p.a, p.b)
			if err := os.WriteFile(filepath.Join(dir, "p.diff"), []byte(patch), 0o600); err != nil {
				t.Fatal(err)
			}
			git(t, dir, "apply", "p.diff")
			got, err := os.ReadFile(filepath.Join(dir, "f.txt"))
			if p.b == "" {
				if !os.IsNotExist(err) {
					t.Fatalf("not deleted: %v", err)
				}
				return
			}
			if string(got) != p.b {
				t.Fatalf("git apply gave %q; want %q\n%s", got, p.b, patch)
			}
		})
	}
}

func writeSide(t *testing.T, dir, name, data string, exists bool) {
	t.Helper()
	if !exists {
		return
	}
	p := filepath.Join(dir, name)
	os.MkdirAll(filepath.Dir(p), 0o700)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
