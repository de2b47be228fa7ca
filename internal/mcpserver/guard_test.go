package mcpserver

import (
	"agentd/internal/gateway"
	"agentd/internal/hostheader"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })

func TestGuard(t *testing.T) {
	discard := slog.New(slog.DiscardHandler)
	defaults := newGuard(okHandler, nil, nil, discard)
	custom := newGuard(okHandler,
		[]string{"agentd.example.com", "LOCALHOST:8080", "[::1]:9000", "not a host", "a:b:c"},
		[]string{"https://Console.Example.com/", "http://localhost:3000"}, discard)

	tests := []struct {
		name   string
		g      *guard
		host   string
		origin []string // nil: no Origin header
		want   int
	}{
		// Loopback hosts, with and without a port.
		{"localhost", defaults, "localhost", nil, 204},
		{"localhost port", defaults, "localhost:8080", nil, 204},
		{"localhost upper case", defaults, "LocalHost:8080", nil, 204},
		{"ipv4 loopback", defaults, "127.0.0.1:1234", nil, 204},
		{"ipv6 loopback", defaults, "[::1]:1234", nil, 204},
		{"ipv6 loopback no port", defaults, "[::1]", nil, 204},
		{"unix socket (no host)", defaults, "", nil, 204},

		// DNS rebinding: the attacker's name in Host.
		{"evil host", defaults, "evil.example", nil, 403},
		{"evil host port", defaults, "evil.example:8080", nil, 403},
		{"localhost as a prefix", defaults, "localhost.evil.com", nil, 403},
		{"localhost as a prefix with port", defaults, "localhost.evil.com:8080", nil, 403},
		{"localhost as a suffix", defaults, "evillocalhost", nil, 403},
		{"localhost as a subdomain", defaults, "evil.localhost", nil, 403},
		{"trailing dot", defaults, "localhost.", nil, 403},
		{"loopback as a prefix", defaults, "127.0.0.1.nip.io", nil, 403},
		{"other loopback spelling", defaults, "127.1", nil, 403},
		{"decimal loopback", defaults, "2130706433", nil, 403},
		{"unbracketed ipv6", defaults, "::1", nil, 403},
		{"userinfo", defaults, "localhost@evil.com", nil, 403},
		{"userinfo with port", defaults, "localhost:80@evil.com", nil, 403},
		{"non-numeric port", defaults, "localhost:http", nil, 403},
		{"empty port", defaults, "localhost:", nil, 403},
		{"port only", defaults, ":8080", nil, 403},
		{"two ports", defaults, "localhost:80:81", nil, 403},
		{"bracket junk", defaults, "[::1]evil", nil, 403},
		{"ipv6 other host", defaults, "[::2]:80", nil, 403},
		{"unclosed bracket", defaults, "[::1", nil, 403},
		{"space", defaults, "localhost evil", nil, 403},
		{"nul", defaults, "localhost\x00.evil.com", nil, 403},

		// Origin: absent is fine, any present one is refused by default.
		{"no origin", defaults, "localhost", nil, 204},
		{"loopback origin", defaults, "localhost", []string{"http://localhost"}, 403},
		{"evil origin", defaults, "localhost", []string{"http://evil.example"}, 403},
		{"origin with localhost as a prefix", defaults, "localhost", []string{"http://localhost.evil.com"}, 403},
		{"empty origin", defaults, "localhost", []string{""}, 403},
		{"null origin", defaults, "localhost", []string{"null"}, 403},

		// Custom allow-lists.
		{"custom host", custom, "agentd.example.com", nil, 204},
		{"custom host any port", custom, "agentd.example.com:443", nil, 204},
		{"custom host suffix", custom, "agentd.example.com.evil.com", nil, 403},
		{"custom host prefix", custom, "evil-agentd.example.com", nil, 403},
		{"custom port", custom, "localhost:8080", nil, 204},
		{"custom wrong port", custom, "localhost:8081", nil, 403},
		{"custom no port", custom, "localhost", nil, 403},
		{"custom ipv6 port", custom, "[::1]:9000", nil, 204},
		{"custom drops defaults", custom, "127.0.0.1", nil, 403},
		{"custom drops empty host", custom, "", nil, 403},
		{"custom origin", custom, "agentd.example.com", []string{"https://console.example.com"}, 204},
		{"custom origin case", custom, "agentd.example.com", []string{"HTTPS://CONSOLE.EXAMPLE.COM"}, 204},
		{"custom origin port", custom, "agentd.example.com", []string{"http://localhost:3000"}, 204},
		{"custom origin other port", custom, "agentd.example.com", []string{"http://localhost:30001"}, 403},
		{"custom origin port prefix", custom, "agentd.example.com", []string{"http://localhost:3000.evil.com"}, 403},
		{"custom origin scheme", custom, "agentd.example.com", []string{"https://localhost:3000"}, 403},
		{"custom origin suffix", custom, "agentd.example.com", []string{"https://console.example.com.evil.com"}, 403},
		{"custom origin no port", custom, "agentd.example.com", []string{"http://localhost"}, 403},
		{"custom one bad origin of two", custom, "agentd.example.com", []string{"http://localhost:3000", "http://evil.example"}, 403},
		{"good origin bad host", custom, "evil.example", []string{"http://localhost:3000"}, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{}"))
			r.Host = tt.host
			if tt.origin != nil {
				r.Header["Origin"] = tt.origin
			}
			w := httptest.NewRecorder()
			tt.g.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Fatalf("Host %q Origin %q: status %d, want %d (%s)", tt.host, tt.origin, w.Code, tt.want, w.Body)
			}
			// A refusal is said as every refusal of the gateway's is:
			// {"error": "forbidden: <a short reason>", "code": "forbidden"}.
			var e gateway.Error
			if w.Code == 403 && (json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Code != "forbidden" || !strings.HasPrefix(e.Error, "forbidden: ")) {
				t.Errorf("403 body = %q, want a short reason", w.Body)
			}
		})
	}
}

// FuzzHostAllowed checks that whatever the Host header, the default guard
// never panics and lets through only loopback names.
func FuzzHostAllowed(f *testing.F) {
	for _, s := range []string{"localhost", "localhost:80", "[::1]:1", "127.0.0.1", "", "localhost.evil.com", "[::1", "a:b:c", "[]:"} {
		f.Add(s)
	}
	g := newGuard(okHandler, nil, nil, slog.New(slog.DiscardHandler))
	f.Fuzz(func(t *testing.T, h string) {
		if !g.hostAllowed(h) {
			return
		}
		host, _, _ := hostheader.Split(h)
		switch host {
		case "localhost", "127.0.0.1", "[::1]", "":
		default:
			t.Fatalf("allowed Host %q (host %q)", h, host)
		}
		if host == "" && h != "" {
			t.Fatalf("allowed Host %q as empty", h)
		}
	})
}

func BenchmarkGuard(b *testing.B) {
	g := newGuard(okHandler, nil, []string{"http://localhost:3000"}, slog.New(slog.DiscardHandler))
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Host = "127.0.0.1:8080"
	r.Header.Set("Origin", "http://localhost:3000")
	b.ReportAllocs()
	for b.Loop() {
		if !g.hostAllowed(r.Host) || !g.originAllowed(r.Header.Get("Origin")) {
			b.Fatal("refused")
		}
	}
}

// FuzzCheckAddress checks that an accepted session address is always
// exactly <agent>/<key> with no control characters.
func FuzzCheckAddress(f *testing.F) {
	for _, s := range []string{"alpha/mcp", "alpha", "/k", "a/", "a/b/c", "a/\n", "α/β"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		if checkAddress(addr) != nil {
			return
		}
		agentID, key, ok := strings.Cut(addr, "/")
		if !ok || agentID == "" || key == "" || strings.Contains(key, "/") || hasControl(addr) || checkKey(key) != nil {
			t.Fatalf("accepted %q", addr)
		}
	})
}
