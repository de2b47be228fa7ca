package gateway_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/store"
)

// serveTCP runs srv.ServeTCP on a free loopback port until the test ends
// or stop is called, and returns the bound address. stop returns what
// ServeTCP returned.
func serveTCP(t *testing.T, srv *gateway.Server, o *gateway.TCPOptions) (addr string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- srv.ServeTCP(ctx, "127.0.0.1:0", o, func(a net.Addr) { ready <- a }) }()
	stop = sync.OnceValue(func() error {
		cancel()
		return <-done
	})
	t.Cleanup(func() { stop() })
	select {
	case a := <-ready:
		return a.String(), stop
	case err := <-done:
		t.Fatalf("ServeTCP: %v", err)
	case <-time.After(waitLimit):
		t.Fatal("ServeTCP did not become ready")
	}
	return "", nil
}

// The API on TCP, used by the remote client as the CLI uses it.
func TestServeTCPRemoteClient(t *testing.T) {
	e := newEnv(t, setup{})
	tk, tok := authTokens(t)
	addr, stop := serveTCP(t, e.srv, &gateway.TCPOptions{Auth: gateway.AuthOptions{Tokens: tk}})

	c, err := gateway.NewRemoteClient("http://"+addr+"/", tok)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	as, err := c.Agents(ctx)
	if err != nil || len(as) != 2 {
		t.Fatalf("agents: %v %v", as, err)
	}
	var deltas int
	_, end, err := c.Stream(ctx, "a/remote", gateway.MessageRequest{Text: "hello"}, func(ev event.Event) error {
		if ev.Kind == event.TextDelta {
			deltas++
		}
		return nil
	})
	if err != nil || end.Reply != "re: hello" || deltas == 0 {
		t.Fatalf("stream: %+v, %d deltas, %v", end, deltas, err)
	}
	if ss, err := c.Sessions(ctx, store.SessionFilter{Agent: "a"}); err != nil || len(ss) != 1 {
		t.Errorf("sessions: %v %v", ss, err)
	}

	// The wrong token is a 401 the CLI can explain.
	bad, err := gateway.NewRemoteClient("http://"+addr, gateway.NewToken())
	if err != nil {
		t.Fatal(err)
	}
	var ae *gateway.APIError
	if _, err := bad.Agents(ctx); !errors.As(err, &ae) || ae.Status != 401 || ae.Code != "unauthorized" {
		t.Errorf("wrong token: %v", err)
	}

	// A long poll in flight ends when the server stops.
	poll := make(chan error, 1)
	go func() {
		_, err := c.Events(ctx, "a/remote", 1000, 10, 5*time.Minute)
		poll <- err
	}()
	time.Sleep(50 * time.Millisecond) // let it start waiting; the test holds either way
	if err := stop(); err != nil {
		t.Errorf("ServeTCP after cancel: %v", err)
	}
	recv(t, "the long poll to end", poll)
}

func TestServeTCPRefuses(t *testing.T) {
	srv := gateway.New(&gateway.Options{Version: "v9"})
	called := func(net.Addr) { t.Error("ready was called") }

	if err := srv.ServeTCP(t.Context(), "127.0.0.1:0", nil, called); !errors.Is(err, gateway.ErrInsecureBind) {
		t.Errorf("no tokens: %v", err)
	}
	// A token file that went missing (or was never made).
	tk, _ := authTokens(t)
	os.Remove(tk.Path())
	err := srv.ServeTCP(t.Context(), "0.0.0.0:0", &gateway.TCPOptions{Auth: gateway.AuthOptions{Tokens: tk}}, called)
	if !errors.Is(err, gateway.ErrInsecureBind) || !errors.Is(err, gateway.ErrNoToken) || !strings.Contains(err.Error(), "not loopback") {
		t.Errorf("no token on 0.0.0.0: %v", err)
	}
	tk, _ = authTokens(t)
	for _, o := range []gateway.TCPOptions{
		{Auth: gateway.AuthOptions{Tokens: tk}, TLSCert: "cert.pem"},
		{Auth: gateway.AuthOptions{Tokens: tk}, TLSKey: "key.pem"},
		{Auth: gateway.AuthOptions{Tokens: tk}, TLSCert: "/nonexistent/cert.pem", TLSKey: "/nonexistent/key.pem"},
	} {
		if err := srv.ServeTCP(t.Context(), "127.0.0.1:0", &o, called); err == nil || !strings.Contains(err.Error(), "tls") {
			t.Errorf("TLS %q %q: %v", o.TLSCert, o.TLSKey, err)
		}
	}
	// The port is taken.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := srv.ServeTCP(t.Context(), ln.Addr().String(), &gateway.TCPOptions{Auth: gateway.AuthOptions{Tokens: tk}}, called); err == nil {
		t.Error("a taken port: no error")
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7420": true, "localhost:7420": true, "[::1]:7420": true, "127.9.9.9:1": true,
		"0.0.0.0:7420": false, ":7420": false, "[::]:7420": false, "192.168.1.2:7420": false,
		"agentd.example.com:7420": false, "127.0.0.1": false, "localhost.evil.com:1": false,
	} {
		if got := gateway.IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// Over TLS the API works the same, and the console's cookie is Secure.
func TestServeTLS(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	tk, tok := authTokens(t)
	srv := gateway.New(&gateway.Options{Version: "v9"})
	addr, _ := serveTCP(t, srv, &gateway.TCPOptions{Auth: gateway.AuthOptions{Tokens: tk}, TLSCert: certFile, TLSKey: keyFile})
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer hc.CloseIdleConnections()
	base := "https://" + addr

	resp, err := hc.Post(base+"/v1/auth/login", "application/json", strings.NewReader(`{"token":"`+tok+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cs := resp.Cookies()
	if resp.StatusCode != 200 || len(cs) != 1 || !cs[0].Secure || !cs[0].HttpOnly {
		t.Fatalf("login over TLS: %d %v", resp.StatusCode, resp.Header)
	}
	// https page, https API: same origin. An http page is not.
	for origin, want := range map[string]int{"https://" + addr: 200, "http://" + addr: 403} {
		req, _ := http.NewRequest("GET", base+"/v1/version", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Origin", origin)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Origin %s over TLS: %d, want %d", origin, resp.StatusCode, want)
		}
	}
	// Plain HTTP to the TLS port gets nowhere.
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("plain HTTP to the TLS port answered 200")
		}
	}
}

func TestNewRemoteClient(t *testing.T) {
	tok := gateway.NewToken()
	for _, u := range []string{"", "127.0.0.1:7420", "ftp://host", "http://", "http://user:pw@host", "http://host/?token=x", "http://host/#x", "unix:///tmp/s"} {
		if _, err := gateway.NewRemoteClient(u, tok); err == nil {
			t.Errorf("NewRemoteClient(%q): no error", u)
		}
	}
	if _, err := gateway.NewRemoteClient("http://127.0.0.1:7420", ""); err == nil || !strings.Contains(err.Error(), gateway.TokenEnv) {
		t.Errorf("no token: %v", err)
	}

	// A path prefix (a proxy), and a redirect, which is not followed: the
	// token stays where it was sent.
	var got []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.Path+" "+r.Header.Get("Authorization"))
		if r.URL.Path == "/agentd/healthz" {
			w.Write([]byte(`{"ok":true}`))
			return
		}
		http.Redirect(w, r, "https://elsewhere.example/", http.StatusFound)
	}))
	defer hs.Close()
	c, err := gateway.NewRemoteClient(hs.URL+"/agentd", tok)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Agents(t.Context()); err == nil || !strings.Contains(err.Error(), "elsewhere.example") {
		t.Errorf("redirect: %v", err)
	}
	want := []string{"/agentd/healthz Bearer " + tok, "/agentd/v1/agents Bearer " + tok}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agentd test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// ExampleServer_ServeTCP serves the API on TCP behind its token and calls
// it as agentd send --remote does.
func ExampleServer_ServeTCP() {
	dir, err := os.MkdirTemp("", "agentd-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	tokens, err := gateway.OpenTokens(dir, &gateway.TokenOptions{Create: true})
	if err != nil {
		log.Fatal(err)
	}
	api := gateway.New(&gateway.Options{Version: "v1", Agents: testAgents()})

	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- api.ServeTCP(ctx, "127.0.0.1:0", &gateway.TCPOptions{Auth: gateway.AuthOptions{Tokens: tokens}},
			func(a net.Addr) { ready <- a.String() })
	}()
	addr := <-ready

	token, _ := tokens.Token()
	c, _ := gateway.NewRemoteClient("http://"+addr, token)
	agents, err := c.Agents(ctx)
	fmt.Println(len(agents), err)

	stranger, _ := gateway.NewRemoteClient("http://"+addr, gateway.NewToken())
	_, err = stranger.Agents(ctx)
	var ae *gateway.APIError
	fmt.Println(errors.As(err, &ae), ae.Status, ae.Code)

	cancel()
	fmt.Println(<-done)
	// Output:
	// 2 <nil>
	// true 401 unauthorized
	// <nil>
}
