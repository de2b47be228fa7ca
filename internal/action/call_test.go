package action

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"agentd/internal/secret"
)

// A GET fills the path and the query from the arguments, each escaped for
// its part: a value cannot add a path segment, a parameter or a fragment.
func TestGetEscapesArguments(t *testing.T) {
	srv, reqs := recorder(t, jsonAnswer(`{"ok":true}`))
	hs := newHarness(t, local)
	hs.mustActivate("repo_issues", `{
		"description": "Lists a repository's issues.",
		"url": "$URL/repos/{{owner}}/{{repo}}/issues?state={{state}}&pretty",
		"query": {"q": "{{q}}", "per_page": "{{n}}", "label": "{{label}}"},
		"input": {"type": "object", "properties": {
			"owner": {"type": "string"}, "repo": {"type": "string"}, "state": {"type": "string"},
			"q": {"type": "string"}, "n": {"type": "integer"}, "label": {"type": "string"}},
			"required": ["owner", "repo"]},
		"read_only": true,
		"allow_hosts": ["$HOST"]
	}`, srv)
	res := hs.call("repo_issues", `{"owner": "a/../b", "repo": "x?y#z", "state": "open&admin=1", "q": "50% off\nnow", "n": 30}`)
	if res.IsError || res.Output != `{"ok":true}` {
		t.Fatalf("call: %+v", res)
	}
	got := <-reqs
	if got.method != "GET" || got.path != "/repos/a/../b/x?y#z/issues" || got.rawPath != "/repos/a%2F..%2Fb/x%3Fy%23z/issues" {
		t.Errorf("path %q (raw %q)", got.path, got.rawPath)
	}
	// label is absent: its parameter is left out.
	if want := "state=open%26admin%3D1&pretty&per_page=30&q=50%25+off%0Anow"; got.query != want {
		t.Errorf("query %q, want %q", got.query, want)
	}
	if got.header.Get("User-Agent") != userAgent {
		t.Errorf("User-Agent %q", got.header.Get("User-Agent"))
	}
	// A path segment that would read as a step up, or a missing one, is refused.
	for _, args := range []string{`{"owner": "..", "repo": "r"}`, `{"owner": "", "repo": "r"}`} {
		if res := hs.call("repo_issues", args); !res.IsError || !strings.Contains(res.Output, "path segment cannot be") {
			t.Errorf("%s: %+v", args, res)
		}
	}
	if res := hs.call("repo_issues", `{"repo": "r"}`); !res.IsError || !strings.Contains(res.Output, "invalid arguments") {
		t.Errorf("a missing required argument: %+v", res)
	}
}

// A POST body is JSON: a string that is exactly one reference takes the
// argument's value with its type, a longer string its text.
func TestPostBodyTyped(t *testing.T) {
	srv, reqs := recorder(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte("created"))
	})
	hs := newHarness(t, local)
	hs.mustActivate("create", `{
		"description": "Creates a thing.",
		"method": "POST",
		"url": "$URL/things",
		"body": {"title": "{{title}}", "count": "{{count}}", "tags": ["{{tags}}", "{{missing}}"], "meta": {"ok": "{{ok}}", "note": "by {{who.name}} (#{{count}})", "gone": "{{missing}}"}, "fixed": 1.50},
		"input": {"type": "object", "properties": {"title": {"type": "string"}, "count": {"type": "integer"}, "tags": {"type": "array"}, "ok": {"type": "boolean"}, "who": {"type": "object"}, "missing": {"type": "string"}}},
		"allow_hosts": ["$HOST"]
	}`, srv)
	res := hs.call("create", `{"title": "a \"quoted\" title", "count": 12345678901234567890, "tags": ["x", 2], "ok": false, "who": {"name": "ann"}}`)
	if res.IsError || res.Output != "created" {
		t.Fatalf("call: %+v", res)
	}
	got := <-reqs
	if got.method != "POST" || got.header.Get("Content-Type") != "application/json" {
		t.Errorf("%s with Content-Type %q", got.method, got.header.Get("Content-Type"))
	}
	want := `{"count":12345678901234567890,"fixed":1.50,"meta":{"note":"by ann (#12345678901234567890)","ok":false},"tags":[["x",2],null],"title":"a \"quoted\" title"}`
	if got.body != want {
		t.Errorf("body\n got %s\nwant %s", got.body, want)
	}
}

// Headers take ${env:NAME} and ${secret:NAME} at each call; the secret
// never shows in what the model sees, even when the server echoes it,
// nor in an error.
func TestHeadersWithSecrets(t *testing.T) {
	const token, key = "tok-3f9a0c8e7d", "key-77aa01"
	srv, reqs := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fail" {
			http.Error(w, "bad credentials: "+r.Header.Get("Authorization"), http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"auth": r.Header.Get("Authorization"), "key": r.Header.Get("X-Key")})
	})
	hs := newHarness(t, local)
	hs.env["API_KEY"] = key
	if err := secret.NewFile(hs.dir).Set("TOKEN", token); err != nil {
		t.Fatal(err)
	}
	spec := `{
		"description": "Echoes.",
		"url": "$URL/{{p}}",
		"headers": {"Authorization": "Bearer ${secret:TOKEN}", "X-Key": "${env:API_KEY}", "X-Literal": "$${not:a_ref}"},
		"input": {"type": "object", "properties": {"p": {"type": "string"}}},
		"allow_hosts": ["$HOST"]
	}`
	hs.mustActivate("echo", spec, srv)
	res := hs.call("echo", `{"p": "ok"}`)
	got := <-reqs
	if got.header.Get("Authorization") != "Bearer "+token || got.header.Get("X-Key") != key || got.header.Get("X-Literal") != "${not:a_ref}" {
		t.Fatalf("headers sent: %v", got.header)
	}
	if res.IsError || strings.Contains(res.Output, token) || strings.Contains(res.Output, key) ||
		!strings.Contains(res.Output, "Bearer ${secret:TOKEN}") || !strings.Contains(res.Output, "${env:API_KEY}") {
		t.Errorf("result shows a secret or lost its reference: %+v", res)
	}
	res = hs.call("echo", `{"p": "fail"}`)
	<-reqs
	if !res.IsError || strings.Contains(res.Output, token) || !strings.Contains(res.Output, "401") || !strings.Contains(res.Output, "${secret:TOKEN}") {
		t.Errorf("error result: %+v", res)
	}
	// A secret removed meanwhile is an error naming the reference.
	if _, err := secret.NewFile(hs.dir).Remove("TOKEN"); err != nil {
		t.Fatal(err)
	}
	if res := hs.call("echo", `{"p": "ok"}`); !res.IsError || !strings.Contains(res.Output, "secret not set: ${secret:TOKEN}") {
		t.Errorf("a missing secret: %+v", res)
	}
}

// extract takes a part of a JSON answer by path or fills a template with
// it; a non-JSON answer is returned as text.
func TestExtract(t *testing.T) {
	body := `{"data": {"items": [{"name": "agentd", "stars": 42, "tags": ["go"]}], "total": 1}}`
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/text" {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("plain text"))
			return
		}
		if r.URL.Path == "/list" {
			jsonAnswer(`[{"name": "first"}]`)(w, r)
			return
		}
		if r.URL.Path == "/mislabelled" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte(body))
			return
		}
		jsonAnswer(body)(w, r)
	})
	hs := newHarness(t, local)
	for _, tc := range []struct{ extract, path, want string }{
		{`{"path": "data.items[0].name"}`, "", "agentd"},
		{`{"path": "$.data.items[0].stars"}`, "", "42"},
		{`{"path": "data.items[0].tags"}`, "", "[\n  \"go\"\n]"},
		{`{"template": "{{data.items[0].name}} has {{ data.items[0].stars }} stars{{nope}}"}`, "", "agentd has 42 stars"},
		{`{"path": "data.items[0].name"}`, "/text", "plain text"},
		{`{"template": "{{[0].name}}"}`, "/list", "first"},
		{`{"path": "data.total"}`, "/mislabelled", "1"},
	} {
		hs.mustActivate("get", `{"description": "d", "url": "$URL`+tc.path+`", "extract": `+tc.extract+`, "allow_hosts": ["$HOST"]}`, srv)
		if res := hs.call("get", `{}`); res.IsError || res.Output != tc.want {
			t.Errorf("extract %s: %+v, want %q", tc.extract, res, tc.want)
		}
	}
	hs.mustActivate("get", `{"description": "d", "url": "$URL", "extract": {"path": "data.items[3]"}, "allow_hosts": ["$HOST"]}`, srv)
	if res := hs.call("get", `{}`); !res.IsError || !strings.Contains(res.Output, "nothing at data.items[3]") {
		t.Errorf("a path to nothing: %+v", res)
	}
}

// An answer is read up to max_bytes: text is cut there (and says so), JSON
// to extract from is an error.
func TestMaxBytes(t *testing.T) {
	big := strings.Repeat("é", 100) // 200 bytes
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/json" {
			jsonAnswer(`{"a":"`+big+`"}`)(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(big))
	})
	hs := newHarness(t, local)
	hs.mustActivate("text", `{"description": "d", "url": "$URL/text", "max_bytes": 51, "allow_hosts": ["$HOST"]}`, srv)
	out := hs.run("text", `{}`)
	if out.Result.IsError || !strings.HasPrefix(out.Result.Output, strings.Repeat("é", 25)+"\n") || !out.Truncated {
		t.Errorf("text over max_bytes: %+v", out)
	}
	hs.mustActivate("json", `{"description": "d", "url": "$URL/json", "max_bytes": 51, "extract": {"path": "a"}, "allow_hosts": ["$HOST"]}`, srv)
	if res := hs.call("json", `{}`); !res.IsError || !strings.Contains(res.Output, "over max_bytes (51 bytes)") {
		t.Errorf("JSON over max_bytes: %+v", res)
	}
}

// An HTTP error status is a tool error with the status and the start of
// the body.
func TestHTTPErrors(t *testing.T) {
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/404":
			http.Error(w, `{"message": "Not Found"}`, http.StatusNotFound)
		default:
			http.Error(w, strings.Repeat("x", 5000), http.StatusBadGateway)
		}
	})
	hs := newHarness(t, local)
	hs.mustActivate("get", `{"description": "d", "url": "$URL/{{p}}", "input": {"type":"object","properties":{"p":{"type":"string"}}}, "allow_hosts": ["$HOST"]}`, srv)
	if res := hs.call("get", `{"p": "404"}`); !res.IsError || res.Output != `get: HTTP 404 Not Found: {"message": "Not Found"}` {
		t.Errorf("404: %+v", res)
	}
	if res := hs.call("get", `{"p": "502"}`); !res.IsError || !strings.HasPrefix(res.Output, "get: HTTP 502 Bad Gateway: xxx") || len(res.Output) > 600 {
		t.Errorf("502: %d bytes: %.100s", len(res.Output), res.Output)
	}
}

// A call that takes longer than the action's timeout ends with an error
// that says so.
func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv, _ := recorder(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	hs := newHarness(t, local)
	hs.mustActivate("slow", `{"description": "d", "url": "$URL", "timeout": "50ms", "allow_hosts": ["$HOST"]}`, srv)
	if res := hs.call("slow", `{}`); !res.IsError || !strings.Contains(res.Output, "no answer from") || !strings.Contains(res.Output, "within 50ms") {
		t.Errorf("timeout: %+v", res)
	}
}
