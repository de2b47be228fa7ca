package gateway

// What GET /v1/agents/{id} hides of a definition (values that may be
// secrets), and how PUT finds the placeholder written back.

import (
	"bytes"
	"maps"
	"net/url"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"agentd/internal/agent"
)

// Hidden stands in for a value GET /v1/agents/{id} does not show: an MCP
// server's env and header values and the credentials and query values of
// its URL. A PUT that still holds it is refused.
const Hidden = "<hidden>"

// redact returns a copy of d without the values that may be secrets.
func redact(d *agent.Definition) *agent.Definition {
	c := d.Clone()
	if d.MCPServers != nil {
		c.MCPServers = make(map[string]agent.MCPServer, len(d.MCPServers))
		for name, srv := range d.MCPServers {
			srv.Env = hideValues(srv.Env)
			srv.Headers = hideValues(srv.Headers)
			srv.URL = hideURL(srv.URL)
			// Arguments carry tokens as often as anything (--token X).
			srv.Args = hideList(srv.Args)
			c.MCPServers[name] = srv
		}
	}
	c.Model = redactModel(d.Model)
	if d.Bootstrap != nil {
		c.Bootstrap = make([]agent.BootstrapCall, len(d.Bootstrap))
		for i, b := range d.Bootstrap {
			b.Args = hideValues(b.Args)
			c.Bootstrap[i] = b
		}
	}
	return c
}

// redactModel hides a model's base URL credentials and query values, its
// extra provider parameters, and those of its fallbacks.
func redactModel(m agent.Model) agent.Model {
	m.BaseURL = hideURL(m.BaseURL)
	m.Params.Extra = hideValues(m.Params.Extra)
	if m.Fallbacks != nil {
		fs := make([]agent.Model, len(m.Fallbacks))
		for i, f := range m.Fallbacks {
			fs[i] = redactModel(f)
		}
		m.Fallbacks = fs
	}
	return m
}

func hideList(l []string) []string {
	if l == nil {
		return nil
	}
	out := make([]string, len(l))
	for i := range out {
		out[i] = Hidden
	}
	return out
}

func hideValues[V string | any](m map[string]V) map[string]V {
	if m == nil {
		return nil
	}
	var hidden V
	switch p := any(&hidden).(type) {
	case *string:
		*p = Hidden
	case *any:
		*p = Hidden
	}
	out := make(map[string]V, len(m))
	for k := range m {
		out[k] = hidden
	}
	return out
}

// hideURL hides a URL's user information and query values.
func hideURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Hidden
	}
	if u.User != nil {
		u.User = url.User(Hidden)
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			u.RawQuery = url.QueryEscape(Hidden)
		} else {
			for k, vs := range q {
				for i := range vs {
					vs[i] = Hidden
				}
				q[k] = vs
			}
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// hiddenFields names the places in an agent document that still hold
// Hidden, as a GET shows them: writing them back would replace the real
// values with the placeholder.
func hiddenFields(body []byte) []Problem {
	var doc struct {
		MCPServers map[string]struct {
			Env     map[string]any `yaml:"env"`
			Headers map[string]any `yaml:"headers"`
			URL     any            `yaml:"url"`
		} `yaml:"mcp_servers"`
	}
	if yaml.Unmarshal(body, &doc) != nil {
		return nil // not a document: PutFile says what is wrong
	}
	var out []Problem
	hint := "holds " + Hidden + ", which GET shows instead of the value; write the value (or name a variable in pass_env / headers_env)"
	for _, name := range slices.Sorted(maps.Keys(doc.MCPServers)) {
		srv := doc.MCPServers[name]
		for _, f := range []struct {
			field string
			m     map[string]any
		}{{"env", srv.Env}, {"headers", srv.Headers}} {
			for _, k := range slices.Sorted(maps.Keys(f.m)) {
				if v, ok := f.m[k].(string); ok && v == Hidden {
					out = append(out, Problem{Field: "mcp_servers." + name + "." + f.field + "." + k, Message: hint})
				}
			}
		}
		if raw, ok := srv.URL.(string); ok && urlHidden(raw) {
			out = append(out, Problem{Field: "mcp_servers." + name + ".url", Message: hint})
		}
	}
	// Anywhere else GET hides values (arguments, base URLs, extra
	// parameters, bootstrap arguments).
	if len(out) == 0 && (bytes.Contains(body, []byte(Hidden)) || bytes.Contains(body, []byte(url.QueryEscape(Hidden)))) {
		out = append(out, Problem{Message: "the document " + hint})
	}
	return out
}

func urlHidden(raw string) bool {
	if strings.Contains(raw, Hidden) {
		return true
	}
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	if u.User != nil && u.User.Username() == Hidden {
		return true
	}
	q, _ := url.ParseQuery(u.RawQuery)
	for _, vs := range q {
		if slices.Contains(vs, Hidden) {
			return true
		}
	}
	return false
}
