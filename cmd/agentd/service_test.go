package main

// agentd service: the systemd unit, written, checked and removed through
// the binary (in directories of the test's; systemd is never asked to run
// it).

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

func TestServiceCommands(t *testing.T) {
	dir := dataDir(t, map[string]string{"agentd.yaml": "# defaults\n"})
	bin, err := filepath.EvalSymlinks(agentdBin)
	if err != nil {
		t.Fatal(err)
	}
	_, verifier := exec.LookPath("systemd-analyze")
	checked := "(checked with systemd-analyze verify)"
	if verifier != nil {
		checked = "(not checked: systemd-analyze is not installed)"
	}

	// --dry-run prints the unit: agentd serve on the data directory,
	// restarted, confined to the data directory.
	r := run(t, dir, "service", "install", "--dry-run")
	for _, want := range []string{"ExecStart=" + bin + " --data " + dir + " serve", "Restart=on-failure", "NoNewPrivileges=yes",
		"ProtectSystem=strict", "ReadWritePaths=" + dir, "PrivateTmp=yes", "EnvironmentFile=-" + filepath.Join(dir, "agentd.env"),
		"StandardOutput=journal", "WantedBy=multi-user.target"} {
		if r.code != 0 || !strings.Contains(r.stdout, want+"\n") {
			t.Errorf("service install --dry-run has no %q: %+v", want, r)
		}
	}
	system := r.stdout

	// A system unit, written where --unit-dir says; it runs agentd as the
	// data directory's owner.
	units := t.TempDir()
	r = run(t, dir, "service", "install", "--unit-dir", units, "--name", "agentd-test")
	file := filepath.Join(units, "agentd-test.service")
	if r.code != 0 || !strings.Contains(r.stdout, "wrote "+file+" "+checked) || !strings.Contains(r.stdout, "systemctl enable --now agentd-test") {
		t.Fatalf("service install: %+v", r)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	me, _ := user.Current()
	if me.Uid == "0" {
		if strings.Contains(string(b), "User=") || !strings.Contains(r.stdout, "agentd runs as root") {
			t.Errorf("a root-owned data directory: %+v\n%s", r, b)
		}
	} else if !strings.Contains(string(b), "User="+me.Username+"\n") {
		t.Errorf("the unit does not run agentd as %s:\n%s", me.Username, b)
	}
	if strings.Replace(string(b), "-u agentd-test", "-u agentd", 1) != system && me.Uid == "0" {
		t.Errorf("the unit written is not the one --dry-run prints:\n%s\n---\n%s", b, system)
	}

	// A user unit, where $XDG_CONFIG_HOME says.
	xdg := t.TempDir()
	env := []string{"XDG_CONFIG_HOME=" + xdg}
	r = runEnv(t, dir, env, "service", "install", "--user")
	file = filepath.Join(xdg, "systemd", "user", "agentd.service")
	if r.code != 0 || !strings.Contains(r.stdout, "wrote "+file) || !strings.Contains(r.stdout, "systemctl --user enable --now agentd") {
		t.Fatalf("service install --user: %+v", r)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("user unit: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(file); strings.Contains(string(b), "User=") || !strings.Contains(string(b), "WantedBy=default.target") {
		t.Errorf("user unit:\n%s", b)
	}
	// uninstall removes it; again, there is nothing to remove.
	if r := runEnv(t, dir, env, "service", "uninstall", "--user"); r.code != 0 || !strings.Contains(r.stdout, "removed "+file) {
		t.Errorf("service uninstall --user: %+v", r)
	}
	if _, err := os.Stat(file); err == nil {
		t.Error("the unit is still there")
	}
	if r := runEnv(t, dir, env, "service", "uninstall", "--user"); r.code != 3 || !strings.Contains(r.stderr, "no unit at "+file) {
		t.Errorf("service uninstall --user, twice: %+v", r)
	}
	// A unit agentd did not write is left alone.
	os.WriteFile(filepath.Join(units, "mine.service"), []byte("[Service]\nExecStart=/bin/true\n"), 0o644)
	if r := run(t, dir, "service", "uninstall", "--unit-dir", units, "--name", "mine"); r.code != 1 || !strings.Contains(r.stderr, "not written by agentd") {
		t.Errorf("uninstall of another unit: %+v", r)
	}

	// A mistyped data directory, and one systemd would misread.
	if r := run(t, filepath.Join(t.TempDir(), "nope"), "service", "install", "--dry-run"); r.code != 3 || !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("service install on a missing directory: %+v", r)
	}
	spaced := filepath.Join(t.TempDir(), "my data")
	run(t, spaced, "init")
	if r := run(t, spaced, "service", "install", "--dry-run"); r.code != 2 || !strings.Contains(r.stderr, "symlink") {
		t.Errorf("service install on a path with a space: %+v", r)
	}
}
