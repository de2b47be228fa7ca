package main

// The file tools through the binary, in process and through the daemon:
// an agent writes, edits, patches, lists, globs and greps its workspace,
// and every way out of it is a tool error the model sees.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const fileSecret = "file-secret-7c1d2e" // in the data directory, outside every workspace

// fileTools are the file tools, offered and allowed: a non-empty
// tools.allow is an allow list, so the read-only ones are named too.
var fileTools = []string{"read_file", "write_file", "edit_file", "apply_patch", "list_dir", "glob", "grep"}

func TestMachineFiles(t *testing.T) {
	patch := "--- src/a.txt\n+++ src/a.txt\n@@ -1,3 +1,3 @@\n one\n TWO\n-three\n+THREE\n"
	addr := fake(t, callScript(t,
		scripted{"write", "write_file", map[string]string{"path": "src/a.txt", "content": "one\ntwo\nthree\n"}},
		scripted{"edit", "edit_file", map[string]string{"path": "src/a.txt", "old": "two", "new": "TWO"}},
		scripted{"patch", "apply_patch", map[string]string{"patch": patch}},
		scripted{"read", "read_file", map[string]string{"path": "src/a.txt"}},
		scripted{"list", "list_dir", map[string]string{"path": "src"}},
		scripted{"glob", "glob", map[string]string{"pattern": "**/*.txt"}},
		scripted{"grep", "grep", map[string]string{"pattern": "T[WH]"}},
		scripted{"edit-none", "edit_file", map[string]string{"path": "src/a.txt", "old": "four", "new": "4"}},
		// Ways out.
		scripted{"up-token", "read_file", map[string]string{"path": "../../gateway.token"}},
		scripted{"up-secret", "read_file", map[string]string{"path": "../../secret.txt"}},
		scripted{"passwd", "read_file", map[string]string{"path": "/etc/passwd"}},
		scripted{"up-write", "write_file", map[string]string{"path": "../../pwned.txt", "content": "pwned"}},
		scripted{"abs-write", "write_file", map[string]string{"path": "/tmp/agentd-pwned.txt", "content": "pwned"}},
		scripted{"link-read", "read_file", map[string]string{"path": "data/secret.txt"}},
		scripted{"link-write", "write_file", map[string]string{"path": "data/pwned.txt", "content": "pwned"}},
		scripted{"link-edit", "edit_file", map[string]string{"path": "data/secret.txt", "old": fileSecret, "new": "gone"}},
		scripted{"link-patch", "apply_patch", map[string]string{"patch": "--- /dev/null\n+++ data/pwned.txt\n@@ -0,0 +1 @@\n+pwned\n"}},
		scripted{"link-list", "list_dir", map[string]string{"path": "data"}},
		scripted{"link-grep", "grep", map[string]string{"pattern": "file-secret"}},
		scripted{"link-glob", "glob", map[string]string{"pattern": "data/**"}},
	))
	files := map[string]string{
		"agents/m.yaml":     machineAgent(addr, fileTools, fileTools, ""),
		"secret.txt":        fileSecret + "\n",
		"workspace/m/.keep": "",
		"workspace/other/x": fileSecret + "\n",
	}
	eachWay(t, files, func(t *testing.T, w *way) {
		dir := w.dir
		token := okRun(t, dir, "token") // gateway.token, made on first use
		ws := filepath.Join(dir, "workspace", "m")
		// A symlink planted in the workspace to the data directory.
		if err := os.Symlink(dir, filepath.Join(ws, "data")); err != nil {
			t.Fatal(err)
		}
		const s = "m/s1"
		okResult(t, dir, s, "write", "write_file")
		okResult(t, dir, s, "edit", "edit_file")
		okResult(t, dir, s, "patch", "apply_patch")
		b, err := os.ReadFile(filepath.Join(ws, "src", "a.txt"))
		if err != nil || string(b) != "one\nTWO\nTHREE\n" {
			t.Errorf("src/a.txt after write, edit and patch: %q, %v", b, err)
		}
		if fi, err := os.Stat(filepath.Join(ws, "src", "a.txt")); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("src/a.txt: %v, %v; want mode 0600", fi.Mode(), err)
		}
		for _, c := range []struct{ trigger, tool, want string }{
			{"read", "read_file", "src/a.txt lines 1–3 of 3\none\nTWO\nTHREE\n"},
			{"list", "list_dir", "a.txt"},
			{"glob", "glob", "src/a.txt"},
			{"grep", "grep", "src/a.txt:2:TWO\nsrc/a.txt:3:THREE"},
		} {
			if out := okResult(t, dir, s, c.trigger, c.tool); !strings.Contains(out, c.want) {
				t.Errorf("%s: %s said %q; want %q in it", c.trigger, c.tool, out, c.want)
			}
		}
		if out := errResult(t, dir, s, "edit-none", "edit_file"); !strings.Contains(out, "does not occur in src/a.txt") {
			t.Errorf("edit_file of text not there said %q", out)
		}

		before := treeDigest(t, dir, ws)
		for _, c := range []struct{ trigger, tool string }{
			{"up-token", "read_file"}, {"up-secret", "read_file"}, {"passwd", "read_file"},
			{"up-write", "write_file"}, {"abs-write", "write_file"},
			{"link-read", "read_file"}, {"link-write", "write_file"}, {"link-edit", "edit_file"},
			{"link-patch", "apply_patch"}, {"link-list", "list_dir"},
		} {
			out := errResult(t, dir, s, c.trigger, c.tool)
			if !strings.Contains(out, "outside the workspace") {
				t.Errorf("%s: %s said %q; want it to say the path is outside the workspace", c.trigger, c.tool, out)
			}
			noLeak(t, c.trigger, out, string(token))
		}
		// grep and glob walk the workspace without following the symlink.
		for _, c := range []struct{ trigger, tool string }{{"link-grep", "grep"}, {"link-glob", "glob"}} {
			out := oneResult(t, dir, s, c.trigger, c.tool).Output
			noLeak(t, c.trigger, out, string(token))
			if strings.Contains(out, "secret.txt") {
				t.Errorf("%s: %s found a file through the symlink: %q", c.trigger, c.tool, out)
			}
		}
		if after := treeDigest(t, dir, ws); after != before {
			t.Errorf("the data directory outside the workspace changed:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		if _, err := os.Stat("/tmp/agentd-pwned.txt"); err == nil {
			os.Remove("/tmp/agentd-pwned.txt")
			t.Error("write_file of an absolute path wrote /tmp/agentd-pwned.txt")
		}
	})
}

// noLeak fails the test when out holds the data directory's secret or
// the gateway's token.
func noLeak(t *testing.T, what, out, token string) {
	t.Helper()
	if strings.Contains(out, fileSecret) || strings.Contains(out, "root:x:") || (strings.TrimSpace(token) != "" && strings.Contains(out, strings.TrimSpace(token))) {
		t.Errorf("%s: a secret came back: %q", what, out)
	}
}
