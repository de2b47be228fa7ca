package service

import (
	"errors"
	"flag"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The units, against golden files (go test -update rewrites them).
func TestRenderGolden(t *testing.T) {
	for _, tc := range []struct {
		file string
		u    Unit
	}{
		{"system.service", Unit{Binary: "/usr/local/bin/agentd", DataDir: "/srv/agentd", RunAs: "agentd", Group: "agentd"}},
		{"system-root.service", Unit{Name: "agentd-lab", Binary: "/usr/local/bin/agentd", DataDir: "/var/lib/agentd-lab"}},
		{"user.service", Unit{Binary: "/home/ada/bin/agentd", DataDir: "/home/ada/agentd-data", User: true, RunAs: "ignored"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got, err := Render(tc.u)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tc.file)
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.file, diff)
			}
		})
	}
}

// Paths systemd would read as more than a path are refused.
func TestRenderRefusesPaths(t *testing.T) {
	for _, dir := range []string{"relative/dir", "/srv/agentd data", "/srv/$HOME", "/srv/100%", `/srv/a"b`, "/srv/a\\b", "/srv/a;b", "/srv/a\nExecStartPre=/bin/sh"} {
		if _, err := Render(Unit{Binary: "/usr/bin/agentd", DataDir: dir}); !errors.Is(err, ErrPath) {
			t.Errorf("data directory %q: %v, want ErrPath", dir, err)
		}
	}
	if _, err := Render(Unit{Name: "../evil", Binary: "/usr/bin/agentd", DataDir: "/srv/a"}); !errors.Is(err, ErrPath) {
		t.Errorf("unit name ../evil: %v", err)
	}
}

func TestPath(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		u    Unit
		dir  string
		env  map[string]string
		want string
	}{
		{Unit{}, "", nil, "/etc/systemd/system/agentd.service"},
		{Unit{Name: "lab"}, "", nil, "/etc/systemd/system/lab.service"},
		{Unit{User: true}, "", map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/x/systemd/user/agentd.service"},
		{Unit{User: true}, "", map[string]string{"HOME": "/h"}, "/h/.config/systemd/user/agentd.service"},
		{Unit{User: true}, "/units", nil, "/units/agentd.service"},
	} {
		got, err := Path(tc.u, tc.dir, env(tc.env))
		if err != nil || got != tc.want {
			t.Errorf("Path(%+v, %q) = %q, %v; want %q", tc.u, tc.dir, got, err, tc.want)
		}
	}
	if _, err := Path(Unit{User: true}, "", env(nil)); err == nil {
		t.Error("a user unit without $HOME has a path")
	}
}

// systemd itself finds nothing to say of the units (skipped where
// systemd-analyze is not installed).
func TestVerify(t *testing.T) {
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	for name, u := range map[string]Unit{
		"system": {Binary: bin, DataDir: t.TempDir(), RunAs: me.Username},
		"user":   {Binary: bin, DataDir: t.TempDir(), User: true},
	} {
		t.Run(name, func(t *testing.T) {
			b, err := Render(u)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "agentd.service")
			os.WriteFile(file, b, 0o644)
			said, err := Verify(t.Context(), file)
			if errors.Is(err, ErrNoVerifier) {
				t.Skip("systemd-analyze is not installed")
			}
			if err != nil || strings.Contains(said, "agentd.service") {
				t.Errorf("systemd-analyze verify: %v\n%s", err, said)
			}
		})
	}
	// And it does find a bad one.
	file := filepath.Join(t.TempDir(), "agentd.service")
	os.WriteFile(file, []byte("[Service]\nExecStart=/no/such/agentd serve\n"), 0o644)
	if said, err := Verify(t.Context(), file); err == nil && !strings.Contains(said, "/no/such/agentd") {
		t.Errorf("a unit whose binary is missing passed: %q", said)
	}
}
