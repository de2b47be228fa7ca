package netguard_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/netguard"
)

func TestBlocked(t *testing.T) {
	tests := []struct {
		ip   string
		want string // "" means allowed
	}{
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"93.184.216.34", ""},
		{"2606:4700:4700::1111", ""},
		{"2a00:1450:4007:80e::200e", ""},
		{"172.15.255.255", ""},
		{"172.32.0.0", ""},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"198.20.0.0", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""}, // NAT64 of 8.8.8.8
		{"2002:808:808::1", ""},  // 6to4 of 8.8.8.8

		{"0.0.0.0", "an unspecified (this-network) address"},
		{"0.1.2.3", "an unspecified (this-network) address"},
		{"10.0.0.1", "a private address"},
		{"10.255.255.255", "a private address"},
		{"100.64.0.1", "a shared (carrier-grade NAT) address"},
		{"100.127.255.254", "a shared (carrier-grade NAT) address"},
		{"127.0.0.1", "a loopback address"},
		{"127.1.2.3", "a loopback address"},
		{"169.254.169.254", "the cloud metadata address"},
		{"169.254.0.1", "a link-local address"},
		{"172.16.0.1", "a private address"},
		{"172.31.255.255", "a private address"},
		{"192.0.0.170", "an IETF protocol assignment address"},
		{"192.168.1.1", "a private address"},
		{"198.18.0.1", "a benchmarking address"},
		{"198.19.255.255", "a benchmarking address"},
		{"224.0.0.1", "a multicast address"},
		{"239.255.255.250", "a multicast address"},
		{"255.255.255.255", "the broadcast address"},
		{"240.0.0.1", "a reserved address"},

		{"::", "the unspecified address"},
		{"::1", "a loopback address"},
		{"fd00:ec2::254", "the cloud metadata address"},
		{"fd12:3456::1", "a private (unique local) address"},
		{"fc00::1", "a private (unique local) address"},
		{"fe80::1", "a link-local address"},
		{"fe80::1%eth0", "a link-local address"},
		{"fec0::1", "a site-local address"},
		{"ff02::1", "a multicast address"},
		{"64:ff9b:1::1", "a local-use NAT64 address"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "a Teredo address"},

		// IPv4 inside IPv6.
		{"::ffff:127.0.0.1", "a loopback address"},
		{"::ffff:7f00:1", "a loopback address"},
		{"::ffff:169.254.169.254", "the cloud metadata address"},
		{"::ffff:10.1.2.3", "a private address"},
		{"::127.0.0.1", "a loopback address inside an IPv6 address"},
		{"::10.0.0.1", "a private address inside an IPv6 address"},
		{"::ffff:0:127.0.0.1", "a loopback address inside an IPv6 address"},
		{"64:ff9b::7f00:1", "a loopback address inside an IPv6 address"},
		{"64:ff9b::a9fe:a9fe", "the cloud metadata address inside an IPv6 address"},
		{"2002:7f00:1::", "a loopback address inside an IPv6 address"},
		{"2002:c0a8:101::1", "a private address inside an IPv6 address"},
		{"3fff::1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			what, blocked := netguard.Blocked(netip.MustParseAddr(tt.ip))
			if what != tt.want || blocked != (tt.want != "") {
				t.Errorf("Blocked(%s) = %q, %v; want %q", tt.ip, what, blocked, tt.want)
			}
		})
	}
	if _, blocked := netguard.Blocked(netip.Addr{}); !blocked {
		t.Error("the zero Addr is not blocked")
	}
}

func TestCheckAllowPrefixes(t *testing.T) {
	g := netguard.New(&netguard.Options{AllowPrefixes: []netip.Prefix{
		netip.MustParsePrefix("127.0.0.1/32"),
		netip.MustParsePrefix("10.1.2.0/24"),
		netip.MustParsePrefix("10.9.9.9/8"), // not masked: means 10.0.0.0/8
		{},                                  // invalid: ignored
	}})
	tests := []struct {
		ip      string
		blocked bool
	}{
		{"127.0.0.1", false},
		{"::ffff:127.0.0.1", false},
		{"127.0.0.2", true},
		{"::1", true},
		{"10.1.2.200", false},
		{"10.200.0.1", false},
		{"169.254.169.254", true},
		{"8.8.8.8", false},
	}
	for _, tt := range tests {
		err := g.Check(netip.MustParseAddr(tt.ip))
		if got := errors.Is(err, netguard.ErrBlocked); got != tt.blocked {
			t.Errorf("Check(%s) = %v, want blocked=%v", tt.ip, err, tt.blocked)
		}
	}
	err := netguard.New(nil).Check(netip.MustParseAddr("::ffff:127.0.0.1"))
	if want := "destination not allowed: 127.0.0.1 is a loopback address"; err == nil || err.Error() != want {
		t.Errorf("Check(::ffff:127.0.0.1) = %v, want %q", err, want)
	}
}

func TestControl(t *testing.T) {
	g := netguard.New(nil)
	tests := []struct {
		network, address string
		want             string // "" means allowed
	}{
		{"tcp4", "93.184.216.34:443", ""},
		{"tcp6", "[2606:4700:4700::1111]:443", ""},
		{"tcp4", "127.0.0.1:80", "destination not allowed: 127.0.0.1 is a loopback address"},
		{"tcp6", "[::1]:80", "destination not allowed: ::1 is a loopback address"},
		{"tcp6", "[fe80::1%lo]:80", "destination not allowed: fe80::1 is a link-local address"},
		{"tcp6", "[::ffff:169.254.169.254]:80", "destination not allowed: 169.254.169.254 is the cloud metadata address"},
		{"udp4", "10.0.0.1:53", "destination not allowed: 10.0.0.1 is a private address"},
		{"unix", "/run/docker.sock", `destination not allowed: unix address "/run/docker.sock" is not an IP address and port`},
		{"tcp", "localhost:80", `destination not allowed: tcp address "localhost:80" is not an IP address and port`},
	}
	for _, tt := range tests {
		err := g.Control(tt.network, tt.address, nil)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("Control(%s, %s) = %q, want %q", tt.network, tt.address, got, tt.want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	tests := []struct {
		url  string
		want string
	}{
		{"http://example.com/", ""},
		{"HTTPS://example.com:8443/a?b#c", ""},
		{"http://[::1]/", ""}, // the dialer decides about addresses
		{"file:///etc/passwd", `url not allowed: scheme "file" is not supported; use http or https`},
		{"gopher://example.com/", `url not allowed: scheme "gopher" is not supported; use http or https`},
		{"example.com/path", `url not allowed: "example.com/path" has no scheme; use http:// or https://`},
		{"http://user:secret@example.com/", "url not allowed: user names and passwords in URLs are not allowed"},
		{"http://user@example.com/", "url not allowed: user names and passwords in URLs are not allowed"},
		{"http:///path", `url not allowed: "http:///path" has no host`},
		{"http:example.com", `url not allowed: "http:example.com" has no host`},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		err = netguard.CheckURL(u)
		got := ""
		if err != nil {
			got = err.Error()
			if !errors.Is(err, netguard.ErrBadURL) {
				t.Errorf("CheckURL(%s) = %v, not ErrBadURL", tt.url, err)
			}
		}
		if got != tt.want {
			t.Errorf("CheckURL(%s) = %q, want %q", tt.url, got, tt.want)
		}
	}
	if err := netguard.CheckURL(nil); !errors.Is(err, netguard.ErrBadURL) {
		t.Errorf("CheckURL(nil) = %v", err)
	}
}

func TestTransportIgnoresProxies(t *testing.T) {
	if tr := netguard.New(nil).Transport(); tr.Proxy != nil {
		t.Error("Transport has a Proxy function")
	}
}

// counter is a test server that counts its requests.
type counter struct {
	*httptest.Server
	hits atomic.Int64
}

func newServer(t *testing.T, addr string, h http.HandlerFunc) *counter {
	t.Helper()
	c := &counter{}
	c.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.hits.Add(1)
		h(w, r)
	}))
	if addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("cannot listen on %s: %v", addr, err)
		}
		c.Listener.Close()
		c.Listener = l
	}
	c.Start()
	t.Cleanup(c.Close)
	return c
}

func TestClient(t *testing.T) {
	blocked := newServer(t, "127.0.0.2:0", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secret")
	})
	var srv *counter
	srv = newServer(t, "", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			io.WriteString(w, "hello")
		case "/chain":
			// /chain?n=3 redirects 3 times, then lands on /ok.
			var n int
			fmt.Sscan(r.URL.Query().Get("n"), &n)
			if n == 0 {
				http.Redirect(w, r, "/ok", http.StatusFound)
				return
			}
			http.Redirect(w, r, fmt.Sprintf("/chain?n=%d", n-1), http.StatusFound)
		case "/to-blocked":
			http.Redirect(w, r, blocked.URL+"/", http.StatusFound)
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/to-userinfo":
			http.Redirect(w, r, "http://user:pw@"+strings.TrimPrefix(srv.URL, "http://")+"/ok", http.StatusFound)
		}
	})
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	allowed := netguard.New(&netguard.Options{AllowPrefixes: loopback}).Client(0)
	strict := netguard.New(nil).Client(0)
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	tests := []struct {
		name    string
		client  *http.Client
		url     string
		want    string // the body, or a substring of the error
		wantErr error
	}{
		{"allowed server", allowed, srv.URL + "/ok", "hello", nil},
		{"four redirects", allowed, srv.URL + "/chain?n=3", "hello", nil},
		{"five redirects", allowed, srv.URL + "/chain?n=4", "hello", nil},
		{"six redirects", allowed, srv.URL + "/chain?n=5", "stopped after 5", netguard.ErrTooManyRedirects},
		{"redirect to a blocked address", allowed, srv.URL + "/to-blocked", "127.0.0.2 is a loopback address", netguard.ErrBlocked},
		{"redirect to file", allowed, srv.URL + "/to-file", `scheme "file" is not supported`, netguard.ErrBadURL},
		{"redirect with credentials", allowed, srv.URL + "/to-userinfo", "passwords in URLs", netguard.ErrBadURL},
		{"loopback by IP", strict, srv.URL + "/ok", "127.0.0.1 is a loopback address", netguard.ErrBlocked},
		{"loopback by name", strict, fmt.Sprintf("http://localhost:%d/ok", port), "is a loopback address", netguard.ErrBlocked},
		{"loopback as mapped IPv6", strict, fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/ok", port), "127.0.0.1 is a loopback address", netguard.ErrBlocked},
		{"IPv6 loopback", strict, fmt.Sprintf("http://[::1]:%d/ok", port), "::1 is a loopback address", netguard.ErrBlocked},
		{"metadata", strict, "http://169.254.169.254/latest/meta-data/", "169.254.169.254 is the cloud metadata address", netguard.ErrBlocked},
		{"unspecified", strict, fmt.Sprintf("http://0.0.0.0:%d/ok", port), "0.0.0.0 is an unspecified", netguard.ErrBlocked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := srv.hits.Load()
			resp, err := tt.client.Get(tt.url)
			if tt.wantErr != nil {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("Get(%s) succeeded", tt.url)
				}
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Get(%s) = %v, want %v mentioning %q", tt.url, err, tt.wantErr, tt.want)
				}
				if tt.client == strict && srv.hits.Load() != before {
					t.Errorf("the blocked server was reached")
				}
				return
			}
			if err != nil {
				t.Fatalf("Get(%s): %v", tt.url, err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if diff := cmp.Diff(tt.want, string(body)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
	if n := blocked.hits.Load(); n != 0 {
		t.Errorf("the server on 127.0.0.2 was reached %d times", n)
	}
}

// TestClientOddAddressForms fetches loopback written in forms some parsers
// and resolvers accept. Whatever the resolver makes of them, the server
// must not be reached: either the name does not resolve or the dialer
// blocks the address it resolves to.
func TestClientOddAddressForms(t *testing.T) {
	srv := newServer(t, "", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "reached") })
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	client := netguard.New(nil).Client(0)
	for _, host := range []string{
		"2130706433",   // decimal
		"0x7f000001",   // hex
		"0x7f.1",       // hex, short
		"0177.0.0.1",   // octal
		"127.1",        // short
		"017700000001", // octal, one number
		"127.0.0.1.",   // trailing dot
		"localhost.",   // trailing dot
		"LOCALHOST",    // case
		"[::]",         // unspecified
		"[0:0:0:0:0:ffff:7f00:1]",
	} {
		t.Run(host, func(t *testing.T) {
			resp, err := client.Get(fmt.Sprintf("http://%s:%d/", host, port))
			if err == nil {
				resp.Body.Close()
				t.Fatalf("fetching %s succeeded", host)
			}
			var dnsErr *net.DNSError
			if !errors.Is(err, netguard.ErrBlocked) && !errors.As(err, &dnsErr) {
				t.Errorf("fetching %s: %v; want a blocked destination or a name that does not resolve", host, err)
			}
		})
	}
	if n := srv.hits.Load(); n != 0 {
		t.Errorf("the server was reached %d times", n)
	}
}

func TestClientIgnoresProxyEnvironment(t *testing.T) {
	proxy := newServer(t, "", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "proxied") })
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY"} {
		t.Setenv(k, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	// The proxy itself is allowed; the target is not. Through the proxy the
	// request would succeed.
	g := netguard.New(&netguard.Options{AllowPrefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	resp, err := g.Client(0).Get("http://10.255.255.1/")
	if err == nil {
		resp.Body.Close()
		t.Fatal("request succeeded")
	}
	if !errors.Is(err, netguard.ErrBlocked) {
		t.Errorf("Get: %v, want ErrBlocked", err)
	}
	if n := proxy.hits.Load(); n != 0 {
		t.Errorf("the proxy was used %d times", n)
	}
}

func ExampleGuard_Client() {
	g := netguard.New(nil)
	client := g.Client(0)
	_, err := client.Get("http://169.254.169.254/latest/meta-data/")
	fmt.Println(errors.Is(err, netguard.ErrBlocked))
	fmt.Println(g.Check(netip.MustParseAddr("::ffff:10.0.0.1")))
	// Output:
	// true
	// destination not allowed: 10.0.0.1 is a private address
}
