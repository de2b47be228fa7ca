package main

// A node that loses its PostgreSQL database, through agentd serve: the
// test puts a TCP proxy between the node and the server, and cuts it.

import (
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"agentd/internal/app"
	"agentd/internal/store/postgres/pgtest"
)

// cutProxy forwards TCP connections to target until cut, which closes
// them all and refuses new ones until restore.
type cutProxy struct {
	t      *testing.T
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	p := &cutProxy{t: t, target: target}
	p.listen("127.0.0.1:0")
	t.Cleanup(p.cut)
	return p
}

func (p *cutProxy) listen(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
}

// cut closes every connection and stops accepting.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// restore accepts again, on the same address.
func (p *cutProxy) restore() { p.listen(p.addr) }

// A node whose PostgreSQL is cut off says so on /readyz (503, the store
// unreachable), refuses new messages with 503 store_unavailable and
// Retry-After instead of acknowledging what it did not store, and takes
// them again once the database is back: a message refused while cut and
// sent again with its idempotency key is logged and answered once.
func TestPostgresLost(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, u.Host)
	via := *u
	via.Host = proxy.addr
	dir := dataDir(t, nil)
	if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "agents", "a.yaml"), []byte(openaiAgent(fake(t, ""), "")), 0o600)
	env := []string{app.StoreEnv + "=" + via.String()}
	tok := strings.TrimSpace(runEnv(t, dir, env, "token").stdout)
	auth := "Authorization: Bearer " + tok
	post := func(base, text string) httpResult {
		return request(t, "POST", base+"/v1/sessions/a/s/messages?wait=true",
			`{"text":"`+text+`","idempotency_key":"`+text+`"}`, auth)
	}
	_, base := serveListenArgs(t, dir, "127.0.0.1:0", nil, env...)
	if r := post(base, "one"); r.status != 200 {
		t.Fatalf("first message: %d %s", r.status, r.body)
	}
	if r := waitReady(t, base, tok, 200); !strings.Contains(r.body, `"reachable":true`) || !strings.Contains(r.body, `"listener":"connected"`) {
		t.Errorf("readyz: %s", r.body)
	}

	proxy.cut()
	if r := waitReady(t, base, tok, 503); !strings.Contains(r.body, "does not answer") || !strings.Contains(r.body, `"reachable":false`) {
		t.Errorf("readyz while cut off: %s", r.body)
	}
	r := post(base, "two")
	if r.status != 503 || !strings.Contains(r.body, `"code":"store_unavailable"`) || r.header.Get("Retry-After") == "" {
		t.Errorf("a message while cut off: %d %s (Retry-After %q)", r.status, r.body, r.header.Get("Retry-After"))
	}

	proxy.restore()
	waitReady(t, base, tok, 200)
	if r := post(base, "two"); r.status != 200 {
		t.Fatalf("the message sent again: %d %s", r.status, r.body)
	}
	log := runEnv(t, dir, env, "log", "a/s").stdout
	for _, text := range []string{"one", "two"} {
		if n := strings.Count(log, " input          "+text+"\n"); n != 1 {
			t.Errorf("%q logged %d times:\n%s", text, n, log)
		}
	}
}
