package action

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"agentd/internal/schema"
	"agentd/internal/secret"
	"agentd/internal/tool"
)

// Schema is the JSON Schema of an action's spec.
//
//go:embed schema.json
var Schema []byte

// Limits and defaults of a spec.
const (
	DefaultTimeout  = 15 * time.Second
	MaxTimeout      = 2 * time.Minute
	DefaultMaxBytes = 256 << 10
	MaxMaxBytes     = 4 << 20
)

// Spec is an action's document, the spec of an extension row of type
// action.
type Spec struct {
	Description string            `json:"description"`
	Method      string            `json:"method,omitempty"` // default GET
	URL         string            `json:"url"`
	Query       map[string]string `json:"query,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Body        json.RawMessage   `json:"body,omitempty"`
	Input       json.RawMessage   `json:"input,omitempty"`
	Extract     *Extract          `json:"extract,omitempty"`
	Timeout     string            `json:"timeout,omitempty"`
	MaxBytes    int64             `json:"max_bytes,omitempty"`
	ReadOnly    bool              `json:"read_only,omitempty"`
	Idempotent  bool              `json:"idempotent,omitempty"`
	AllowHosts  []string          `json:"allow_hosts"`
}

// Extract says what of a JSON response a call returns: the value at Path,
// or Template filled from the response. Neither: the whole response.
type Extract struct {
	Path     string `json:"path,omitempty"`
	Template string `json:"template,omitempty"`
}

// noInput is the input schema of an action that names none: it takes no
// arguments.
const noInput = `{"type":"object","properties":{},"additionalProperties":false}`

// headerName is what a header's name may be (an HTTP token).
var headerName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$") })

// reservedHeader reports whether a header is the HTTP client's to set:
// the connection's and the message's framing, which a document must not
// change.
func reservedHeader(name string) bool {
	switch k := http.CanonicalHeaderKey(name); k {
	case "Host", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Upgrade", "Te", "Trailer", "Expect":
		return true
	default:
		return strings.HasPrefix(k, "Proxy-")
	}
}

// compiled is a spec made ready to call.
type compiled struct {
	spec     Spec
	method   string
	url      *urlTemplate
	headers  []header
	body     *bodyTemplate // nil: no body
	input    json.RawMessage
	extract  *extractor // nil: the whole response
	timeout  time.Duration
	maxBytes int64
	hosts    []hostPort
}

// header is one request header; its value may hold secret references.
type header struct {
	name, value string
	secret      bool // value holds a reference, or "$${"
}

// compile decodes and checks a spec. Every problem is reported, each with
// its pointer under "/spec".
func compile(raw json.RawMessage) (*compiled, []schema.Error) {
	var s Spec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, []schema.Error{decodeError(err)}
	}
	c := &compiled{spec: s, input: s.Input}
	var errs []schema.Error
	add := func(ptr, format string, args ...any) {
		errs = append(errs, schema.Error{Pointer: "/spec" + ptr, Message: fmt.Sprintf(format, args...)})
	}
	if strings.TrimSpace(s.Description) == "" {
		add("/description", "required: what the tool does, for the model")
	}
	switch c.method = s.Method; c.method {
	case "":
		c.method = http.MethodGet
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		add("/method", "must be GET, HEAD, POST, PUT, PATCH or DELETE, not %q", s.Method)
	}
	var err error
	if c.url, err = parseURL(s.URL, s.Query); err != nil {
		add("/url", "%v", err)
	}
	if len(s.AllowHosts) == 0 {
		add("/allow_hosts", "required: the hosts the action may reach, with the URL's")
	}
	for i, h := range s.AllowHosts {
		hp, err := parseHost(h)
		if err != nil {
			add(fmt.Sprintf("/allow_hosts/%d", i), "%q: %v", h, err)
			continue
		}
		c.hosts = append(c.hosts, hp)
	}
	if c.url != nil && len(c.hosts) == len(s.AllowHosts) && !allows(c.hosts, c.url.host, c.url.port) {
		add("/url", "host %s is not in allow_hosts", hostAndPort(c.url.host, c.url.port))
	}
	c.compileHeaders(add)
	if len(s.Body) > 0 && !bytes.Equal(bytes.TrimSpace(s.Body), []byte("null")) {
		if c.method == http.MethodGet || c.method == http.MethodHead {
			add("/body", "a %s request has no body", c.method)
		} else if c.body, err = parseBody(s.Body); err != nil {
			add("/body", "%v", err)
		}
	}
	c.inputSchema(add)
	c.checkRefs(add)
	if s.Extract != nil {
		if c.extract, err = newExtractor(s.Extract); err != nil {
			add("/extract", "%v", err)
		}
	}
	c.limits(add)
	if errs != nil {
		return nil, errs
	}
	return c, nil
}

// compileHeaders checks the headers: names, one-line values, secret
// references that parse.
func (c *compiled) compileHeaders(add func(ptr, format string, args ...any)) {
	for _, name := range slices.Sorted(maps.Keys(c.spec.Headers)) {
		v := c.spec.Headers[name]
		ptr := "/headers/" + schema.Escape(name)
		switch {
		case !headerName().MatchString(name):
			add(ptr, "%q is not a header name", name)
		case reservedHeader(name):
			add(ptr, "%s is set by agentd's HTTP client, not by an action", http.CanonicalHeaderKey(name))
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			add(ptr, "a header's value is one line")
		}
		if _, err := secret.Parse(v); err != nil {
			add(ptr, "%v", err)
		}
		c.headers = append(c.headers, header{name: name, value: v, secret: strings.Contains(v, "${")})
	}
}

// limits takes the timeout and the size cap, or their defaults.
func (c *compiled) limits(add func(ptr, format string, args ...any)) {
	var err error
	c.timeout = DefaultTimeout
	if c.spec.Timeout != "" {
		if c.timeout, err = time.ParseDuration(c.spec.Timeout); err != nil || c.timeout <= 0 || c.timeout > MaxTimeout {
			add("/timeout", "must be a duration above 0 and at most 2m, such as 15s, not %q", c.spec.Timeout)
		}
	}
	switch c.maxBytes = c.spec.MaxBytes; {
	case c.maxBytes == 0:
		c.maxBytes = DefaultMaxBytes
	case c.maxBytes < 0 || c.maxBytes > MaxMaxBytes:
		add("/max_bytes", "must be between 1 and %d (4 MiB)", MaxMaxBytes)
	}
}

// inputSchema checks the arguments' schema as the tool registry will.
func (c *compiled) inputSchema(add func(ptr, format string, args ...any)) {
	if len(bytes.TrimSpace(c.input)) == 0 {
		c.input = json.RawMessage(noInput)
		return
	}
	if err := tool.CheckSpec(tool.Spec{Name: "action", InputSchema: c.input}); err != nil {
		add("/input", "%s", strings.TrimPrefix(err.Error(), `tool: register "action": `))
	}
}

// checkRefs refuses a reference to an argument the input schema does not
// name (a typo would fill nothing at every call), when it names its
// properties.
func (c *compiled) checkRefs(add func(ptr, format string, args ...any)) {
	var in struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(c.input, &in) != nil || in.Properties == nil {
		return
	}
	check := func(ptr string, refs []path) {
		for _, r := range refs {
			if _, ok := in.Properties[r[0].name]; !ok || r[0].index >= 0 {
				add(ptr, "{{%s}} names no property of input", r)
			}
		}
	}
	if c.url != nil {
		check("/url", c.url.refs())
	}
	if c.body != nil {
		check("/body", c.body.refs())
	}
}

// decodeError turns a decoding error into one with a pointer.
func decodeError(err error) schema.Error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return schema.Error{Pointer: "/spec/" + strings.ReplaceAll(te.Field, ".", "/"), Message: "must be " + jsonType(te.Type.Kind().String())}
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return schema.Error{Pointer: "/spec/" + schema.Escape(strings.Trim(name, `"`)), Message: "unknown field"}
	}
	return schema.Error{Pointer: "/spec", Message: strings.TrimPrefix(err.Error(), "json: ")}
}

// jsonType names the JSON type a Go kind decodes from.
func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int64", "int":
		return "an integer"
	case "map", "struct", "ptr":
		return "an object"
	case "slice":
		return "an array"
	}
	return kind
}

func hostAndPort(host, port string) string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return host + ":" + port
}
