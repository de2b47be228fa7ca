package agent

import (
	"strings"
	"testing"
)

// The store is written as its URL alone or as a mapping; a URL with a
// password is refused, naming the file, line and field, and the password
// is not repeated.
func TestStoreConfig(t *testing.T) {
	for _, tc := range []struct {
		yaml, url, err string
	}{
		{"", StoreSQLite, ""},
		{"store: sqlite\n", StoreSQLite, ""},
		{"store: postgres://agentd@db/agentd\n", "postgres://agentd@db/agentd", ""},
		{"store:\n  url: postgresql://db/agentd?sslmode=require\n  pool_size: 4\n", "postgresql://db/agentd?sslmode=require", ""},
		{"store:\n  synchronous: normal\n", StoreSQLite, ""},
		{"store: mysql://db\n", "", "agentd.yaml:1: store.url: must be sqlite or a postgres:// URL"},
		{"store: postgres://agentd:s3cret@db/agentd\n", "", "agentd.yaml:1: store.url: must not contain a password"},
		{"\nstore:\n  url: postgres://db/agentd?password=s3cret\n", "", "agentd.yaml:3: store.url: must not contain a password"},
		{"store:\n  sslmode: sometimes\n", "", "store.sslmode: must be disable, allow, prefer, require, verify-ca or verify-full"},
		{"store:\n  pool_size: -1\n", "", "store.pool_size: must not be negative"},
		{"store:\n  lease_ttl: 3s\n", StoreSQLite, ""},
		{"store:\n  lease_ttl: 100ms\n", "", "agentd.yaml:2: store.lease_ttl: must be at least 300ms"},
		{"store:\n  lease_ttl: -1s\n", "", "store.lease_ttl: must be at least 300ms"},
		{"store:\n  password_env: $PGPW\n", "", "store.password_env: write the variable's name without $"},
		{"store:\n  urll: x\n", "", "store.urll: unknown field"},
	} {
		dir := t.TempDir()
		writeTestFile(t, dir, ConfigFile, tc.yaml)
		cfg, err := LoadConfig(dir)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want %q", tc.yaml, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("%q: the error shows the password: %v", tc.yaml, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.yaml, err)
			continue
		}
		if cfg.Store.URL != tc.url {
			t.Errorf("%q: url %q, want %q", tc.yaml, cfg.Store.URL, tc.url)
		}
	}
}

// The jobs' run history retention: a count and an age, each checked,
// naming the file, line and field.
func TestJobsConfig(t *testing.T) {
	for _, tc := range []struct {
		yaml    string
		keep    int
		keepFor string
		err     string
	}{
		{"", DefaultKeepRuns, "0s", ""},
		{"jobs:\n  keep_runs: 50\n  keep_runs_for: 720h\n", 50, "720h0m0s", ""},
		{"jobs:\n  keep_runs: -1\n", 0, "", "agentd.yaml:2: jobs.keep_runs: must not be negative"},
		{"jobs:\n  keep_runs_for: 10m\n", 0, "", "agentd.yaml:2: jobs.keep_runs_for: must be at least 1h"},
		{"jobs:\n  keep_runs_for: soon\n", 0, "", "jobs.keep_runs_for"},
		{"jobs:\n  keep: 3\n", 0, "", "jobs.keep: unknown field"},
	} {
		dir := t.TempDir()
		writeTestFile(t, dir, ConfigFile, tc.yaml)
		cfg, err := LoadConfig(dir)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want %q", tc.yaml, err, tc.err)
			}
			continue
		}
		if err != nil || cfg.Jobs.KeepRuns != tc.keep || cfg.Jobs.KeepRunsFor.D().String() != tc.keepFor {
			t.Errorf("%q: %+v, %v; want keep_runs %d, keep_runs_for %s", tc.yaml, cfg.Jobs, err, tc.keep, tc.keepFor)
		}
	}
}
