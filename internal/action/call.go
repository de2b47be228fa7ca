package action

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"agentd/internal/secret"
	"agentd/internal/tool"
)

// userAgent is what an action's requests say they come from, unless its
// headers say otherwise.
const userAgent = "agentd-action"

// errTimeout ends a call that took longer than its action's timeout.
var errTimeout = errors.New("action timed out")

// errorBody bounds what of an error response a tool error quotes.
const errorBody = 512

// actionTool is an action as a tool. It is a pointer, so that the
// registry tells one version from the next (tool.Registry.Replace).
type actionTool struct {
	name string
	c    *compiled
	h    *Handler
}

func (t *actionTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        t.name,
		Description: t.c.spec.Description,
		InputSchema: t.c.input,
		ReadOnly:    t.c.spec.ReadOnly,
		Idempotent:  t.c.spec.Idempotent,
		// It reaches the network: an agent's policy must allow it.
		Risky: true,
	}
}

// Call makes the request. Whatever it returns, output or error, has every
// secret the request carried replaced by its reference.
func (t *actionTool) Call(ctx context.Context, c *tool.Call) (tool.Result, error) {
	res, vals, err := t.call(ctx, c)
	if err != nil {
		return tool.Result{}, errors.New(secret.Redact(err.Error(), vals))
	}
	res.Output = secret.Redact(res.Output, vals)
	return res, nil
}

func (t *actionTool) call(ctx context.Context, c *tool.Call) (tool.Result, []secret.Value, error) {
	var args any
	if len(c.Args) > 0 {
		dec := json.NewDecoder(bytes.NewReader(c.Args))
		dec.UseNumber()
		if err := dec.Decode(&args); err != nil {
			return tool.Result{}, nil, fmt.Errorf("%s: arguments: %v", t.name, err)
		}
	}
	req, vals, err := t.request(ctx, args)
	if err != nil {
		return tool.Result{}, vals, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, t.c.timeout, errTimeout)
	defer cancel()
	resp, err := t.h.client.Do(req.WithContext(withHosts(ctx, t.c.hosts)))
	if err != nil {
		if errors.Is(context.Cause(ctx), errTimeout) {
			return tool.Result{}, vals, fmt.Errorf("%s: no answer from %s within %s", t.name, req.URL.Host, t.c.timeout)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is said once, below
		}
		return tool.Result{}, vals, fmt.Errorf("%s: %s %s: %w", t.name, req.Method, req.URL.Redacted(), err)
	}
	defer resp.Body.Close()
	res, err := t.response(resp)
	return res, vals, err
}

// request builds the request for the arguments args.
func (t *actionTool) request(ctx context.Context, args any) (*http.Request, []secret.Value, error) {
	if err := t.c.url.check(args); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", t.name, err)
	}
	var body io.Reader
	if t.c.body != nil {
		b, err := t.c.body.fill(args)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: body: %w", t.name, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, t.c.method, t.c.url.fill(args), body)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", t.name, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/*;q=0.9, */*;q=0.1")
	req.Header.Set("User-Agent", userAgent)
	var vals []secret.Value
	for _, h := range t.c.headers {
		v := h.value
		if h.secret {
			var vs []secret.Value
			if v, vs, err = t.h.secrets.Expand(h.value); err != nil {
				return nil, vals, fmt.Errorf("%s: header %s: %w", t.name, h.name, err)
			}
			vals = append(vals, vs...)
		}
		req.Header.Set(h.name, v)
	}
	return req, vals, nil
}

// response turns the answer into the result: an HTTP error status is a
// tool error with a short body; JSON goes through extract; other text is
// returned as it is, all of it at most max_bytes.
func (t *actionTool) response(resp *http.Response) (tool.Result, error) {
	limit := t.c.maxBytes
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return tool.Result{}, fmt.Errorf("%s: reading the answer: %w", t.name, err)
	}
	over := int64(len(data)) > limit
	if over {
		data = data[:limit]
	}
	if resp.StatusCode >= 400 {
		return tool.Result{}, fmt.Errorf("%s: HTTP %s: %s", t.name, resp.Status, short(data, errorBody))
	}
	if isJSON(resp.Header.Get("Content-Type"), data) && t.c.extract != nil {
		if over {
			return tool.Result{}, fmt.Errorf("%s: the answer is over max_bytes (%d bytes), so nothing can be extracted from it", t.name, limit)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return tool.Result{}, fmt.Errorf("%s: the answer is not valid JSON: %v", t.name, err)
		}
		out, err := t.c.extract.apply(v)
		if err != nil {
			return tool.Result{}, fmt.Errorf("%s: %w", t.name, err)
		}
		return tool.Result{Output: out}, nil
	}
	res := tool.Result{Output: validText(data)}
	if over {
		res.Omitted = 1 // at least: the rest was not read
		if resp.ContentLength > limit {
			res.Omitted = resp.ContentLength - limit
		}
	}
	if res.Output == "" {
		res.Output = "HTTP " + resp.Status + " (empty body)"
	}
	return res, nil
}

// isJSON reports whether a response is JSON: by its Content-Type, or, with
// none or a plain-text one (servers often label JSON so), by its first
// character.
func isJSON(contentType string, data []byte) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "" || mt == "text/plain" {
		d := bytes.TrimSpace(data)
		return len(d) > 0 && (d[0] == '{' || d[0] == '[')
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// short is at most n bytes of data as valid text on one line.
func short(data []byte, n int) string {
	s := strings.Join(strings.Fields(validText(data)), " ")
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// validText is data as UTF-8 text; a rune cut at the end is dropped.
func validText(data []byte) string {
	for i := 0; i < utf8.UTFMax-1 && len(data) > 0; i++ {
		if r, n := utf8.DecodeLastRune(data); r != utf8.RuneError || n != 1 {
			break
		}
		data = data[:len(data)-1]
	}
	return strings.ToValidUTF8(string(data), "\uFFFD")
}
