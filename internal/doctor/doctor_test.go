package doctor

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"agentd/internal/agent"
	"agentd/internal/gateway"
	"agentd/internal/model"
	"agentd/internal/store/sqlite"
)

// layout is agentd's, as the wiring gives it.
var layout = Layout{DB: "agentd.db", Lock: "agentd.lock", Socket: "agentd.sock", HasData: func(dir string) bool {
	for _, n := range []string{"agentd.db", "agentd.yaml", "agents"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}}

// files writes a data directory (mode 0700) with files.
func files(t *testing.T, fs map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range fs {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// listener is a TCP address that answers.
func listener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// closedAddr is a TCP address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := ln.Addr().String()
	ln.Close()
	return a
}

func openaiAt(addr, extra string) string {
	return "model:\n  provider: openai\n  name: fake\n  base_url: http://" + addr + "/v1\n" + extra
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

type prober struct{ err error }

func (p prober) Probe(context.Context, agent.Model) error { return p.err }

type daemon struct {
	st      gateway.StatusResponse
	servers []gateway.ServerInfo
}

func (d daemon) Status(context.Context) (gateway.StatusResponse, error) { return d.st, nil }
func (d daemon) MCPServers(context.Context) ([]gateway.ServerInfo, error) {
	return d.servers, nil
}

func TestDoctor(t *testing.T) {
	quiet := "gateway:\n  listen: off\n"
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) (string, *Options)
		// want are checks that must be there: area, name, status, and a
		// word of the detail or the fix.
		want   []Check
		failed bool
	}{
		{"missing directory", func(t *testing.T) (string, *Options) {
			return filepath.Join(t.TempDir(), "nope"), nil
		}, []Check{{Area: "data", Name: "data directory", Status: Fail, Fix: "agentd init"}}, true},
		{"no agentd data", func(t *testing.T) (string, *Options) {
			return t.TempDir(), nil
		}, []Check{{Area: "data", Name: "data directory", Status: Fail, Detail: "has no agentd data"}}, true},
		{"healthy", func(t *testing.T) (string, *Options) {
			dir := files(t, map[string]string{"agentd.yaml": quiet, "agents/a.yaml": openaiAt(listener(t), "")})
			return dir, &Options{Env: env(nil)}
		}, []Check{
			{Area: "data", Name: "data directory", Status: OK},
			{Area: "data", Name: "lock", Status: OK, Detail: "not running"},
			{Area: "data", Name: "schema", Status: OK, Detail: "no database yet"},
			{Area: "agent", Name: "a", Status: OK, Detail: "agents/a.yaml"},
			{Area: "model", Name: "openai fake at http://", Status: OK, Detail: "answers"},
			{Area: "gateway", Name: "address", Status: OK, Detail: "off"},
		}, false},
		{"open directory", func(t *testing.T) (string, *Options) {
			dir := files(t, map[string]string{"agentd.yaml": quiet, "agentd.db": ""})
			os.Chmod(dir, 0o755)
			os.Chmod(filepath.Join(dir, "agentd.db"), 0o644)
			return dir, nil
		}, []Check{
			{Area: "data", Name: "data directory", Status: Fail, Fix: "chmod 700"},
			{Area: "data", Name: "file modes", Status: Warn, Detail: "agentd.db (0644)"},
		}, true},
		{"bad agent file", func(t *testing.T) (string, *Options) {
			return files(t, map[string]string{"agentd.yaml": quiet, "agents/b.yaml": "name: B\nbudgets:\n  max_stepz: 3\n"}), nil
		}, []Check{{Area: "agent", Name: "b", Status: Fail, Detail: "max_stepz"}}, true},
		{"bad agentd.yaml", func(t *testing.T) (string, *Options) {
			return files(t, map[string]string{"agentd.yaml": "gateway:\n  lisen: x\n"}), nil
		}, []Check{{Area: "agent", Name: "agentd.yaml", Status: Fail, Detail: "lisen"}}, true},
		{"key not set", func(t *testing.T) (string, *Options) {
			dir := files(t, map[string]string{"agentd.yaml": quiet, "agents/a.yaml": openaiAt(listener(t), "  api_key_env: MY_KEY\n")})
			return dir, &Options{Env: env(nil)}
		}, []Check{{Area: "model", Name: "openai fake at http://", Status: Fail, Detail: "MY_KEY is not set"}}, true},
		{"model down", func(t *testing.T) (string, *Options) {
			return files(t, map[string]string{"agentd.yaml": quiet, "agents/a.yaml": openaiAt(closedAddr(t), "")}), nil
		}, []Check{{Area: "model", Name: "openai fake at http://", Status: Fail, Detail: "does not answer"}}, true},
		{"probe refused", func(t *testing.T) (string, *Options) {
			dir := files(t, map[string]string{"agentd.yaml": quiet, "agents/a.yaml": openaiAt(listener(t), "  api_key_env: MY_KEY\n")})
			return dir, &Options{Env: env(map[string]string{"MY_KEY": "k"}), Prober: prober{&model.Error{Kind: model.ErrAuth, Provider: "openai", Status: 401}}}
		}, []Check{{Area: "model", Name: "openai fake at http://", Status: Fail, Fix: "refused the key: check MY_KEY"}}, true},
		{"probe answers", func(t *testing.T) (string, *Options) {
			dir := files(t, map[string]string{"agentd.yaml": quiet, "agents/a.yaml": openaiAt(listener(t), "")})
			return dir, &Options{Prober: prober{}}
		}, []Check{{Area: "model", Name: "openai fake at http://", Status: OK, Detail: "one-token call answered"}}, false},
		{"echo model", func(t *testing.T) (string, *Options) {
			return files(t, map[string]string{"agentd.yaml": quiet}), nil
		}, []Check{
			{Area: "agent", Name: "assistant", Status: OK, Detail: "built in"},
			{Area: "model", Name: "echo ", Status: Warn, Fix: "OPENAI_API_KEY"},
		}, false},
		{"newer schema", func(t *testing.T) (string, *Options) {
			dir := files(t, map[string]string{"agentd.yaml": quiet})
			db, err := sql.Open("sqlite", filepath.Join(dir, "agentd.db"))
			if err != nil {
				t.Fatal(err)
			}
			db.Exec("PRAGMA user_version = 999")
			db.Close()
			return dir, nil
		}, []Check{{Area: "data", Name: "schema", Status: Fail, Detail: "newer agentd"}}, true},
		{"older schema", func(t *testing.T) (string, *Options) {
			dir := files(t, map[string]string{"agentd.yaml": quiet})
			db, err := sql.Open("sqlite", filepath.Join(dir, "agentd.db"))
			if err != nil {
				t.Fatal(err)
			}
			db.Exec(fmt.Sprintf("PRAGMA user_version = %d", sqlite.SchemaVersion()-1))
			db.Close()
			return dir, nil
		}, []Check{{Area: "data", Name: "schema", Status: OK, Detail: fmt.Sprintf("version %d: this agentd upgrades it to %d at its next start", sqlite.SchemaVersion()-1, sqlite.SchemaVersion())}}, false},
		{"current schema", func(t *testing.T) (string, *Options) {
			dir := files(t, map[string]string{"agentd.yaml": quiet})
			s, err := sqlite.Open(t.Context(), filepath.Join(dir, "agentd.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			return dir, nil
		}, []Check{{Area: "data", Name: "schema", Status: OK, Detail: "(current)"}}, false},
		{"shared store, newer schema", func(t *testing.T) (string, *Options) {
			dir := files(t, map[string]string{"agentd.yaml": quiet + "store:\n  url: postgres://db/agentd\n"})
			return dir, &Options{Store: func(_ context.Context, c agent.StoreConfig) (StoreSchema, bool, error) {
				return StoreSchema{Where: c.URL, Have: 9, Want: 2}, true, nil
			}}
		}, []Check{{Area: "data", Name: "schema", Status: Fail, Detail: "postgres://db/agentd: version 9, written by a newer agentd"}}, true},
		{"shared store down", func(t *testing.T) (string, *Options) {
			dir := files(t, map[string]string{"agentd.yaml": quiet, "agentd.db": ""})
			return dir, &Options{Store: func(context.Context, agent.StoreConfig) (StoreSchema, bool, error) {
				return StoreSchema{}, true, errors.New("connection refused")
			}}
		}, []Check{{Area: "data", Name: "schema", Status: Fail, Detail: "connection refused", Fix: "store.url"}}, true},
		{"sqlite store beside a store checker", func(t *testing.T) (string, *Options) {
			dir := files(t, map[string]string{"agentd.yaml": quiet})
			return dir, &Options{Store: func(context.Context, agent.StoreConfig) (StoreSchema, bool, error) {
				return StoreSchema{}, false, nil
			}}
		}, []Check{{Area: "data", Name: "schema", Status: OK, Detail: "no database yet"}}, false},
		{"lock held, no answer", func(t *testing.T) (string, *Options) {
			dir := files(t, map[string]string{"agentd.yaml": quiet})
			f, err := os.OpenFile(filepath.Join(dir, "agentd.lock"), os.O_CREATE|os.O_RDWR, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				t.Fatal(err)
			}
			return dir, nil
		}, []Check{{Area: "data", Name: "lock", Status: Fail, Fix: "fuser"}}, true},
		{"mcp command missing", func(t *testing.T) (string, *Options) {
			dir := files(t, map[string]string{"agentd.yaml": quiet + "mcp_servers:\n  files:\n    command: no-such-mcp-server-here\n"})
			return dir, nil
		}, []Check{{Area: "mcp", Name: "files", Status: Fail, Detail: "not found"}}, true},
		{"mcp url down", func(t *testing.T) (string, *Options) {
			dir := files(t, map[string]string{"agents/a.yaml": "mcp_servers:\n  web:\n    url: http://" + closedAddr(t) + "/mcp\n", "agentd.yaml": quiet})
			return dir, nil
		}, []Check{{Area: "mcp", Name: "web", Status: Fail, Detail: "does not answer"}}, true},
		{"running daemon", func(t *testing.T) (string, *Options) {
			dir := files(t, map[string]string{"agentd.yaml": "gateway:\n  listen: 127.0.0.1:7999\n"})
			return dir, &Options{Daemon: daemon{
				st:      gateway.StatusResponse{PID: 4242, Listening: []string{"unix:" + filepath.Join(dir, "agentd.sock"), "http://127.0.0.1:7999"}},
				servers: []gateway.ServerInfo{{Name: "ok", State: "connected", Tools: 3}, {Name: "bad", State: "failed", LastError: "exit status 1"}},
			}}
		}, []Check{
			{Area: "data", Name: "lock", Status: OK, Detail: "pid 4242"},
			{Area: "mcp", Name: "ok", Status: OK, Detail: "3 tools"},
			{Area: "mcp", Name: "bad", Status: Fail, Detail: "exit status 1"},
			{Area: "gateway", Name: "address", Status: OK, Detail: "served by the running agentd"},
		}, true},
		{"address taken", func(t *testing.T) (string, *Options) {
			return files(t, map[string]string{"agentd.yaml": "gateway:\n  listen: " + listener(t) + "\n"}), nil
		}, []Check{{Area: "gateway", Name: "address", Status: Fail, Detail: "held by another process"}}, true},
		{"weak token", func(t *testing.T) (string, *Options) {
			dir := files(t, map[string]string{"agentd.yaml": "gateway:\n  listen: " + closedAddr(t) + "\n", "gateway.token": "short\n"})
			return dir, nil
		}, []Check{{Area: "gateway", Name: "token", Status: Fail, Fix: "agentd token rotate"}}, true},
		{"weak token from the environment", func(t *testing.T) (string, *Options) {
			dir := files(t, map[string]string{"agentd.yaml": "gateway:\n  listen: " + closedAddr(t) + "\n"})
			return dir, &Options{Env: env(map[string]string{gateway.TokenEnv: "aaaa"})}
		}, []Check{{Area: "gateway", Name: "token", Status: Fail, Fix: gateway.TokenEnv}}, true},
		{"guessable token off loopback", func(t *testing.T) (string, *Options) {
			_, port, _ := net.SplitHostPort(closedAddr(t))
			dir := files(t, map[string]string{"agentd.yaml": "gateway:\n  listen: 0.0.0.0:" + port + "\n", "gateway.token": "abcdefghijklmnopqrstuvwxyz012345\n"})
			return dir, &Options{Env: env(nil)}
		}, []Check{{Area: "gateway", Name: "token", Status: Fail, Detail: "entropy"}}, true},
		{"no token yet", func(t *testing.T) (string, *Options) {
			return files(t, map[string]string{"agentd.yaml": "gateway:\n  listen: " + closedAddr(t) + "\n"}), &Options{Env: env(nil)}
		}, []Check{{Area: "gateway", Name: "token", Status: OK, Detail: "none yet"}}, false},
		{"expired certificate", func(t *testing.T) (string, *Options) {
			dir := files(t, map[string]string{"agentd.yaml": "gateway:\n  listen: " + closedAddr(t) + "\n  tls_cert: c.pem\n  tls_key: k.pem\n"})
			writeCert(t, dir, time.Now().Add(-time.Hour))
			return dir, nil
		}, []Check{{Area: "gateway", Name: "tls", Status: Fail, Detail: "expired"}}, true},
		{"valid certificate", func(t *testing.T) (string, *Options) {
			dir := files(t, map[string]string{"agentd.yaml": "gateway:\n  listen: " + closedAddr(t) + "\n  tls_cert: c.pem\n  tls_key: k.pem\n"})
			writeCert(t, dir, time.Now().Add(90*24*time.Hour))
			return dir, nil
		}, []Check{{Area: "gateway", Name: "tls", Status: OK, Detail: "valid until"}}, false},
		{"plain http beyond loopback", func(t *testing.T) (string, *Options) {
			return files(t, map[string]string{"agentd.yaml": "gateway:\n  listen: 0.0.0.0:0\n"}), nil
		}, []Check{{Area: "gateway", Name: "encryption", Status: Warn, Fix: "tls_cert"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, o := tc.setup(t)
			r := Run(t.Context(), dir, layout, o)
			for _, w := range tc.want {
				var got Check
				ok := false
				for _, c := range r.Checks {
					if c.Area == w.Area && strings.HasPrefix(c.Name, w.Name) {
						got, ok = c, true
						break
					}
				}
				if !ok || got.Status != w.Status || !strings.Contains(got.Detail, w.Detail) || !strings.Contains(got.Fix, w.Fix) {
					t.Errorf("want %s %q %s (%q, fix %q); got %+v\nall: %+v", w.Area, w.Name, w.Status, w.Detail, w.Fix, got, r.Checks)
				}
			}
			if r.Failed() != tc.failed {
				t.Errorf("failed %v, want %v: %+v", r.Failed(), tc.failed, r.Checks)
			}
			for _, c := range r.Checks {
				if (c.Status == Fail) && c.Fix == "" && c.Area != "data" {
					t.Errorf("%s %s fails without saying what to do: %s", c.Area, c.Name, c.Detail)
				}
			}
		})
	}
}

// Doctor writes nothing: not in a directory without agentd data, not in
// one with it.
func TestDoctorWritesNothing(t *testing.T) {
	empty := t.TempDir()
	Run(t.Context(), empty, layout, nil)
	if list, _ := os.ReadDir(empty); len(list) != 0 {
		t.Errorf("doctor wrote %d files in an empty directory", len(list))
	}
	dir := files(t, map[string]string{"agentd.yaml": "gateway:\n  listen: 127.0.0.1:0\n"})
	s, err := sqlite.Open(t.Context(), filepath.Join(dir, "agentd.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	before, _ := os.ReadDir(dir)
	Run(t.Context(), dir, layout, nil)
	if after, _ := os.ReadDir(dir); len(after) != len(before) {
		t.Errorf("doctor made files: %d before, %d after", len(before), len(after))
	}
}

// writeCert writes a self-signed certificate c.pem and its key k.pem,
// valid until notAfter.
func writeCert(t *testing.T, dir string, notAfter time.Time) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agentd.test"},
		NotBefore: notAfter.Add(-48 * time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "c.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(filepath.Join(dir, "k.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
}
