package identityclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentd/approval"
	"agentd/internal/netguard"
)

// ErrRefused wraps a tool error the identity server answered: the call
// arrived and was refused (a bad argument, an approval it did not accept).
var ErrRefused = errors.New("identity server refused the call")

// Session is a connection to an identity server.
type Session interface {
	CallTool(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, error)
	Close() error
}

// Signer signs an agent's approval of one call (identity.Keyring).
type Signer interface {
	Approve(agentID string, m approval.Message, signedAt time.Time, audience, tool string, arguments any) (*approval.Approval, error)
}

// Dial connects to the identity server at rawURL over streamable HTTP.
// It dials through an SSRF guard that lets it reach the addresses the
// server's host has now (the operator named that server) and no other
// special range, and follows no redirect elsewhere.
func Dial(ctx context.Context, rawURL, version string) (Session, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("identity server %q: not an http or https URL", rawURL)
	}
	allow, err := hostPrefixes(ctx, u.Hostname())
	if err != nil {
		return nil, fmt.Errorf("identity server %s: %w", rawURL, err)
	}
	g := netguard.New(&netguard.Options{AllowPrefixes: allow, DialTimeout: 10 * time.Second})
	hc := &http.Client{Transport: g.Transport(), CheckRedirect: netguard.CheckRedirect}
	c := mcp.NewClient(&mcp.Implementation{Name: "agentd", Version: version}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: rawURL, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("identity server %s: connect: %w", rawURL, err)
	}
	return cs, nil
}

// hostPrefixes are the addresses host names, each a single-address range.
func hostPrefixes(ctx context.Context, host string) ([]netip.Prefix, error) {
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Prefix{netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen())}, nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	out := make([]netip.Prefix, 0, len(ips))
	for _, ip := range ips {
		out = append(out, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
	}
	return out, nil
}

// call calls tool with args on s, as agentID: the call carries the
// agent's approval for audience (the server's URL), this tool and these
// arguments. It returns the answer's JSON text; a tool error wraps
// ErrRefused, anything else is the connection's.
func call(ctx context.Context, s Session, keys Signer, audience, agentID, tool string, args any) (json.RawMessage, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	m := approval.Message{Text: "identity server: " + tool, CreatedAt: now, ID: fmt.Sprintf("identity-%s-%d", tool, now.UnixNano())}
	a, err := keys.Approve(agentID, m, now, audience, tool, json.RawMessage(raw))
	if err != nil {
		return nil, fmt.Errorf("sign %s: %w", tool, err)
	}
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(raw), Meta: mcp.Meta{approval.MetaKey: a}})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text.WriteString(t.Text)
		}
	}
	if res.IsError {
		return nil, fmt.Errorf("%w: %s: %s", ErrRefused, tool, text.String())
	}
	return json.RawMessage(text.String()), nil
}
