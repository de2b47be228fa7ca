package main

import (
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// openModes lists the entries of dir that group or others may use.
func openModes(t *testing.T, dir string) []string {
	t.Helper()
	var open []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink == 0 && fi.Mode().Perm()&0o077 != 0 {
			open = append(open, fi.Mode().Perm().String()+" "+strings.TrimPrefix(p, dir))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return open
}

// openUp makes dir and everything in it readable by everyone, as an older
// agentd left them (0755 directories, 0644 files).
func openUp(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.Chmod(p, 0o755)
		case d.Type().IsRegular():
			return os.Chmod(p, 0o644)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// readAsNobody reads a file as another local user (uid 65534), as a
// stranger on the machine would; it needs root to switch users.
func readAsNobody(t *testing.T, path string) error {
	t.Helper()
	cmd := exec.Command("cat", path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	return cmd.Run()
}

// The data directory is private: 0700, and everything agentd writes in it
// owner-only, whoever made it (init, serve, an in-process command, PUT of
// an agent file); a directory an older agentd left open is tightened, with
// one line saying so, and another local user reads nothing.
func TestDataDirPrivate(t *testing.T) {
	root := t.TempDir()
	// A place another user may reach, as a home directory usually is.
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(root), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "data")
	// A turn that remembers something: memory.db is made when first
	// written.
	addr := fake(t, "match ^hello\ncall remember {\"insight\": \"the lighthouse ships in March\"}\n---\nsay noted\n\nmatch *\nsay ok\n")

	okRun(t, dir, "init")
	if err := os.WriteFile(filepath.Join(dir, "agents", "a.yaml"), []byte(openaiAgent(addr, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	okRun(t, dir, "send", "a", "hello") // in process: both databases (it remembers)
	okRun(t, dir, "token")
	d := serve(t, dir)
	okRun(t, dir, "send", "a", "again")
	req, _ := http.NewRequest(http.MethodPut, "http://agentd/v1/agents/b", strings.NewReader(openaiAgent(addr, "")))
	resp, err := unixHTTP(dir).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT /v1/agents/b: %s", resp.Status)
	}
	for _, f := range []string{"agentd.db", "agentd.db-wal", "agentd.db-shm", "memory.db", "agentd.yaml", "agents/a.yaml", "agents/b.yaml", "gateway.token"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("expected %s: %v", f, err)
		}
	}
	if open := openModes(t, dir); len(open) > 0 {
		t.Errorf("a new data directory has entries open to others: %q", open)
	}
	d.stop(t)

	// An existing directory left open by an older agentd.
	tightened := func(how, out string) {
		t.Helper()
		if !strings.Contains(out, "was mode 0755, readable by other users: made it 0700") {
			t.Errorf("%s did not say it tightened the data directory:\n%s", how, out)
		}
		if open := openModes(t, dir); len(open) > 0 {
			t.Errorf("after %s, entries open to others: %q", how, open)
		}
		if os.Geteuid() == 0 {
			for _, f := range []string{"agentd.db", "memory.db", "agentd.yaml", "agents/a.yaml"} {
				if err := readAsNobody(t, filepath.Join(dir, f)); err == nil {
					t.Errorf("after %s, another user reads %s", how, f)
				}
			}
		}
	}
	openUp(t, dir)
	if os.Geteuid() == 0 {
		if err := readAsNobody(t, filepath.Join(dir, "agentd.db")); err != nil {
			t.Fatalf("the test cannot read an open file as another user: %v", err)
		}
	}
	d = serve(t, dir)
	tightened("serve", d.out.String())
	d.stop(t)

	openUp(t, dir)
	r := run(t, dir, "sessions")
	if r.code != 0 {
		t.Fatalf("sessions: %+v", r)
	}
	tightened("an in-process command", r.stderr)
}
