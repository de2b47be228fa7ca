package builtin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"agentd/internal/netguard"
	"agentd/internal/tool"
)

// Defaults of http_fetch.
const (
	defaultFetchTimeout  = 30 * time.Second
	defaultFetchMaxBytes = 1 << 20
	// countMax bounds what is read past the cap of a body whose length
	// was not given, to count what was left out.
	countMax  = 8 << 20
	sniffLen  = 512 // what http.DetectContentType looks at
	userAgent = "agentd-http-fetch"
)

// fetch is the http_fetch tool. All its connections go through a
// netguard.Guard, so it cannot reach loopback, private, link-local or
// metadata addresses (unless Options.AllowPrefixes allows them), whatever
// the URL, the DNS answers or the redirects say.
type fetch struct {
	client   *http.Client
	maxBytes int64
}

func newFetch(o *Options) *fetch {
	timeout := o.FetchTimeout
	if timeout <= 0 {
		timeout = defaultFetchTimeout
	}
	maxBytes := o.FetchMaxBytes
	if maxBytes <= 0 {
		maxBytes = defaultFetchMaxBytes
	}
	g := netguard.New(&netguard.Options{AllowPrefixes: o.AllowPrefixes})
	return &fetch{client: g.Client(timeout), maxBytes: maxBytes}
}

const fetchSchema = `{
	"type": "object",
	"properties": {
		"url": {"type": "string", "description": "The http:// or https:// URL."},
		"method": {"type": "string", "enum": ["GET", "POST", "HEAD"], "description": "Default: GET."},
		"headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Request headers, such as {\"Accept\": \"application/json\"}."},
		"body": {"type": "string", "description": "The request body; only with POST."}
	},
	"required": ["url"],
	"additionalProperties": false
}`

func (*fetch) Spec() tool.Spec {
	return tool.Spec{
		Name: "http_fetch",
		Description: "Sends an HTTP GET, POST or HEAD request to a public http(s) URL and returns the status, " +
			"the Content-Type, Content-Length and Location headers, and the body as text " +
			"(HTML, JSON, XML and other text; other content is described, not shown). " +
			"Follows up to 5 redirects. Private, loopback and cloud metadata addresses cannot be reached.",
		InputSchema: json.RawMessage(fetchSchema),
		Risky:       true,
	}
}

type fetchArgs struct {
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers"`
	Body    *string           `json:"body"`
}

func (f *fetch) Call(ctx context.Context, c *tool.Call) (tool.Result, error) {
	var args fetchArgs
	if err := json.Unmarshal(c.Args, &args); err != nil {
		return tool.Result{}, fmt.Errorf("http_fetch: %w", err)
	}
	req, err := f.request(ctx, &args)
	if err != nil {
		return tool.Result{}, err
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return tool.Result{}, err
	}
	defer resp.Body.Close()

	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %s\n", resp.Status)
	if final := resp.Request.URL.String(); final != req.URL.String() {
		fmt.Fprintf(&b, "URL: %s\n", final)
	}
	if v := resp.Header.Get("Content-Type"); v != "" {
		fmt.Fprintf(&b, "Content-Type: %s\n", v)
	}
	if resp.ContentLength >= 0 {
		fmt.Fprintf(&b, "Content-Length: %d\n", resp.ContentLength)
	}
	if v := resp.Header.Get("Location"); v != "" {
		fmt.Fprintf(&b, "Location: %s\n", v)
	}
	if req.Method == http.MethodHead {
		return tool.Result{Output: b.String()}, nil
	}
	b.WriteByte('\n')
	limit := f.maxBytes
	if c.MaxOutputBytes > 0 {
		limit = min(limit, int64(max(c.MaxOutputBytes-b.Len(), 0)))
	}
	omitted, err := writeBody(&b, resp, limit)
	if err != nil {
		return tool.Result{}, fmt.Errorf("reading the body of %s: %w", resp.Request.URL.Redacted(), err)
	}
	return tool.Result{Output: b.String(), Omitted: omitted}, nil
}

// request builds the request args describe.
func (f *fetch) request(ctx context.Context, args *fetchArgs) (*http.Request, error) {
	method := args.Method
	if method == "" {
		method = http.MethodGet
	}
	switch method {
	case http.MethodGet, http.MethodPost, http.MethodHead:
	default:
		return nil, fmt.Errorf("method %q is not supported: use GET, POST or HEAD", method)
	}
	u, err := url.Parse(args.URL)
	if err != nil {
		return nil, fmt.Errorf("invalid url: %v", errors.Unwrap(err))
	}
	if err := netguard.CheckURL(u); err != nil {
		return nil, err
	}
	var body io.Reader
	if args.Body != nil {
		if method != http.MethodPost {
			return nil, fmt.Errorf("a body can only be sent with POST, not %s", method)
		}
		body = strings.NewReader(*args.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("invalid request: %w", err)
	}
	for k, v := range args.Headers {
		req.Header.Set(k, v)
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", userAgent)
	}
	return req, nil
}

// writeBody writes the response body to b if it is text, up to limit
// bytes, and a one-line description of it otherwise. It returns how many
// bytes of the body it left out: reading stops at the limit, so a large
// body is never held (one of unknown length is read up to countMax
// further to count them).
func writeBody(b *strings.Builder, resp *http.Response, limit int64) (omitted int64, err error) {
	br := bufio.NewReaderSize(resp.Body, sniffLen)
	head, err := br.Peek(sniffLen)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	if len(head) == 0 {
		b.WriteString("(empty body)")
		return 0, nil
	}
	mediaType := mediaTypeOf(resp.Header.Get("Content-Type"), head)
	size := "size unknown"
	if resp.ContentLength >= 0 {
		size = strconv.FormatInt(resp.ContentLength, 10) + " bytes"
	}
	if !isText(mediaType) {
		fmt.Fprintf(b, "[%s content (%s) not shown]", mediaType, size)
		return 0, nil
	}
	data, err := io.ReadAll(io.LimitReader(br, limit+1))
	if err != nil {
		return 0, err
	}
	if int64(len(data)) <= limit {
		b.WriteString(strings.ToValidUTF8(string(data), "\uFFFD"))
		return 0, nil
	}
	data = data[:limit]
	// Drop a rune cut in half at the end.
	for i := 0; i < utf8.UTFMax-1 && len(data) > 0; i++ {
		if r, n := utf8.DecodeLastRune(data); r != utf8.RuneError || n != 1 {
			break
		}
		data = data[:len(data)-1]
	}
	b.WriteString(strings.ToValidUTF8(string(data), "\uFFFD"))
	if resp.ContentLength >= 0 {
		return max(resp.ContentLength-int64(len(data)), 1), nil
	}
	// A failure while counting loses only the count's precision.
	rest, _ := io.Copy(io.Discard, io.LimitReader(br, countMax))
	return limit + 1 - int64(len(data)) + rest, nil
}

// mediaTypeOf returns the lower-case media type of a Content-Type header,
// or the sniffed one when the header is missing or malformed.
func mediaTypeOf(contentType string, head []byte) string {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		return mt
	}
	mt, _, _ := mime.ParseMediaType(http.DetectContentType(head))
	return mt
}

// isText reports whether a media type is text a model can read.
func isText(mediaType string) bool {
	if strings.HasPrefix(mediaType, "text/") || strings.HasSuffix(mediaType, "+json") || strings.HasSuffix(mediaType, "+xml") {
		return true
	}
	switch mediaType {
	case "application/json", "application/xml", "application/javascript", "application/ecmascript",
		"application/x-javascript", "application/x-www-form-urlencoded", "application/yaml",
		"application/x-yaml", "application/toml", "application/x-ndjson", "application/graphql",
		"application/sql", "application/csv":
		return true
	}
	return false
}
