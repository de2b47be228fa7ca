package hostheader

import (
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		in, host, port string
		ok             bool
	}{
		{"", "", "", true},
		{"Example.COM", "example.com", "", true},
		{"example.com:443", "example.com", "443", true},
		{"[::1]", "[::1]", "", true},
		{"[::1]:80", "[::1]", "80", true},
		{"[::FFFF:127.0.0.1]:80", "[::ffff:127.0.0.1]", "80", true},
		{"[::1%eth0]", "", "", false},
		{"[::1", "", "", false},
		{"[::1]x", "", "", false},
		{"host:123456", "", "", false},
		{"host:65536", "", "", false},
		{"host:65535", "host", "65535", true},
		{"host:-1", "", "", false},
		{"host:", "", "", false},
		{":80", "", "", false},
		{"a:b:c", "", "", false},
		{"ho/st", "", "", false},
		{"localhost.evil.com", "localhost.evil.com", "", true},
	}
	for _, tt := range tests {
		host, port, ok := Split(tt.in)
		if host != tt.host || port != tt.port || ok != tt.ok {
			t.Errorf("Split(%q) = %q, %q, %v; want %q, %q, %v", tt.in, host, port, ok, tt.host, tt.port, tt.ok)
		}
	}
}

func TestNormalizeOrigin(t *testing.T) {
	if got := NormalizeOrigin(" HTTPS://Example.com/ "); got != "https://example.com" {
		t.Errorf("got %q", got)
	}
}

// Whatever it is given, Split never panics, and what it accepts is a
// lowercase host of host-name characters (or a bracketed address) and a
// decimal port.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"localhost", "localhost:80", "[::1]:1", "127.0.0.1", "", "[::1", "a:b:c", "[]:", "x:99999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		host, port, ok := Split(h)
		if !ok {
			return
		}
		if host != strings.ToLower(host) || strings.ContainsAny(host, "/?#@% ") {
			t.Fatalf("Split(%q) accepted host %q", h, host)
		}
		if port != "" && !isPort(port) {
			t.Fatalf("Split(%q) accepted port %q", h, port)
		}
	})
}
