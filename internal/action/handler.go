package action

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"

	"agentd/internal/extension"
	"agentd/internal/netguard"
	"agentd/internal/schema"
	"agentd/internal/secret"
	"agentd/internal/store"
	"agentd/internal/tool"
)

// TypeName is the extension type's name.
const TypeName = "action"

// ErrNameTaken is wrapped by Activate's error when another tool (a
// built-in one, an MCP server's) has the row's name.
var ErrNameTaken = errors.New("tool name taken")

// Options configures a Handler.
type Options struct {
	// AllowNetworks are ranges actions may reach although the SSRF guard
	// blocks them (agentd.yaml's actions.allow_networks). Default: none.
	AllowNetworks []netip.Prefix
	// Secrets resolves the references in headers; default: the
	// environment only (every ${secret:NAME} is missing).
	Secrets *secret.Resolver
	// Logger receives activations; default: discarded.
	Logger *slog.Logger
}

// Handler activates action rows as tools in a tool.Registry. Its calls
// share one HTTP client, whose every connection, redirects' too, goes
// through the SSRF guard.
type Handler struct {
	reg     *tool.Registry
	guard   *netguard.Guard
	client  *http.Client
	secrets *secret.Resolver
	log     *slog.Logger

	// mu guards active, and makes activations one at a time; it is
	// taken before the registry's own lock (Replace, Unregister).
	mu     sync.Mutex
	active map[string]*actionTool // by name: the versions this handler registered
}

// New returns a Handler registering tools in reg. opts may be nil.
func New(reg *tool.Registry, opts *Options) *Handler {
	var o Options
	if opts != nil {
		o = *opts
	}
	h := &Handler{
		reg:     reg,
		guard:   netguard.New(&netguard.Options{AllowPrefixes: o.AllowNetworks}),
		secrets: o.Secrets,
		log:     o.Logger,
		active:  map[string]*actionTool{},
	}
	if h.secrets == nil {
		h.secrets = secret.NewResolver("", nil)
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.client = &http.Client{Transport: h.guard.Transport(), CheckRedirect: checkRedirect}
	return h
}

// Type returns the action extension type, its rows activated as tools in
// reg.
func Type(reg *tool.Registry, opts *Options) extension.Type {
	return extension.Type{
		Name:    TypeName,
		Summary: "a declarative HTTP tool: a request made from the arguments, its answer returned to the model",
		Schema:  Schema,
		Handler: New(reg, opts),
		// An action that sends a secret or an environment variable
		// reaches wherever its writer says: only a person, or an agent
		// trusted with the machine, writes one.
		Machine: func(spec json.RawMessage) bool { return bytes.Contains(spec, []byte("${")) },
	}
}

// hostsKey is the context key of the hosts a request may reach.
type hostsKey struct{}

func withHosts(ctx context.Context, hosts []hostPort) context.Context {
	return context.WithValue(ctx, hostsKey{}, hosts)
}

// checkRedirect follows a redirect only where netguard.CheckRedirect
// would and only to a host of the action's allow_hosts.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if err := netguard.CheckRedirect(req, via); err != nil {
		return err
	}
	hosts, _ := req.Context().Value(hostsKey{}).([]hostPort)
	host, port := strings.ToLower(req.URL.Hostname()), req.URL.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[req.URL.Scheme]
	}
	if !allows(hosts, host, port) {
		return fmt.Errorf("redirect: %w: %s is not in the action's allow_hosts", netguard.ErrBlocked, hostAndPort(host, port))
	}
	// The client sends the action's headers, secrets included, again:
	// never over plain HTTP after HTTPS, nor to another host.
	first := via[0].URL
	if first.Scheme == "https" && req.URL.Scheme != "https" {
		return fmt.Errorf("redirect: %w: from https to %s", netguard.ErrBlocked, req.URL.Scheme)
	}
	if !strings.EqualFold(first.Host, req.URL.Host) {
		for name := range req.Header {
			if name != "Accept" && name != "Content-Type" && name != "User-Agent" {
				req.Header.Del(name) // the headers a row set may hold its secrets
			}
		}
	}
	return nil
}

// Activate registers the row's version as a tool under the row's name,
// in place of its previous version in one step. A name another tool has
// is refused, and so is a spec that no longer passes Check (the
// operator's allowed networks changed): the previous version stays.
func (h *Handler) Activate(_ context.Context, e *store.Extension) error {
	c, errs := h.compile(e.Name, e.Spec)
	if errs != nil {
		return &extension.ValidationError{Doc: TypeName + "/" + e.Name, Errors: errs}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	prev := h.active[e.Name]
	next := &actionTool{name: e.Name, c: c, h: h}
	var old tool.Tool
	if prev != nil {
		old = prev
	}
	if err := h.reg.Replace(old, next); err != nil {
		if errors.Is(err, tool.ErrDuplicate) {
			return fmt.Errorf("action: %w: a tool named %s exists already", ErrNameTaken, e.Name)
		}
		return fmt.Errorf("action: %w", err)
	}
	h.active[e.Name] = next
	h.log.Info("action active", "name", e.Name, "version", e.Version, "url", c.spec.URL)
	return nil
}

// Deactivate unregisters the action's tool. Calls already running finish.
func (h *Handler) Deactivate(_ context.Context, name string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.active[name]; ok {
		h.reg.Unregister(name)
		delete(h.active, name)
	}
	return nil
}

// Check checks a document beyond its schema, before anything is written:
// its name must be a tool's name no other tool has, its URL must parse,
// reach a host of allow_hosts and, when that host is an address (or
// localhost), one the SSRF guard lets through; its input schema must
// compile and its secret references parse (they are not resolved: the
// secret may be set later).
func (h *Handler) Check(_ context.Context, d *extension.Doc) []schema.Error {
	_, errs := h.compile(d.Name, d.Spec)
	if t, ok := h.reg.Get(d.Name); ok {
		h.mu.Lock()
		mine := h.active[d.Name] != nil && tool.Tool(h.active[d.Name]) == t
		h.mu.Unlock()
		if !mine {
			errs = append(errs, schema.Error{Pointer: "/name", Message: fmt.Sprintf("a tool named %s exists already (built in, or an MCP server's)", d.Name)})
		}
	}
	return errs
}

// compile compiles a spec for the row called name, and checks what
// depends on the node: the name as a tool's, the URL's host against the
// SSRF guard.
func (h *Handler) compile(name string, raw []byte) (*compiled, []schema.Error) {
	c, errs := compile(raw)
	switch {
	case tool.CheckSpec(tool.Spec{Name: name}) != nil:
		errs = append(errs, schema.Error{Pointer: "/name", Message: "must be a tool's name: 1 to 64 letters, digits, '_' or '-'"})
	case strings.Contains(name, "__"):
		// <server>__<tool> is an MCP server's namespace: an action there
		// would match the patterns that allow that server's tools.
		errs = append(errs, schema.Error{Pointer: "/name", Message: "must not hold \"__\", which names an MCP server's tools"})
	}
	if c != nil {
		if err := h.checkHost(c.url.host); err != nil {
			errs = append(errs, schema.Error{Pointer: "/spec/url", Message: err.Error()})
		}
	}
	if errs != nil {
		return nil, errs
	}
	return c, nil
}

// checkHost refuses a host that is an address the guard blocks (or
// localhost), saying how the operator allows it. A name is checked when a
// call connects, on the address it resolves to then.
func (h *Handler) checkHost(host string) error {
	host = strings.TrimSuffix(host, ".")
	ip, err := netip.ParseAddr(host)
	if err != nil {
		if host != "localhost" && !strings.HasSuffix(host, ".localhost") {
			return nil
		}
		ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	if err := h.guard.Check(ip); err != nil {
		what, _ := netguard.Blocked(ip)
		return fmt.Errorf("%s is in a blocked range (%s); the operator allows it with actions.allow_networks in agentd.yaml", host, what)
	}
	return nil
}

// Close closes the idle connections the handler's calls left open. Calls
// still running finish; later calls open new connections.
func (h *Handler) Close() { h.client.CloseIdleConnections() }

var (
	_ extension.Handler = (*Handler)(nil)
	_ extension.Checker = (*Handler)(nil)
)
