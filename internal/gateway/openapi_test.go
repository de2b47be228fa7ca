package gateway_test

import (
	"fmt"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"agentd/internal/agent"
	"agentd/internal/agentsys"
	"agentd/internal/command"
	"agentd/internal/contexts"
	"agentd/internal/engine"
	"agentd/internal/event"
	"agentd/internal/extension"
	"agentd/internal/gateway"
	"agentd/internal/gateway/openaiapi"
	"agentd/internal/identity"
	"agentd/internal/job"
	"agentd/internal/mcp"
	"agentd/internal/memory"
	"agentd/internal/metrics"
	"agentd/internal/permit"
	"agentd/internal/runtime"
	"agentd/internal/skill"
	"agentd/internal/store/sqlite"
	"agentd/internal/tool"
	"agentd/internal/webext"
)

// openAPIFile is the API's description, kept in step with the routes by
// the tests below.
const openAPIFile = "../../docs/openapi.yaml"

func loadOpenAPI(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(openAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", openAPIFile, err)
	}
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		t.Fatalf("%s: openapi %q, want 3.1.x", openAPIFile, v)
	}
	return doc
}

// noSkills is a Skills that has none.
type noSkills struct{}

func (noSkills) Skills() *skill.Set { return nil }

// fullServer is a Server with every optional part set, so that it serves
// every route it can. The parts are never called: only the routes they
// add are read.
func fullServer(t *testing.T) *gateway.Server {
	h := http.NotFoundHandler()
	o := gateway.Options{
		Runtime: (*runtime.Runtime)(nil), Sessions: (*sqlite.Store)(nil), Agents: (*agent.Registry)(nil),
		Lifecycle: (*runtime.Runtime)(nil), Permits: (*permit.Broker)(nil), Grants: (*sqlite.Store)(nil), MCP: (*mcp.Manager)(nil),
		Keys: (*identity.Keyring)(nil), Skills: noSkills{}, MCPHandler: h, History: (*sqlite.Store)(nil),
		Memory: (*memory.Store)(nil), Stream: h, OpenAI: h, Console: h,
		Ready: storeReady{}, Metrics: (*metrics.Collector)(nil), Usage: (*sqlite.Store)(nil), Nodes: (*sqlite.Store)(nil), AgentFiles: (*agent.Registry)(nil),
		Commands: (*command.Router)(nil), Contexts: (*contexts.Contexts)(nil), Jobs: (*job.Runner)(nil), JobRuns: (*sqlite.Store)(nil), JobTimes: (*job.Scheduler)(nil),
		Extensions: (*extension.Manager)(nil), DynamicAgents: (*agentsys.System)(nil),
		Connectors: &fakeConnectors{}, Pairings: &fakePairings{},
		Widgets: (*webext.Widgets)(nil), Artifacts: (*webext.Artifacts)(nil), Apps: (*webext.Apps)(nil),
	}
	// A part added to Options must be set here too, or its routes would
	// escape the check.
	v := reflect.ValueOf(o)
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Interface && f.IsNil() {
			t.Fatalf("fullServer: set Options.%s", v.Type().Field(i).Name)
		}
	}
	return gateway.New(&o)
}

// The methods of an OpenAPI path item.
var openAPIMethods = []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}

// TestOpenAPIDescribesEveryRoute checks that docs/openapi.yaml describes
// exactly the routes the API serves, in both directions.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc := loadOpenAPI(t)
	served := map[string]bool{}
	for _, rt := range fullServer(t).Routes() {
		method, path, ok := strings.Cut(rt.Pattern, " ")
		switch {
		case rt.Part == "Console":
			// The web console's static files are not API routes.
			continue
		case !ok:
			// A route that answers every method: agentd as an MCP server,
			// whose streamable HTTP transport uses POST, GET and DELETE.
			if rt.Part != "MCPHandler" {
				t.Errorf("route %q serves every method: describe which it answers and list them here", rt.Pattern)
				continue
			}
			for _, m := range []string{"POST", "GET", "DELETE"} {
				served[m+" "+rt.Pattern] = true
			}
			continue
		}
		served[method+" "+path] = true
	}

	described := map[string]bool{}
	paths, _ := doc["paths"].(map[string]any)
	for path, item := range paths {
		ops, _ := item.(map[string]any)
		for _, m := range openAPIMethods {
			if _, ok := ops[m]; ok {
				described[strings.ToUpper(m)+" "+path] = true
			}
		}
	}
	var missing, extra []string
	for r := range served {
		if !described[r] {
			missing = append(missing, r)
		}
	}
	for r := range described {
		if !served[r] {
			extra = append(extra, r)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("served but not in %s:\n  %s", openAPIFile, strings.Join(missing, "\n  "))
	}
	if len(extra) > 0 {
		t.Errorf("in %s but not served:\n  %s", openAPIFile, strings.Join(extra, "\n  "))
	}
}

var pathParamRE = regexp.MustCompile(`\{([^}]+)\}`)

// TestOpenAPIIsConsistent checks what a reader of the file relies on:
// every $ref resolves, every path parameter is declared (and every
// declared one is in the path), operation ids are unique, every operation
// answers something, and required properties exist.
func TestOpenAPIIsConsistent(t *testing.T) {
	doc := loadOpenAPI(t)
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				if _, err := resolveRef(doc, ref); err != nil {
					t.Errorf("%s: %v", at, err)
				}
			}
			if req, ok := x["required"].([]any); ok {
				if props, ok := x["properties"].(map[string]any); ok {
					for _, r := range req {
						if _, ok := props[r.(string)]; !ok {
							t.Errorf("%s: required %v is not a property", at, r)
						}
					}
				}
			}
			for k, c := range x {
				walk(c, at+"/"+k)
			}
		case []any:
			for i, c := range x {
				walk(c, fmt.Sprintf("%s/%d", at, i))
			}
		}
	}
	walk(doc, "#")

	ids := map[string]string{}
	paths, _ := doc["paths"].(map[string]any)
	for path, item := range paths {
		ops, _ := item.(map[string]any)
		inPath := map[string]bool{}
		for _, m := range pathParamRE.FindAllStringSubmatch(path, -1) {
			inPath[m[1]] = true
		}
		common := pathParams(t, doc, ops["parameters"])
		for _, m := range openAPIMethods {
			op, ok := ops[m].(map[string]any)
			if !ok {
				continue
			}
			where := strings.ToUpper(m) + " " + path
			id, _ := op["operationId"].(string)
			if id == "" {
				t.Errorf("%s: no operationId", where)
			} else if prev, dup := ids[id]; dup {
				t.Errorf("%s: operationId %s is also %s's", where, id, prev)
			}
			ids[id] = where
			if rs, _ := op["responses"].(map[string]any); len(rs) == 0 {
				t.Errorf("%s: no responses", where)
			}
			declared := map[string]bool{}
			for n := range common {
				declared[n] = true
			}
			for n := range pathParams(t, doc, op["parameters"]) {
				declared[n] = true
			}
			for n := range inPath {
				if !declared[n] {
					t.Errorf("%s: path parameter {%s} is not declared", where, n)
				}
			}
			for n := range declared {
				if !inPath[n] {
					t.Errorf("%s: path parameter %s is not in the path", where, n)
				}
			}
		}
	}
}

// pathParams returns the names of the path parameters in a parameters list.
func pathParams(t *testing.T, doc map[string]any, v any) map[string]bool {
	out := map[string]bool{}
	list, _ := v.([]any)
	for _, p := range list {
		m, _ := p.(map[string]any)
		if ref, ok := m["$ref"].(string); ok {
			r, err := resolveRef(doc, ref)
			if err != nil {
				continue // reported by the $ref check
			}
			m, _ = r.(map[string]any)
		}
		if m["in"] == "path" {
			if m["required"] != true {
				t.Errorf("path parameter %v is not required", m["name"])
			}
			out[m["name"].(string)] = true
		}
	}
	return out
}

func resolveRef(doc map[string]any, ref string) (any, error) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, fmt.Errorf("$ref %q is not local", ref)
	}
	var cur any = doc
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
		if cur, ok = m[part]; !ok {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
	}
	return cur, nil
}

// TestOpenAPISchemasMatchTypes checks that each schema of a body has the
// properties the Go type it describes writes or reads, no more, no fewer.
func TestOpenAPISchemasMatchTypes(t *testing.T) {
	doc := loadOpenAPI(t)
	schemas, _ := doc["components"].(map[string]any)["schemas"].(map[string]any)
	types := map[string]reflect.Type{
		"Error":                reflect.TypeFor[gateway.Error](),
		"ReadyResponse":        reflect.TypeFor[gateway.ReadyResponse](),
		"AgentInfo":            reflect.TypeFor[gateway.AgentInfo](),
		"AgentDetail":          reflect.TypeFor[gateway.AgentDetail](),
		"Problem":              reflect.TypeFor[gateway.Problem](),
		"AgentError":           reflect.TypeFor[gateway.AgentError](),
		"AgentState":           reflect.TypeFor[gateway.AgentState](),
		"ReloadResponse":       reflect.TypeFor[gateway.ReloadResponse](),
		"AgentTree":            reflect.TypeFor[gateway.AgentTree](),
		"AgentNode":            reflect.TypeFor[gateway.AgentNode](),
		"AgentInstance":        reflect.TypeFor[agentsys.Status](),
		"StartAgentRequest":    reflect.TypeFor[gateway.StartAgentRequest](),
		"StartAgentResponse":   reflect.TypeFor[gateway.StartAgentResponse](),
		"ContactRequest":       reflect.TypeFor[gateway.ContactRequest](),
		"ContactResponse":      reflect.TypeFor[gateway.ContactResponse](),
		"StopAgentRequest":     reflect.TypeFor[gateway.StopAgentRequest](),
		"StopAgentResponse":    reflect.TypeFor[gateway.StopAgentResponse](),
		"Model":                reflect.TypeFor[agent.Model](),
		"ModelParams":          reflect.TypeFor[agent.ModelParams](),
		"ToolPolicy":           reflect.TypeFor[agent.ToolPolicy](),
		"Budgets":              reflect.TypeFor[agent.Budgets](),
		"AgentMemory":          reflect.TypeFor[agent.Memory](),
		"Inbox":                reflect.TypeFor[agent.Inbox](),
		"BootstrapCall":        reflect.TypeFor[agent.BootstrapCall](),
		"MCPServer":            reflect.TypeFor[agent.MCPServer](),
		"SessionInfo":          reflect.TypeFor[gateway.SessionInfo](),
		"Event":                reflect.TypeFor[event.Event](),
		"EventsPage":           reflect.TypeFor[gateway.EventsPage](),
		"MessageRequest":       reflect.TypeFor[gateway.MessageRequest](),
		"Receipt":              reflect.TypeFor[runtime.Receipt](),
		"TurnEnd":              reflect.TypeFor[event.TurnEndData](),
		"MessageResponse":      reflect.TypeFor[gateway.MessageResponse](),
		"StreamLine":           reflect.TypeFor[gateway.StreamLine](),
		"CompactRequest":       reflect.TypeFor[gateway.CompactRequest](),
		"LifecycleOptions":     reflect.TypeFor[engine.LifecycleOptions](),
		"LifecycleRequest":     reflect.TypeFor[gateway.LifecycleRequest](),
		"CommandList":          reflect.TypeFor[gateway.CommandList](),
		"CommandInfo":          reflect.TypeFor[command.Info](),
		"JobRunRequest":        reflect.TypeFor[gateway.JobRunRequest](),
		"JobRun":               reflect.TypeFor[job.Result](),
		"JobList":              reflect.TypeFor[gateway.JobList](),
		"JobInfo":              reflect.TypeFor[gateway.JobInfo](),
		"JobRunsPage":          reflect.TypeFor[gateway.JobRunsPage](),
		"LifecycleLogEntry":    reflect.TypeFor[engine.LogEntry](),
		"LifecycleObject":      reflect.TypeFor[engine.Object](),
		"LifecycleApproval":    reflect.TypeFor[engine.ApprovalView](),
		"LifecycleResponse":    reflect.TypeFor[gateway.LifecycleResponse](),
		"KeyInfo":              reflect.TypeFor[gateway.KeyInfo](),
		"KeyRequest":           reflect.TypeFor[gateway.KeyRequest](),
		"ApprovalRequest":      reflect.TypeFor[permit.Request](),
		"ResolveRequest":       reflect.TypeFor[gateway.ResolveRequest](),
		"Decision":             reflect.TypeFor[permit.Decision](),
		"ApprovalCard":         reflect.TypeFor[tool.Card](),
		"GrantInfo":            reflect.TypeFor[gateway.GrantInfo](),
		"ServerInfo":           reflect.TypeFor[gateway.ServerInfo](),
		"AddServerRequest":     reflect.TypeFor[gateway.AddServerRequest](),
		"ToolInfo":             reflect.TypeFor[gateway.ToolInfo](),
		"SkillInfo":            reflect.TypeFor[gateway.SkillInfo](),
		"SkillDetail":          reflect.TypeFor[gateway.SkillDetail](),
		"HistoryHit":           reflect.TypeFor[gateway.HistoryHit](),
		"HistoryPage":          reflect.TypeFor[gateway.HistoryPage](),
		"MemoryItem":           reflect.TypeFor[gateway.MemoryItem](),
		"MemoryPage":           reflect.TypeFor[gateway.MemoryPage](),
		"MemoryProvenance":     reflect.TypeFor[memory.Provenance](),
		"MemoryObservation":    reflect.TypeFor[memory.Observation](),
		"MemoryRelation":       reflect.TypeFor[memory.RelationInfo](),
		"MemoryEntity":         reflect.TypeFor[memory.Entity](),
		"ForgetRequest":        reflect.TypeFor[gateway.ForgetRequest](),
		"UsageTotals":          reflect.TypeFor[gateway.UsageTotals](),
		"UsageRow":             reflect.TypeFor[gateway.UsageRow](),
		"UsagePage":            reflect.TypeFor[gateway.UsagePage](),
		"LoginRequest":         reflect.TypeFor[gateway.LoginRequest](),
		"WidgetView":           reflect.TypeFor[webext.WidgetView](),
		"WidgetsPage":          reflect.TypeFor[gateway.WidgetsPage](),
		"ArtifactInfo":         reflect.TypeFor[webext.ArtifactInfo](),
		"ArtifactView":         reflect.TypeFor[webext.ArtifactView](),
		"ArtifactsPage":        reflect.TypeFor[gateway.ArtifactsPage](),
		"OpenAIModel":          reflect.TypeFor[openaiapi.Model](),
		"OpenAIModelList":      reflect.TypeFor[openaiapi.ModelList](),
		"OpenAIUsage":          reflect.TypeFor[openaiapi.Usage](),
		"OpenAIChatCompletion": reflect.TypeFor[openaiapi.ChatCompletion](),
		"OpenAIError":          reflect.TypeFor[openaiapi.ErrorBody](),
		"ConnectorList":        reflect.TypeFor[gateway.ConnectorList](),
		"ConnectorState":       reflect.TypeFor[gateway.ConnectorState](),
		"ConnectorDetail":      reflect.TypeFor[gateway.ConnectorDetail](),
		"ConnectorBrief":       reflect.TypeFor[gateway.ConnectorBrief](),
		"OutboxInfo":           reflect.TypeFor[gateway.OutboxInfo](),
		"PairingList":          reflect.TypeFor[gateway.PairingList](),
		"PairingInfo":          reflect.TypeFor[gateway.PairingInfo](),
	}
	// An agent file has no "file": that is where it was loaded from.
	def := jsonFields(reflect.TypeFor[agent.Definition]())
	def = slices.DeleteFunc(def, func(f string) bool { return f == "file" })
	checks := map[string][]string{"AgentDefinition": def}
	for name, typ := range types {
		checks[name] = jsonFields(typ)
	}
	for name, want := range checks {
		s, ok := schemas[name]
		if !ok {
			t.Errorf("no schema %s", name)
			continue
		}
		got := schemaProps(t, doc, s)
		slices.Sort(want)
		want = slices.Compact(want) // a field shadows an embedded struct's of its name
		if !slices.Equal(got, want) {
			t.Errorf("schema %s has properties\n  %v\nwant (from the Go type)\n  %v", name, got, want)
		}
	}
}

// jsonFields lists the JSON names of a struct's fields, embedded structs'
// fields included.
func jsonFields(t reflect.Type) []string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			out = append(out, jsonFields(ft)...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// schemaProps lists a schema's property names, through $ref and allOf.
func schemaProps(t *testing.T, doc map[string]any, s any) []string {
	m, _ := s.(map[string]any)
	if ref, ok := m["$ref"].(string); ok {
		r, err := resolveRef(doc, ref)
		if err != nil {
			t.Error(err)
			return nil
		}
		return schemaProps(t, doc, r)
	}
	var out []string
	if all, ok := m["allOf"].([]any); ok {
		for _, sub := range all {
			out = append(out, schemaProps(t, doc, sub)...)
		}
	}
	props, _ := m["properties"].(map[string]any)
	for p := range props {
		out = append(out, p)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
