package skill

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"agentd/internal/agent"
)

const (
	maxSkillFile   = 1 << 20 // bytes of a SKILL.md
	maxDescription = 1024    // characters of a description
	// fmOffset turns a line of the front matter into a line of the file:
	// the front matter starts on line 2, after the opening "---".
	fmOffset = 1
)

var (
	nameRE      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9-]{1,64}$`) })
	envRE       = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	yamlLineRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`) })
	atLineRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\bat line (\d+)`) })
	transports  = []string{"", agent.TransportStdio, agent.TransportHTTP, agent.TransportSSE}
	toolKinds   = []string{"", "model", "context", "action", "postprocess", "server"}
	serverField = yamlFields(reflect.TypeFor[agent.MCPServer]())
)

// parser collects the problems found in one SKILL.md.
type parser struct {
	file string
	errs []error
}

func (p *parser) add(line int, format string, args ...any) {
	p.errs = append(p.errs, &ParseError{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// yamlError records err, from the YAML library, at the line it names
// (made a file line) or else at line.
func (p *parser) yamlError(err error, line int, field string) {
	prefix := ""
	if field != "" {
		prefix = field + ": "
	}
	var te *yaml.TypeError
	msgs := []string{err.Error()}
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	for _, m := range msgs {
		m = strings.TrimPrefix(strings.TrimSpace(m), "yaml: ")
		at := line
		if sm := yamlLineRE().FindStringSubmatch(m); sm != nil {
			if n, err := strconv.Atoi(sm[1]); err == nil {
				at = n + fmOffset
				if strings.HasPrefix(sm[2], "did not find expected") {
					// The YAML parser (unlike its scanner) counts
					// these lines from 0.
					at++
				}
			}
			m = sm[2]
		}
		m = atLineRE().ReplaceAllStringFunc(m, func(s string) string {
			n, err := strconv.Atoi(strings.TrimPrefix(s, "at line "))
			if err != nil {
				return s
			}
			return "at line " + strconv.Itoa(n+fmOffset)
		})
		p.add(at, "%s%s", prefix, m)
	}
}

// parse reads a SKILL.md file: its front matter into a Skill (without Dir
// and availability), and the markdown after it. file names the file in
// errors; folder is the name of its folder, which the skill's name must
// equal. Every problem found is reported as a *ParseError, joined.
func parse(file, folder string, data []byte) (Skill, string, error) {
	p := &parser{file: file}
	var sk Skill
	fm, body, delim := split(data)
	if !delim.opened {
		p.add(1, `missing front matter: the file must start with a line "---", then YAML fields (name, description), then another "---" line`)
		return sk, "", errors.Join(p.errs...)
	}
	if !delim.closed {
		p.add(1, `front matter has no closing "---" line`)
		return sk, "", errors.Join(p.errs...)
	}

	var root yaml.Node
	if err := yaml.Unmarshal(fm, &root); err != nil {
		// Without a line, the YAML parser means its first one.
		p.yamlError(err, 1+fmOffset, "")
		return sk, "", errors.Join(p.errs...)
	}
	n := &root
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	var nameLine, descLine int
	var name, desc string
	var nameOK, descOK bool
	switch {
	case n.Kind == 0 || isNull(n):
		// empty front matter: reported below as missing fields
	case n.Kind != yaml.MappingNode:
		p.add(n.Line+fmOffset, "front matter must be YAML fields (name: ..., description: ...), got %s", describe(n))
		return sk, "", errors.Join(p.errs...)
	default:
		firstAt := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], resolve(n.Content[i+1])
			line := k.Line + fmOffset
			if k.Kind != yaml.ScalarNode {
				p.add(line, "field names must be plain strings, got %s", describe(k))
				continue
			}
			key := k.Value
			if at, dup := firstAt[key]; dup {
				p.add(line, "field %s repeated (first set on line %d)", key, at)
				continue
			}
			firstAt[key] = line
			switch key {
			case "name":
				nameLine = line
				name, nameOK = p.scalar(v, line, key)
			case "description":
				descLine = line
				desc, descOK = p.scalar(v, line, key)
			case "requires":
				sk.Requires = p.requires(v, line)
			case "mcp_servers":
				sk.MCPServers = p.servers(v, line)
			case "metadata":
				if isNull(v) {
					continue
				}
				if v.Kind != yaml.MappingNode {
					p.add(line, "metadata must be a mapping, got %s", describe(v))
					continue
				}
				if err := v.Decode(&sk.Metadata); err != nil {
					p.yamlError(err, line, key)
				}
			default:
				var val any
				if err := v.Decode(&val); err != nil {
					p.yamlError(err, line, key)
					continue
				}
				if sk.Extra == nil {
					sk.Extra = map[string]any{}
				}
				sk.Extra[key] = val
			}
		}
	}

	switch {
	case nameLine == 0:
		p.add(1, "missing required field name (the skill's name, equal to its folder's name %q)", folder)
	case !nameOK:
		// reported by scalar
	case name == "":
		p.add(nameLine, "name must not be empty")
	case !nameRE().MatchString(name):
		p.add(nameLine, "invalid name %q: want 1 to 64 lowercase letters, digits and '-'", name)
	case name != folder:
		p.add(nameLine, "name %q does not match the folder name %q", name, folder)
	}
	sk.Name = name
	desc = strings.TrimSpace(desc)
	switch {
	case descLine == 0:
		p.add(1, "missing required field description (what the skill does and when to use it)")
	case !descOK:
		// reported by scalar
	case desc == "":
		p.add(descLine, "description must not be empty")
	case utf8.RuneCountInString(desc) > maxDescription:
		p.add(descLine, "description is %d characters long; the limit is %d", utf8.RuneCountInString(desc), maxDescription)
	}
	sk.Description = desc
	if len(p.errs) > 0 {
		return sk, "", errors.Join(p.errs...)
	}
	return sk, string(body), nil
}

// delimiters says which of the front matter's "---" lines were found.
type delimiters struct{ opened, closed bool }

// split cuts data into its front matter (between the first line, "---",
// and the next "---" line) and the body after it.
func split(data []byte) (fm, body []byte, d delimiters) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	line, rest, _ := bytes.Cut(data, []byte("\n"))
	if !isDelimiter(line) {
		return nil, nil, d
	}
	d.opened = true
	start := len(data) - len(rest)
	for pos := start; pos < len(data); {
		line, _, found := bytes.Cut(data[pos:], []byte("\n"))
		next := pos + len(line) + 1
		if isDelimiter(line) {
			d.closed = true
			if !found {
				next = len(data)
			}
			return data[start:pos], data[next:], d
		}
		if !found {
			break
		}
		pos = next
	}
	return nil, nil, d
}

func isDelimiter(line []byte) bool {
	return string(bytes.TrimRight(line, " \t\r")) == "---"
}

// scalar returns v's text, reporting anything but a non-null scalar.
func (p *parser) scalar(v *yaml.Node, line int, field string) (string, bool) {
	if v.Kind != yaml.ScalarNode || isNull(v) {
		p.add(line, "%s must be a string, got %s", field, describe(v))
		return "", false
	}
	return v.Value, true
}

// requires reads the requires field.
func (p *parser) requires(v *yaml.Node, line int) Requires {
	var r Requires
	if isNull(v) {
		return r
	}
	if v.Kind != yaml.MappingNode {
		p.add(line, "requires must be a mapping with bins and env lists, got %s", describe(v))
		return r
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], resolve(v.Content[i+1])
		kl := k.Line + fmOffset
		switch k.Value {
		case "bins":
			r.Bins = p.stringList(val, kl, "requires.bins", "program names, such as [ffmpeg]", nil)
		case "env":
			r.Env = p.stringList(val, kl, "requires.env", "environment variable names, such as [GITHUB_TOKEN]", envRE())
		default:
			p.add(kl, "requires: unknown field %q (want bins or env)", k.Value)
		}
	}
	return r
}

// stringList reads a list of non-empty strings, each matching re if set.
func (p *parser) stringList(v *yaml.Node, line int, field, want string, re *regexp.Regexp) []string {
	if isNull(v) {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		p.add(line, "%s must be a list of %s, got %s", field, want, describe(v))
		return nil
	}
	var out []string
	for i, item := range v.Content {
		item = resolve(item)
		il := item.Line + fmOffset
		if item.Kind != yaml.ScalarNode || isNull(item) || strings.TrimSpace(item.Value) == "" {
			p.add(il, "%s[%d] must be a non-empty string, got %s", field, i, describe(item))
			continue
		}
		if re != nil && !re.MatchString(item.Value) {
			p.add(il, "%s[%d]: %q is not valid: want %s", field, i, item.Value, want)
			continue
		}
		out = append(out, item.Value)
	}
	return out
}

// servers reads the mcp_servers field into agent.MCPServer values.
func (p *parser) servers(v *yaml.Node, line int) map[string]agent.MCPServer {
	if isNull(v) {
		return nil
	}
	if v.Kind != yaml.MappingNode {
		p.add(line, "mcp_servers must be a mapping of server names to servers, got %s", describe(v))
		return nil
	}
	out := map[string]agent.MCPServer{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, sv := v.Content[i], resolve(v.Content[i+1])
		kl := k.Line + fmOffset
		name := k.Value
		field := "mcp_servers." + name
		if k.Kind != yaml.ScalarNode || !agent.ValidServerName(name) {
			p.add(kl, "mcp_servers: invalid server name %q: want 1 to 32 letters, digits, '-' or single '_'", name)
			continue
		}
		if _, dup := out[name]; dup {
			p.add(kl, "mcp_servers: server %s repeated", name)
			continue
		}
		if sv.Kind != yaml.MappingNode {
			p.add(kl, "%s must be a mapping (command and args, or url), got %s", field, describe(sv))
			continue
		}
		lines := map[string]int{}
		bad := false
		for j := 0; j+1 < len(sv.Content); j += 2 {
			fk := sv.Content[j]
			lines[fk.Value] = fk.Line + fmOffset
			if !serverField[fk.Value] {
				p.add(fk.Line+fmOffset, "%s: unknown field %q (want one of %s)", field, fk.Value, strings.Join(sortedKeys(serverField), ", "))
				bad = true
			}
		}
		if bad {
			continue
		}
		var srv agent.MCPServer
		if err := sv.Decode(&srv); err != nil {
			p.yamlError(err, kl, field)
			continue
		}
		at := func(f string) int {
			if l, ok := lines[f]; ok {
				return l
			}
			return kl
		}
		if !slices.Contains(transports, srv.Transport) {
			p.add(at("transport"), "%s.transport: unknown transport %q (want stdio, http or sse)", field, srv.Transport)
		}
		switch t := srv.EffectiveTransport(); {
		case t == "":
			p.add(kl, "%s: needs a command (a local server) or a url (a remote one)", field)
		case t == agent.TransportStdio && srv.Command == "":
			p.add(at("transport"), "%s.command: required for a stdio server", field)
		case t == agent.TransportStdio && srv.URL != "":
			p.add(at("url"), "%s.url: a stdio server has a command, not a url", field)
		case t != agent.TransportStdio && srv.URL == "":
			p.add(at("transport"), "%s.url: required for an %s server", field, t)
		case t != agent.TransportStdio && srv.Command != "":
			p.add(at("command"), "%s.command: an %s server has a url, not a command", field, t)
		}
		if srv.URL != "" {
			if u, err := url.Parse(srv.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				p.add(at("url"), "%s.url: must be an http:// or https:// URL, got %q", field, srv.URL)
			}
		}
		if !slices.Contains(toolKinds, srv.Kind) {
			p.add(at("kind"), "%s.kind: unknown kind %q (want model, context, action, postprocess or server)", field, srv.Kind)
		}
		for _, tk := range sortedKeys(srv.Kinds) {
			if k := srv.Kinds[tk]; k == "" || !slices.Contains(toolKinds, k) {
				p.add(at("kinds"), "%s.kinds.%s: unknown kind %q (want model, context, action, postprocess or server)", field, tk, k)
			}
		}
		out[name] = srv
	}
	return out
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// describe names the kind of a YAML node for an error message.
func describe(n *yaml.Node) string {
	switch {
	case isNull(n):
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.AliasNode:
		return "an alias"
	case n.Kind == yaml.ScalarNode && n.Tag == "!!str":
		return fmt.Sprintf("the string %q", truncate(n.Value, 40))
	case n.Kind == yaml.ScalarNode:
		return fmt.Sprintf("%s %s", strings.TrimPrefix(n.Tag, "!!"), truncate(n.Value, 40))
	}
	return "an empty value"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// yamlFields returns the YAML names of t's fields.
func yamlFields(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			out[name] = true
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
