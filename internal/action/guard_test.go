package action

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"agentd/internal/extension"
	"agentd/internal/schema"
	"agentd/internal/tool"
)

// A redirect is followed only to a host of allow_hosts, and then only to
// an address the guard lets through: a server on an allowed address
// cannot send the call to another.
func TestRedirectRefused(t *testing.T) {
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	port := strings.Split(srv.Listener.Addr().String(), ":")[1]
	hs := newHarness(t, []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})
	hs.mustActivate("go", `{
		"description": "d", "url": "$URL/?to={{to}}",
		"input": {"type": "object", "properties": {"to": {"type": "string"}}},
		"allow_hosts": ["$HOST", "127.0.0.2", "169.254.169.254"]
	}`, srv)
	for _, tc := range []struct{ to, want string }{
		{"http://127.0.0.2:" + port + "/", "127.0.0.2 is a loopback address"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254 is the cloud metadata address"},
		{"http://example.com/", "example.com:80 is not in the action's allow_hosts"},
		{"file:///etc/passwd", `scheme "file" is not supported`},
	} {
		res := hs.call("go", `{"to": "`+tc.to+`"}`)
		if !res.IsError || !strings.Contains(res.Output, tc.want) {
			t.Errorf("redirect to %s: %+v, want %q", tc.to, res, tc.want)
		}
	}
}

// An action's URL on a blocked address is refused when it is checked and
// activated, unless the operator allows the range; the guard refuses the
// connection itself too, whatever passed the checks.
func TestBlockedAddresses(t *testing.T) {
	for _, tc := range []struct {
		url, want string
	}{
		{"http://169.254.169.254/latest/meta-data/", "/spec/url: 169.254.169.254 is in a blocked range (the cloud metadata address)"},
		{"http://127.0.0.1:8080/admin", "/spec/url: 127.0.0.1 is in a blocked range (a loopback address)"},
		{"http://10.0.0.1/", "/spec/url: 10.0.0.1 is in a blocked range (a private address); the operator allows it with actions.allow_networks in agentd.yaml"},
		{"http://[::1]:9/", "/spec/url: ::1 is in a blocked range"},
		{"http://localhost:9/", "/spec/url: localhost is in a blocked range"},
		{"http://LocalHost.:9/", "/spec/url: localhost is in a blocked range"},
	} {
		u, _ := url.Parse(tc.url)
		spec := `{"description": "d", "url": "` + tc.url + `", "allow_hosts": ["` + u.Host + `"]}`
		hs := newHarness(t, nil)
		errs := hs.h.Check(context.Background(), &extension.Doc{Type: TypeName, Name: "x", Spec: json.RawMessage(spec)})
		if len(errs) != 1 || !strings.HasPrefix(errs[0].String(), tc.want) {
			t.Errorf("Check %s: %v, want %q", tc.url, errs, tc.want)
		}
		if err := hs.activate("x", spec, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Activate %s: %v", tc.url, err)
		}
		if _, ok := hs.reg.Get("x"); ok {
			t.Errorf("%s: a refused action was registered", tc.url)
		}
		allowed := newHarness(t, []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")})
		if errs := allowed.h.Check(context.Background(), &extension.Doc{Type: TypeName, Name: "x", Spec: json.RawMessage(spec)}); errs != nil {
			t.Errorf("Check %s with its range allowed: %v", tc.url, errs)
		}
	}

	// Past the checks (a name that resolves to a blocked address, or a
	// range the operator closed since), the connection is refused.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the guard let a request through to %s", r.URL)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	c, errs := compile(json.RawMessage(`{"description": "d", "url": "` + srv.URL + `", "allow_hosts": ["` + u.Host + `"]}`))
	if errs != nil {
		t.Fatal(errs)
	}
	hs := newHarness(t, nil)
	_, err := (&actionTool{name: "x", c: c, h: hs.h}).Call(context.Background(), &tool.Call{Args: json.RawMessage(`{}`)})
	if err == nil || !strings.Contains(err.Error(), "destination not allowed: 127.0.0.1 is a loopback address") {
		t.Errorf("a call to a blocked address: %v", err)
	}
}

// Check reports every problem of a spec with its pointer.
func TestCheck(t *testing.T) {
	hs := newHarness(t, nil)
	if err := hs.reg.Register(tool.Func(tool.Spec{Name: "http_fetch"}, nil)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, spec string
		want       []string
	}{
		{"ok", `{"description": "d", "url": "https://api.example.com/x/{{id}}", "input": {"type": "object", "properties": {"id": {"type": "integer"}}}, "allow_hosts": ["api.example.com"]}`, nil},
		{"bad.name", `{"description": "d", "url": "https://a.example/", "allow_hosts": ["a.example"]}`,
			[]string{"/name: must be a tool's name: 1 to 64 letters, digits, '_' or '-'"}},
		{"http_fetch", `{"description": "d", "url": "https://a.example/", "allow_hosts": ["a.example"]}`,
			[]string{"/name: a tool named http_fetch exists already (built in, or an MCP server's)"}},
		{"x", `{"description": "d", "url": "https://a.example/", "allow_hosts": ["a.example"], "colour": 1}`,
			[]string{"/spec/colour: unknown field"}},
		{"x", `{"description": "d", "url": 7, "allow_hosts": ["a.example"]}`,
			[]string{"/spec/url: must be a string"}},
		{"x", `{"description": " ", "method": "TRACE", "url": "ftp://a.example/", "allow_hosts": ["a.example:99", "a b"]}`, []string{
			"/spec/description: required: what the tool does, for the model",
			`/spec/method: must be GET, HEAD, POST, PUT, PATCH or DELETE, not "TRACE"`,
			`/spec/url: scheme "ftp" is not supported; use http or https`,
			`/spec/allow_hosts/1: "a b": want a host name or address, with an optional :port`,
		}},
		{"x", `{"description": "d", "url": "https://{{host}}/x", "allow_hosts": ["a.example"]}`,
			[]string{"/spec/url: the host cannot hold a {{…}} reference: it is fixed, so that arguments cannot send the request elsewhere"}},
		{"x", `{"description": "d", "url": "https://a.example:8443/x", "allow_hosts": ["a.example:443", "b.example"]}`,
			[]string{"/spec/url: host a.example:8443 is not in allow_hosts"}},
		{"x", `{"description": "d", "url": "https://a.example/x?k=${secret:K}", "allow_hosts": ["a.example"]}`,
			[]string{"/spec/url: secret references go in headers, not in the URL"}},
		{"x", `{"description": "d", "url": "https://a.example/{{id", "allow_hosts": ["a.example"]}`,
			[]string{`/spec/url: bad template: "{{id" is not closed with }}`}},
		{"x", `{"description": "d", "url": "https://a.example/{{idd}}", "body": {"a": "{{b}}"}, "method": "POST", "input": {"type": "object", "properties": {"id": {"type": "string"}}}, "allow_hosts": ["a.example"]}`,
			[]string{"/spec/url: {{idd}} names no property of input", "/spec/body: {{b}} names no property of input"}},
		{"x", `{"description": "d", "url": "https://a.example/", "body": {"a": 1}, "allow_hosts": ["a.example"]}`,
			[]string{"/spec/body: a GET request has no body"}},
		{"x", `{"description": "d", "url": "https://a.example/", "headers": {"Authorization": "Bearer ${vault:T}", "Bad Name": "x", "host": "evil.example", "X-A": "a\r\nX-B: b"}, "allow_hosts": ["a.example"]}`, []string{
			`/spec/headers/Authorization: bad secret reference: ${vault:T}: want ${env:NAME} or ${secret:NAME} (write $${ for a literal ${)`,
			`/spec/headers/Bad Name: "Bad Name" is not a header name`,
			"/spec/headers/X-A: a header's value is one line",
			"/spec/headers/host: Host is set by agentd's HTTP client, not by an action",
		}},
		{"x", `{"description": "d", "url": "https://a.example/", "input": {"type": "array"}, "allow_hosts": ["a.example"]}`,
			[]string{`/spec/input: invalid input schema: the arguments must be an object, but the schema's type is "array"`}},
		{"x", `{"description": "d", "url": "https://a.example/", "extract": {"path": "a..b"}, "timeout": "3m", "max_bytes": 5000000, "allow_hosts": ["a.example"]}`, []string{
			`/spec/extract: path: bad path: "a..b": a name is missing`,
			"/spec/timeout: must be a duration above 0 and at most 2m, such as 15s, not \"3m\"",
			"/spec/max_bytes: must be between 1 and 4194304 (4 MiB)",
		}},
	} {
		errs := hs.h.Check(context.Background(), &extension.Doc{Type: TypeName, Name: tc.name, Spec: json.RawMessage(tc.spec)})
		if got := strs(errs); !cmp.Equal(got, tc.want) {
			t.Errorf("%s %s:\n got %q\nwant %q", tc.name, tc.spec, got, tc.want)
		}
	}
}

func strs(errs []schema.Error) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.String())
	}
	return out
}

// A redirect to another host of allow_hosts does not carry the action's
// headers, which may hold its secrets.
func TestRedirectDropsSecretHeaders(t *testing.T) {
	other, seenOther := recorder(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("moved")) })
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/landing", http.StatusFound)
	})
	hs := newHarness(t, []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")})
	hs.env["KEY"] = "s3cret-value"
	otherHost := strings.TrimPrefix(other.URL, "http://")
	hs.mustActivate("go", `{"description": "d", "url": "$URL/start", "headers": {"X-Api-Key": "${env:KEY}"},
		"allow_hosts": ["$HOST", "`+otherHost+`"]}`, srv)
	if res := hs.call("go", `{}`); res.IsError || res.Output != "moved" {
		t.Fatalf("the redirect: %+v", res)
	}
	if got := (<-seenOther).header.Get("X-Api-Key"); got != "" {
		t.Fatalf("the other host was sent the secret header %q", got)
	}
}
