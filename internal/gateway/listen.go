package gateway

// Where the API listens: the unix socket (ServeUnix, no authentication:
// its file mode is the access control) and TCP (ServeTCP, behind
// Protect), and the addresses served while they run.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"
)

// TCPOptions configure ServeTCP.
type TCPOptions struct {
	// Auth configures authentication; Auth.Tokens is required. Auth.Listen
	// is set to the address served.
	Auth AuthOptions
	// TLSCert and TLSKey, both set, are PEM files: the API is then served
	// over HTTPS (TLS 1.2 or later).
	TLSCert, TLSKey string
	// ReadHeaderTimeout bounds reading a request's headers (0: 10s).
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection idle this long (0: 2m).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers (0: 64 KiB).
	MaxHeaderBytes int
}

// ErrInsecureBind is returned by ServeTCP for an address it will not serve
// without a strong token.
var ErrInsecureBind = errors.New("refusing to serve without a strong token")

// ErrAddrInUse is returned (wrapped, with the system's error) by ServeTCP
// when another process holds the address.
var ErrAddrInUse = errors.New("address in use")

// IsLoopback reports whether addr (host:port) is reachable from this
// machine only: localhost or a loopback IP address.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// CheckBind reports why the API must not be served on addr with tokens: it
// needs a strong token, on loopback as on any other address, and says so
// more loudly for an address other machines can reach, where the token
// must pass CheckRemoteToken (tokens opened with TokenOptions.OffLoopback).
func CheckBind(addr string, tokens *Tokens) error {
	var err error
	switch {
	case tokens == nil:
		err = fmt.Errorf("%w: none configured", ErrNoToken)
	case tokens.state().err != nil:
		err = tokens.state().err
	case !IsLoopback(addr) && !tokens.remote:
		err = fmt.Errorf("%w: the token was opened for loopback only (TokenOptions.OffLoopback)", ErrWeakToken)
	}
	if err == nil {
		return nil
	}
	where := "loopback"
	if !IsLoopback(addr) {
		where = "not loopback: other machines can reach it"
	}
	return fmt.Errorf("gateway: %w on %s (%s): %w", ErrInsecureBind, addr, where, err)
}

// ServeTCP serves the API on TCP at addr ("127.0.0.1:7420"; port 0 picks a
// free port) behind Protect until ctx is done, then shuts down gracefully.
// It refuses to start without a strong token (CheckBind). ready, if not
// nil, is called with the bound address once it accepts.
func (s *Server) ServeTCP(ctx context.Context, addr string, o *TCPOptions, ready func(net.Addr)) error {
	var opts TCPOptions
	if o != nil {
		opts = *o
	}
	if err := CheckBind(addr, opts.Auth.Tokens); err != nil {
		return err
	}
	var tlsCfg *tls.Config
	switch {
	case opts.TLSCert != "" && opts.TLSKey != "":
		cert, err := tls.LoadX509KeyPair(opts.TLSCert, opts.TLSKey)
		if err != nil {
			return fmt.Errorf("gateway: tls: %w", err)
		}
		// HTTP/1.1 only: WebSocket upgrades need it.
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	case opts.TLSCert != "" || opts.TLSKey != "":
		return errors.New("gateway: tls: set both the certificate and the key")
	}
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("gateway: %s: %w by another process: %w", addr, ErrAddrInUse, err)
	}
	if err != nil {
		return fmt.Errorf("gateway: listen: %w", err)
	}
	auth := opts.Auth
	auth.Listen = addr
	if opts.ReadHeaderTimeout <= 0 {
		opts.ReadHeaderTimeout = 10 * time.Second
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 2 * time.Minute
	}
	if opts.MaxHeaderBytes <= 0 {
		opts.MaxHeaderBytes = 64 << 10
	}
	hs := &http.Server{Handler: s.Protect(&auth), ReadHeaderTimeout: opts.ReadHeaderTimeout, IdleTimeout: opts.IdleTimeout,
		MaxHeaderBytes: opts.MaxHeaderBytes, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		// Requests end with ServeTCP (long polls and streams would hold
		// Shutdown).
		BaseContext: func(net.Listener) context.Context { return ctx }}
	where := "http://" + ln.Addr().String()
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
		where = "https://" + ln.Addr().String()
	}
	s.listening.add(where)
	defer s.listening.remove(where)
	return serveUntil(ctx, hs, ln, func() {
		if ready != nil {
			ready(ln.Addr())
		}
	})
}

// ServeUnix serves the API on a unix socket at path (mode 0600) until ctx
// is done. ready, if not nil, is called once the socket accepts.
func (s *Server) ServeUnix(ctx context.Context, path string, ready func()) error {
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return fmt.Errorf("gateway: %s: another agentd is serving it", path)
	}
	// A stale socket from a process that died; anything else at the path
	// is not ours to remove.
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("gateway: %s exists and is not a socket", path)
		}
		os.Remove(path)
	}
	// The data directory is 0700, so nobody else can reach the socket in
	// the moment between bind and chmod.
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("gateway: listen: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("gateway: socket mode: %w", err)
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		// Requests end with ServeUnix (long polls would hold Shutdown).
		BaseContext: func(net.Listener) context.Context { return ctx }}
	defer os.Remove(path)
	s.listening.add("unix:" + path)
	defer s.listening.remove("unix:" + path)
	return serveUntil(ctx, hs, ln, ready)
}

// serveUntil serves ln with hs, calls ready (if not nil) once it accepts,
// and shuts hs down (5 s for requests in flight) when ctx is done.
func serveUntil(ctx context.Context, hs *http.Server, ln net.Listener, ready func()) error {
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	if ready != nil {
		ready()
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	<-done
	return err
}

// listening is the set of addresses a Server serves, kept by ServeUnix and
// ServeTCP while they run.
type listening struct {
	mu    sync.Mutex
	addrs []string
}

func (l *listening) add(a string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addrs = append(l.addrs, a)
}

func (l *listening) remove(a string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i := slices.Index(l.addrs, a); i >= 0 {
		l.addrs = slices.Delete(l.addrs, i, i+1)
	}
}

func (l *listening) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string{}, l.addrs...)
}
