package slack

import (
	"context"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"agentd/internal/connector"
)

// Fetch downloads a file a person shared (its url_private, which takes the
// bot token: https://api.slack.com/types/file#auth), at most max bytes.
// The token goes only to Slack's own hosts (or the configured API's):
// a URL elsewhere is refused before any request.
func (p *Platform) Fetch(ctx context.Context, a connector.Attachment, max int64) ([]byte, string, error) {
	if !p.slackHost(a.URL) {
		return nil, "", p.fail(connector.ErrPermanent, "slack: file %s: not a Slack file URL", a.ID)
	}
	if a.Size > max {
		return nil, "", p.fail(connector.ErrTooLong, "slack: file %s: %d bytes, over %d", a.ID, a.Size, max)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL, nil)
	if err != nil {
		return nil, "", p.fail(connector.ErrPermanent, "slack: file %s: %v", a.ID, err)
	}
	req.Header.Set("Authorization", "Bearer "+p.cfg.Token)
	resp, err := p.deps.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		// The URL is not shown: it names the file in the workspace.
		return nil, "", p.fail(nil, "slack: file %s: %v", a.ID, redactURL(err, a.URL))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		return nil, "", &connector.RetryAfter{D: retryAfter(resp.Header.Get("Retry-After"))}
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusForbidden:
		return nil, "", p.fail(connector.ErrPermanent, "slack: file %s: HTTP %d", a.ID, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return nil, "", p.fail(nil, "slack: file %s: HTTP %d", a.ID, resp.StatusCode)
	}
	typ := resp.Header.Get("Content-Type")
	if mt, _, _ := mime.ParseMediaType(typ); mt == "text/html" && !strings.HasPrefix(a.Type, "text/html") {
		// Slack answers a request it does not accept with its sign-in
		// page: the bot lacks files:read.
		return nil, "", p.fail(connector.ErrConfig, "slack: file %s: Slack answered a web page, not the file (does the bot have files:read?)", a.ID)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, "", p.fail(nil, "slack: file %s: %v", a.ID, err)
	}
	if int64(len(data)) > max {
		return nil, "", p.fail(connector.ErrTooLong, "slack: file %s: over %d bytes", a.ID, max)
	}
	if a.Type != "" {
		typ = a.Type
	}
	return data, typ, nil
}

// slackHost reports whether raw is an https URL on slack.com, or on the
// configured API's host (a test server, an enterprise proxy).
func (p *Platform) slackHost(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil {
		return false
	}
	if api, err := url.Parse(p.cfg.APIURL); err == nil && u.Scheme == api.Scheme && u.Host == api.Host {
		return true
	}
	h := u.Hostname()
	return u.Scheme == "https" && (h == "slack.com" || strings.HasSuffix(h, ".slack.com"))
}
