package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// agentd secret set reads the value from stdin, writes secrets.env with
// mode 0600, and list shows names, never values.
func TestSecretCommands(t *testing.T) {
	dir := dataDir(t, map[string]string{"agentd.yaml": "{}\n"})
	if r := runInput(t, dir, nil, "s3cr3t-token\n", "secret", "set", "GITHUB_TOKEN"); r.code != 0 {
		t.Fatalf("secret set: %+v", r)
	}
	if r := runInput(t, dir, nil, "other", "secret", "set", "A_KEY"); r.code != 0 {
		t.Fatalf("secret set: %+v", r)
	}
	path := filepath.Join(dir, "secrets.env")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secrets.env: %v, %v", fi, err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "GITHUB_TOKEN=s3cr3t-token\n") {
		t.Fatalf("secrets.env holds %q", b)
	}
	r := run(t, dir, "secret", "list")
	if r.code != 0 || r.stdout != "A_KEY\nGITHUB_TOKEN\n" || strings.Contains(r.stdout+r.stderr, "s3cr3t") {
		t.Fatalf("secret list: %+v", r)
	}
	if r := run(t, dir, "secret", "rm", "A_KEY"); r.code != 0 {
		t.Fatalf("secret rm: %+v", r)
	}
	if r := run(t, dir, "secret", "rm", "A_KEY"); r.code == 0 || !strings.Contains(r.stderr, "A_KEY is not set") {
		t.Fatalf("secret rm of a missing one: %+v", r)
	}
	if r := run(t, dir, "secret", "set", "NO_VALUE"); r.code != 2 || !strings.Contains(r.stderr, "no value on stdin") {
		t.Fatalf("secret set without a value: %+v", r)
	}
	if r := runInput(t, dir, nil, "x", "secret", "set", "bad-name"); r.code != 2 {
		t.Fatalf("secret set bad-name: %+v", r)
	}
	// A secrets file others can read is refused.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := run(t, dir, "secret", "list"); r.code == 0 || !strings.Contains(r.stderr, "chmod 600") {
		t.Fatalf("secret list of a 0644 file: %+v", r)
	}
}
