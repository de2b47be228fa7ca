package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"agentd/internal/agent"
	"agentd/internal/identityserver"
	"agentd/internal/mcpserver"
	"agentd/internal/store"
)

// IdentityServerOptions configure ServeIdentity.
type IdentityServerOptions struct {
	Dir   string // the data directory (its agentd.db with SQLite)
	Store string // sqlite or a postgres:// URL ("" sqlite)
	// Audience lists the URLs agents name the server by; default the
	// listener's http://ADDR/mcp.
	Audience []string
	// AllowedHosts are Host headers accepted beside loopback ones (a
	// non-loopback listener needs its name here).
	AllowedHosts []string
	Version      string
	Logger       *slog.Logger
	// Ready, when set, is called with the address served once it listens.
	Ready func(addr string)
}

// ServeIdentity runs agentd's identity server on ln, its characters and
// logs in the store of o (shared by many servers on PostgreSQL), until ctx
// ends.
func ServeIdentity(ctx context.Context, ln net.Listener, o IdentityServerOptions) error {
	if err := privateDataDir(o.Dir, o.Logger); err != nil {
		return err
	}
	st, _, _, err := openStore(ctx, o.Dir, o.Store, agent.StoreConfig{}, nodeInfo{version: o.Version}, o.Logger)
	if err != nil {
		return err
	}
	defer st.Close()
	ids, ok := st.(store.IdentityStore)
	if !ok {
		return errors.New("app: identity server: the store keeps no identity tables")
	}
	aud := o.Audience
	if len(aud) == 0 {
		aud = []string{"http://" + ln.Addr().String() + "/mcp"}
	}
	srv, err := identityserver.New(ids, &identityserver.Options{Audience: aud, Logger: o.Logger, Version: o.Version})
	if err != nil {
		return err
	}
	hosts := append([]string{"localhost", "127.0.0.1", "[::1]"}, o.AllowedHosts...)
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Handler(&mcpserver.HandlerOptions{AllowedHosts: hosts}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	if o.Ready != nil {
		o.Ready(ln.Addr().String())
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("app: identity server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	<-done
	return nil
}
