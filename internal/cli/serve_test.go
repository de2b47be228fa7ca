package cli

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"agentd/internal/agent"
	"agentd/internal/gateway"
)

func TestGatewayTCPAddress(t *testing.T) {
	t.Setenv(gateway.TokenEnv, "")
	str := func(s string) *string { return &s }
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name string
		cfg  string // gateway.listen
		flag *string
		addr string
		from string
	}{
		{"default", agent.DefaultGatewayListen, nil, agent.DefaultGatewayListen, fromDefault},
		{"config", "127.0.0.1:9000", nil, "127.0.0.1:9000", fromConfig},
		{"config off", agent.GatewayOff, nil, "", fromConfig},
		{"flag wins", "127.0.0.1:9000", str("127.0.0.1:0"), "127.0.0.1:0", fromFlag},
		{"flag off", agent.DefaultGatewayListen, str("off"), "", fromFlag},
		{"flag empty", agent.DefaultGatewayListen, str(""), "", fromFlag},
		{"flag names the default", "127.0.0.1:9000", str(agent.DefaultGatewayListen), agent.DefaultGatewayListen, fromFlag},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := agent.DefaultConfig()
			cfg.Gateway.Listen = tc.cfg
			s, err := (&env{}).gatewayTCP(dir, cfg, tc.flag, log)
			if err != nil {
				t.Fatal(err)
			}
			if s.addr != tc.addr || (s.addr != "" && s.from != tc.from) {
				t.Errorf("addr %q from %s, want %q from %s", s.addr, s.from, tc.addr, tc.from)
			}
			_, statErr := os.Stat(filepath.Join(dir, gateway.TokenFile))
			if (statErr == nil) != (tc.addr != "") {
				t.Errorf("token file made: %v, want %v", statErr == nil, tc.addr != "")
			}
		})
	}

	var ee *exitError
	if _, err := (&env{}).gatewayTCP(t.TempDir(), agent.DefaultConfig(), str("nonsense"), log); !errors.As(err, &ee) || ee.code != ExitUsage {
		t.Errorf("--listen nonsense: %v", err)
	}
	t.Setenv(gateway.TokenEnv, "short")
	if _, err := (&env{}).gatewayTCP(t.TempDir(), agent.DefaultConfig(), str("0.0.0.0:0"), log); err == nil ||
		!strings.Contains(err.Error(), "not loopback") || !errors.Is(err, gateway.ErrWeakToken) {
		t.Errorf("weak token on 0.0.0.0: %v", err)
	}
}

func TestAPIHint(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&gateway.APIError{Status: 401, Code: "unauthorized"}, "agentd token"},
		{&gateway.APIError{Status: 403, Code: "forbidden"}, "allowed_hosts"},
		{&gateway.APIError{Status: 429, Code: "rate_limited"}, "wait"},
		{&gateway.APIError{Status: 404, Code: "not_found"}, ""},
		{errors.New("x"), ""},
	} {
		if got := apiHint(tc.err); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("apiHint(%v) = %q, want it to mention %q", tc.err, got, tc.want)
		}
	}
}

// An address that is taken, the default or a chosen one, is an error that
// names it, where it comes from, and what to do.
func TestServeAPIAddressInUse(t *testing.T) {
	t.Setenv(gateway.TokenEnv, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srv := gateway.New(&gateway.Options{Version: "test"})
	for _, from := range []string{fromDefault, fromConfig, fromFlag} {
		dir := t.TempDir()
		cfg := agent.DefaultConfig()
		cfg.Gateway.Listen = ln.Addr().String()
		tcp, err := (&env{}).gatewayTCP(dir, cfg, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		tcp.from = from
		var out bytes.Buffer
		lw := &lockedWriter{w: &out}
		ctx, cancel := context.WithCancel(t.Context())
		ready := make(chan struct{})
		done := make(chan error, 1)
		go func() { done <- serveAPI(ctx, srv, filepath.Join(dir, "s.sock"), tcp, lw, func() { close(ready) }) }()
		// Taken, the address is an error either way: whatever holds it
		// would get the clients' tokens.
		err = <-done
		cancel()
		if !errors.Is(err, gateway.ErrAddrInUse) {
			t.Errorf("address in use (%s): %v", from, err)
			continue
		}
		for _, want := range []string{"address in use: " + ln.Addr().String() + " (from " + from + ") is held by another process", "--listen HOST:PORT", "--listen off"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("address in use (%s): %v does not say %q", from, err, want)
			}
		}
	}
}
