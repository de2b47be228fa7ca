package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"

	"agentd/internal/agent"
	"agentd/internal/netguard"
	"agentd/internal/pdftext"
	"agentd/internal/readable"
	"agentd/internal/tool"
)

// fetch is the web_fetch tool.
type fetch struct {
	client   *http.Client
	maxBytes int64
	log      *slog.Logger
}

func newFetch(o *Options) *fetch {
	timeout := o.Fetch.Timeout.D()
	if timeout <= 0 {
		timeout = agent.DefaultWebFetchTimeout
	}
	maxBytes := int64(o.Fetch.MaxBytes)
	if maxBytes <= 0 {
		maxBytes = int64(agent.DefaultWebFetchBytes)
	}
	return &fetch{
		client:   guard(o.Fetch.AllowNetworks, o.Logger).Client(timeout),
		maxBytes: maxBytes,
		log:      o.Logger,
	}
}

const fetchSchema = `{
	"type": "object",
	"properties": {
		"url": {"type": "string", "description": "The http:// or https:// URL of the page."},
		"max_chars": {"type": "integer", "minimum": 1, "description": "Return at most this many characters of the text."}
	},
	"required": ["url"],
	"additionalProperties": false
}`

func (f *fetch) Spec() tool.Spec {
	return tool.Spec{
		Name: "web_fetch",
		Description: "Fetches a public web page and returns its main content as Markdown: " +
			"\"# title\", the final URL, then the text with its headings, lists, links, code and tables " +
			"(menus, ads and scripts left out). Plain text and JSON come as they are, PDFs as their text where it can be read; " +
			"other content is described. Private, loopback and cloud metadata addresses cannot be reached.",
		InputSchema: json.RawMessage(fetchSchema),
		// Idempotent, not ReadOnly: a read-only tool may be run where
		// nobody approves (a widget's action).
		Idempotent: true,
		AskFirst:   true,
		OptIn:      true,
	}
}

type fetchArgs struct {
	URL      string `json:"url"`
	MaxChars int    `json:"max_chars"`
}

// parse reads the arguments and checks the URL.
func (f *fetch) parse(raw json.RawMessage) (fetchArgs, *url.URL, error) {
	var a fetchArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, nil, fmt.Errorf("web_fetch: %w", err)
	}
	u, err := url.Parse(strings.TrimSpace(a.URL))
	if err != nil {
		return a, nil, fmt.Errorf("web_fetch: invalid url: %v", errors.Unwrap(err))
	}
	if err := netguard.CheckURL(u); err != nil {
		return a, nil, fmt.Errorf("web_fetch: %w", err)
	}
	return a, u, nil
}

// Preview shows the URL; "always allow" remembers it exactly.
func (f *fetch) Preview(_ context.Context, c *tool.Call) (tool.Card, error) {
	_, u, err := f.parse(c.Args)
	if err != nil {
		return tool.Card{}, err
	}
	s := u.String()
	return tool.Card{Kind: tool.CardURL, Title: "Fetch " + u.Redacted(), URL: s, Method: http.MethodGet, Exact: s}, nil
}

func (f *fetch) Call(ctx context.Context, c *tool.Call) (tool.Result, error) {
	a, u, err := f.parse(c.Args)
	if err != nil {
		return tool.Result{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return tool.Result{}, fmt.Errorf("web_fetch: %w", err)
	}
	req.Header.Set("User-Agent", "agentd-web-fetch")
	req.Header.Set("Accept", "text/html, application/xhtml+xml, application/pdf;q=0.9, text/*;q=0.8, */*;q=0.5")
	resp, err := f.client.Do(req)
	if err != nil {
		return tool.Result{}, fmt.Errorf("web_fetch: %w", err)
	}
	defer resp.Body.Close()
	final := resp.Request.URL
	body, cut, err := readCapped(resp.Body, f.maxBytes)
	if err != nil {
		return tool.Result{}, fmt.Errorf("web_fetch: reading %s: %w", final.Redacted(), err)
	}
	f.log.Debug("web fetch", "url", final.Redacted(), "status", resp.StatusCode, "bytes", len(body))

	var b strings.Builder
	failed := resp.StatusCode/100 != 2
	if failed {
		fmt.Fprintf(&b, "HTTP %s\n", resp.Status)
	}
	title, text := render(resp.Header.Get("Content-Type"), body, final, cut, resp.ContentLength)
	if title != "" {
		b.WriteString("# " + title + "\n")
	}
	b.WriteString(final.String() + "\n\n")
	if cut {
		fmt.Fprintf(&b, "(the body was cut at %d bytes)\n\n", f.maxBytes)
	}
	out, omitted := capText(b.String()+text, a.MaxChars, c.MaxOutputBytes)
	return tool.Result{Output: out, IsError: failed, Omitted: omitted}, nil
}

// readCapped reads at most max bytes of r, and says whether there was
// more.
func readCapped(r io.Reader, max int64) ([]byte, bool, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(data)) > max {
		return data[:max], true, nil
	}
	return data, false, nil
}

// render turns a body into a title and text by its media type: HTML as
// readable Markdown, PDF as its text, text and JSON as they are, anything
// else described.
func render(contentType string, body []byte, final *url.URL, cut bool, length int64) (title, text string) {
	mt := mediaType(contentType, body)
	switch {
	case len(body) == 0:
		return "", "(empty body)"
	case mt == "text/html" || mt == "application/xhtml+xml":
		p, err := readable.Convert(utf8Reader(body, contentType), final)
		if err != nil {
			return "", fmt.Sprintf("[the HTML page could not be read: %v]", err)
		}
		return p.Title, p.Markdown
	case mt == "application/pdf":
		t, err := pdftext.Extract(body, nil)
		switch {
		case err == nil:
			return "", t
		case cut:
			return "", "[a PDF larger than the fetch limit: its text could not be read]"
		default:
			return "", fmt.Sprintf("[a PDF (%d bytes) whose text cannot be read cheaply: its pages are compressed otherwise, scanned, or in fonts with their own encodings]", len(body))
		}
	case isText(mt):
		if strings.HasPrefix(mt, "text/") {
			if b, err := io.ReadAll(utf8Reader(trimRune(body), contentType)); err == nil {
				body = b
			}
		}
		return "", strings.ToValidUTF8(string(trimRune(body)), "\uFFFD")
	}
	size := fmt.Sprintf("%d bytes", len(body))
	if length > int64(len(body)) {
		size = fmt.Sprintf("%d bytes", length)
	}
	return "", fmt.Sprintf("[%s content (%s) not shown]", mt, size)
}

// utf8Reader reads body as UTF-8, converted from the character set the
// Content-Type, a byte order mark or an HTML meta element names (a page in
// windows-1252 or Shift JIS reads as its author wrote it).
func utf8Reader(body []byte, contentType string) io.Reader {
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		return bytes.NewReader(body)
	}
	return r
}

// mediaType returns the lower-case media type of a Content-Type, or the
// sniffed one when it is missing or malformed.
func mediaType(contentType string, body []byte) string {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		return mt
	}
	mt, _, _ := mime.ParseMediaType(http.DetectContentType(body[:min(len(body), 512)]))
	return mt
}

// isText reports whether a media type is text a model can read as is.
func isText(mt string) bool {
	if strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml") {
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/x-ndjson",
		"application/yaml", "application/x-yaml", "application/toml", "application/csv":
		return true
	}
	return false
}

// trimRune drops a rune cut in half at the end of b.
func trimRune(b []byte) []byte {
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
		if r, n := utf8.DecodeLastRune(b); r != utf8.RuneError || n != 1 {
			break
		}
		b = b[:len(b)-1]
	}
	return b
}

// capText keeps at most maxChars characters and maxBytes bytes of s (0:
// no cap), and says how many bytes it left out.
func capText(s string, maxChars, maxBytes int) (string, int64) {
	n := len(s)
	if maxChars > 0 && utf8.RuneCountInString(s) > maxChars {
		i, k := 0, 0
		for i = range s {
			if k == maxChars {
				break
			}
			k++
		}
		s = s[:i]
	}
	if maxBytes > 0 && len(s) > maxBytes {
		s = string(trimRune([]byte(s[:maxBytes])))
	}
	return s, int64(n - len(s))
}
