package agent

import (
	"net/url"
	"strings"
	"testing"
)

func TestGatewayConfig(t *testing.T) {
	for _, tc := range []struct {
		yaml   string
		listen string
		off    bool
	}{
		{"", DefaultGatewayListen, false},
		{"gateway: {}\n", DefaultGatewayListen, false},
		{"gateway:\n  listen: null\n", DefaultGatewayListen, false},
		{"gateway:\n  listen: off\n", GatewayOff, true},
		{"gateway:\n  listen: \"\"\n", GatewayOff, true},
		{"gateway:\n  listen: 0.0.0.0:8080\n", "0.0.0.0:8080", false},
		{"gateway:\n  listen: \"[::1]:0\"\n", "[::1]:0", false},
		{"gateway:\n  listen: :7420\n", ":7420", false},
	} {
		dir := t.TempDir()
		writeTestFile(t, dir, ConfigFile, tc.yaml)
		cfg, err := LoadConfig(dir)
		if err != nil {
			t.Errorf("%q: %v", tc.yaml, err)
			continue
		}
		if cfg.Gateway.Listen != tc.listen || cfg.Gateway.TCPOff() != tc.off || cfg.Gateway.MaxBody != MaxGatewayBody {
			t.Errorf("%q: %+v, want listen %q", tc.yaml, cfg.Gateway, tc.listen)
		}
	}
}

func TestNormalizeHostAndOrigin(t *testing.T) {
	hosts := map[string]string{
		"agentd.example.com": "agentd.example.com", "Agentd.Example.COM": "agentd.example.com", "localhost": "localhost",
		"192.168.1.2": "192.168.1.2", "::1": "[::1]", "[::1]": "[::1]", "[2001:DB8::1]": "[2001:db8::1]", "my_host": "my_host",
		"": "", "host:80": "", "*.example.com": "", "https://x": "", "a..b": "", ".x": "", "x.": "", "[192.168.1.2]": "",
		"[::1": "", "fe80::1%eth0": "", "a b": "", "ex@mple": "", strings.Repeat("a", 254): "",
	}
	for in, want := range hosts {
		got, err := NormalizeHost(in)
		if (err == nil) != (want != "") || got != want {
			t.Errorf("NormalizeHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	origins := map[string]string{
		"https://console.example.com": "https://console.example.com", "https://Console.Example.com/": "https://console.example.com",
		"http://localhost:3000": "http://localhost:3000", "http://localhost:80": "http://localhost", "https://x:443": "https://x",
		"https://x:80": "https://x:80", "http://[::1]:8080": "http://[::1]:8080", "http://[::1]": "http://[::1]",
		"*": "", "null": "", "": "", "console.example.com": "", "ftp://x": "", "https://x/app": "", "https://x?a=1": "",
		"https://x#f": "", "https://u@x": "", "https://x:0": "", "https://x:99999": "", "https://x:": "", "http://": "",
		"https://*.example.com": "", "http://localhost:3000.evil.com": "",
	}
	for in, want := range origins {
		got, err := NormalizeOrigin(in)
		if (err == nil) != (want != "") || got != want {
			t.Errorf("NormalizeOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, ok := range map[string]bool{
		"127.0.0.1:7420": true, ":7420": true, "[::]:0": true, "agentd.lan:443": true,
		"127.0.0.1": false, "127.0.0.1:": false, "127.0.0.1:65536": false, "127.0.0.1:-1": false, "http://x:1": false, "a b:1": false,
	} {
		if err := CheckListen(in); (err == nil) != ok {
			t.Errorf("CheckListen(%q) = %v, want ok %v", in, err, ok)
		}
	}
}

// FuzzNormalizeOrigin checks that an accepted origin normalizes to itself
// and is no more than scheme://host[:port].
func FuzzNormalizeOrigin(f *testing.F) {
	for _, s := range []string{"https://console.example.com", "http://localhost:3000/", "http://[::1]:80", "*", "https://x/y", "HTTP://A:443"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := NormalizeOrigin(in)
		if err != nil {
			return
		}
		again, err := NormalizeOrigin(out)
		if err != nil || again != out {
			t.Fatalf("NormalizeOrigin(%q) = %q, which normalizes to %q, %v", in, out, again, err)
		}
		u, err := url.Parse(out)
		if err != nil || u.Path != "" || u.RawQuery != "" || u.User != nil || u.Scheme+"://"+u.Host != out || out != strings.ToLower(out) {
			t.Fatalf("NormalizeOrigin(%q) = %q: not an origin", in, out)
		}
	})
}

// FuzzNormalizeHost checks that an accepted host is lowercase, holds only
// host name characters (or is a bracketed IPv6 address) and normalizes to
// itself.
func FuzzNormalizeHost(f *testing.F) {
	for _, s := range []string{"agentd.example.com", "::1", "[::1]", "1.2.3.4", "a:1", "*", "[1.2.3.4]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := NormalizeHost(in)
		if err != nil {
			return
		}
		if again, err := NormalizeHost(out); err != nil || again != out {
			t.Fatalf("NormalizeHost(%q) = %q, which normalizes to %q, %v", in, out, again, err)
		}
		name := out
		if strings.HasPrefix(out, "[") {
			name = strings.Trim(out, "[]")
		}
		for _, r := range name {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("-._:", r)) {
				t.Fatalf("NormalizeHost(%q) = %q", in, out)
			}
		}
		if strings.Contains(name, ":") && !strings.HasPrefix(out, "[") {
			t.Fatalf("NormalizeHost(%q) = %q: a colon outside brackets", in, out)
		}
	})
}
