package gateway

// The API's routes, in one table. New builds the mux from it; Protect
// learns from it which routes need no token and which change what runs on
// the machine; bodyLimit which bodies may be a message's; OpenAIRoutes are
// its OpenAI-compatible routes; and the tests hold docs/openapi.yaml and
// docs/api.md to it.

import (
	"net/http"
	"reflect"
	"strings"
)

// access says who may call a route over TCP. Over the unix socket every
// route answers whoever can open the socket.
type access int

const (
	// The zero access, a route that names none: the token.
	_ access = iota
	// public: anyone. A public route's path is literal (at most a subtree,
	// {$}, or whole segments {name}): Protect matches it before the mux
	// does.
	public
	// admin: the token and AuthOptions.RemoteAdmin (gateway.remote_admin).
	// The route changes what runs on this machine: it writes agent
	// definitions (which name the commands of MCP servers), adds or
	// removes MCP servers, makes or replaces an agent's key, or changes
	// extension rows.
	admin
)

// A route is one entry of the table. Exactly one of serve, part and front
// answers it.
type route struct {
	// pattern is "METHOD /path" as http.ServeMux reads it; without a
	// method the route answers every method.
	pattern string
	access  access
	// serve is the gateway's own handler.
	serve func(*Server, http.ResponseWriter, *http.Request)
	// part names the field of Options holding the route's handler, built
	// by another package; the route is served when the field is set.
	part string
	// front is answered by Protect in front of the mux, so on TCP only
	// (the console's login and logout, which need Protect's token state).
	front func(*auth, http.ResponseWriter, *http.Request)
	// message says the body is a message's, which may carry images: it
	// may be MaxMessageBody rather than MaxBody.
	message bool
	// logsRefusals says every refusal of the route is logged, Protect's
	// too (a webhook's: its caller is a third party).
	logsRefusals bool
}

// routeTable is every route of the API.
var routeTable = []route{
	// The server (gateway.go, ops.go, status.go, nodes.go).
	{pattern: "GET /healthz", access: public, serve: (*Server).healthz},
	{pattern: "GET /readyz", serve: (*Server).readyz},
	{pattern: "GET /metrics", serve: (*Server).metrics},
	{pattern: "GET /v1/version", serve: (*Server).version},
	{pattern: "GET /v1/status", serve: (*Server).status},
	{pattern: "GET /v1/usage", serve: (*Server).usage},
	{pattern: "GET /v1/nodes", serve: (*Server).nodes},

	// Sessions and their turns (sessions.go, title.go, tools.go).
	{pattern: "GET /v1/sessions", serve: (*Server).sessions},
	{pattern: "GET /v1/sessions/{agent}/{key}", serve: (*Server).session},
	{pattern: "PATCH /v1/sessions/{agent}/{key}", serve: (*Server).patchSession},
	{pattern: "GET /v1/sessions/{agent}/{key}/events", serve: (*Server).events},
	{pattern: "POST /v1/sessions/{agent}/{key}/messages", serve: (*Server).message, message: true},
	{pattern: "GET /v1/contexts", serve: (*Server).contextList},
	{pattern: "POST /v1/contexts/{type}/send", serve: (*Server).contextSend, message: true},
	{pattern: "POST /v1/sessions/{agent}/{key}/reset", serve: (*Server).reset},
	{pattern: "POST /v1/sessions/{agent}/{key}/cancel", serve: (*Server).cancel},
	{pattern: "POST /v1/sessions/{agent}/{key}/close", serve: (*Server).closeSession},
	{pattern: "POST /v1/sessions/{agent}/{key}/reopen", serve: (*Server).reopen},
	{pattern: "POST /v1/sessions/{agent}/{key}/compact", serve: (*Server).compact},
	{pattern: "GET /v1/turns/{id}", serve: (*Server).turn},

	// Slash commands and jobs, extensions of the types command and job
	// (commands.go, jobs.go).
	{pattern: "GET /v1/commands", serve: (*Server).commandList},
	{pattern: "POST /v1/jobs/{name}/run", serve: (*Server).jobRun},
	{pattern: "GET /v1/jobs", serve: (*Server).jobList},
	{pattern: "GET /v1/jobs/{name}", serve: (*Server).jobGet},
	{pattern: "GET /v1/jobs/{name}/runs", serve: (*Server).jobRuns},
	{pattern: "POST /v1/jobs/{name}/pause", serve: (*Server).jobPause},
	{pattern: "POST /v1/jobs/{name}/resume", serve: (*Server).jobResume},
	// A job's webhook: no token, the job's own signature (hooks.go).
	{pattern: "POST /hooks/{name}", access: public, serve: (*Server).hook, logsRefusals: true},

	// Agents: definitions and dynamic agents (agents.go, agenttree.go,
	// agentinstances.go), the message lifecycle and keys (tools.go).
	{pattern: "GET /v1/agents", serve: (*Server).agents},
	{pattern: "GET /v1/agents/tree", serve: (*Server).agentTree},
	{pattern: "GET /v1/agents/{id}", serve: (*Server).agentGet},
	{pattern: "POST /v1/agents/{template}/start", serve: (*Server).agentStart},
	{pattern: "POST /v1/agents/{template}/contact", serve: (*Server).agentContact},
	{pattern: "POST /v1/agents/{id}/stop", serve: (*Server).agentStop},
	{pattern: "PUT /v1/agents/{id}", access: admin, serve: (*Server).agentPut},
	{pattern: "POST /v1/agents/{id}/reload", serve: (*Server).agentReload},
	{pattern: "POST /v1/agents/reload", serve: (*Server).agentsReload},
	{pattern: "POST /v1/agents/{id}/message", serve: (*Server).lifecycle},
	{pattern: "GET /v1/agents/{id}/key", serve: (*Server).keyShow},
	{pattern: "POST /v1/agents/{id}/key", access: admin, serve: (*Server).keyGenerate},
	{pattern: "PUT /v1/agents/{id}/key", access: admin, serve: (*Server).keyImport},

	// The tool layer (tools.go).
	{pattern: "GET /v1/approvals", serve: (*Server).approvals},
	{pattern: "POST /v1/approvals/{id}/grant", serve: (*Server).grant},
	{pattern: "POST /v1/approvals/{id}/deny", serve: (*Server).deny},
	{pattern: "GET /v1/grants", serve: (*Server).grants},
	{pattern: "DELETE /v1/grants/{id}", serve: (*Server).grantRevoke},
	{pattern: "GET /v1/mcp/servers", serve: (*Server).mcpList},
	{pattern: "POST /v1/mcp/servers", access: admin, serve: (*Server).mcpAdd},
	{pattern: "DELETE /v1/mcp/servers/{name}", access: admin, serve: (*Server).mcpRemove},
	{pattern: "GET /v1/mcp/servers/{name}/tools", serve: (*Server).mcpTools},
	{pattern: "GET /v1/skills", serve: (*Server).skillList},
	{pattern: "GET /v1/skills/{name}", serve: (*Server).skillShow},

	// The extension substrate (extensions.go). Reading is the token's;
	// every change is admin, whatever the row's type: rows of most types
	// change what runs here (an agent names MCP servers' commands, an
	// action reaches the network, an integration starts servers, an app
	// serves script, a command or a job spends an agent's budget), a row
	// of any type may name one that does, and the route alone cannot tell
	// the types apart before the request is authenticated.
	{pattern: "GET /v1/extensions", serve: (*Server).extList},
	{pattern: "GET /v1/extensions/schemas", serve: (*Server).extTypes},
	{pattern: "GET /v1/extensions/schemas/{type}", serve: (*Server).extSchema},
	{pattern: "GET /v1/extensions/{type}/{name}", serve: (*Server).extGet},
	{pattern: "PUT /v1/extensions/{type}/{name}", access: admin, serve: (*Server).extPut},
	// A control is a switch people flip from the console over TCP: it
	// pauses an agent or switches tools off, starts nothing, so writing
	// one is the token's.
	{pattern: "PUT /v1/extensions/control/{name}", serve: (*Server).extPutControl},
	{pattern: "DELETE /v1/extensions/{type}/{name}", access: admin, serve: (*Server).extDelete},
	{pattern: "POST /v1/extensions/{type}/{name}/enable", access: admin, serve: (*Server).extEnable},
	{pattern: "POST /v1/extensions/{type}/{name}/disable", access: admin, serve: (*Server).extDisable},
	{pattern: "POST /v1/extensions/{type}/{name}/revert", access: admin, serve: (*Server).extRevert},
	{pattern: "GET /v1/extensions/{type}/{name}/history", serve: (*Server).extHistory},
	{pattern: "POST /v1/extensions/reseed", access: admin, serve: (*Server).extReseed},

	// Chat connectors and who may talk through them (connectorroutes.go,
	// pairings.go). A person's decision on a failed reply or a pairing
	// code is admin: approving lets someone new reach an agent and spend
	// its budget, retrying sends to a chat again.
	{pattern: "GET /v1/connectors", serve: (*Server).connectorList},
	{pattern: "GET /v1/connectors/{name}", serve: (*Server).connectorGet},
	{pattern: "POST /v1/connectors/{name}/outbox/{id}/retry", access: admin, serve: (*Server).outboxRetry},
	{pattern: "POST /v1/connectors/{name}/outbox/{id}/dismiss", access: admin, serve: (*Server).outboxDismiss},
	{pattern: "GET /v1/pairings", serve: (*Server).pairingList},
	{pattern: "POST /v1/pairings/{code}/approve", access: admin, serve: (*Server).pairingApprove},
	{pattern: "POST /v1/pairings/{code}/deny", access: admin, serve: (*Server).pairingDeny},
	{pattern: "DELETE /v1/pairings/{connector}/{user}", access: admin, serve: (*Server).pairingRevoke},
	// A chat platform's webhook: no token, the platform's own secret
	// header or signature, which the connector checks (connectorroutes.go).
	{pattern: "POST /connectors/{name}/webhook", access: public, serve: (*Server).connectorWebhook, logsRefusals: true},

	// Conversation history and working memory (history.go), long-term
	// memory (memory.go).
	{pattern: "GET /v1/history/search", serve: (*Server).historySearch},
	{pattern: "GET /v1/sessions/{agent}/{key}/working", serve: (*Server).workingGet},
	{pattern: "PUT /v1/sessions/{agent}/{key}/working/{name}", serve: (*Server).workingSet},
	{pattern: "DELETE /v1/sessions/{agent}/{key}/working/{name}", serve: (*Server).workingDelete},
	{pattern: "GET /v1/memory", serve: (*Server).memorySearch},
	{pattern: "GET /v1/memory/entities/{name}", serve: (*Server).memoryEntity},
	{pattern: "POST /v1/memory/forget", serve: (*Server).memoryForget},

	// The console's extension data (webext.go): widgets, artifacts, and
	// apps, which need the token or the console's login as the API does
	// (an app's page calls it with that login).
	{pattern: "GET /v1/widgets", serve: (*Server).widgets},
	{pattern: "GET /v1/widgets/{name}", serve: (*Server).widget},
	{pattern: "GET /v1/artifacts", serve: (*Server).artifacts},
	{pattern: "GET /v1/artifacts/{name}", serve: (*Server).artifact},
	{pattern: "GET /v1/artifacts/{name}/download", serve: (*Server).artifactDownload},
	{pattern: "GET /apps/{name}", serve: (*Server).appRoot},
	{pattern: "GET /apps/{name}/{path...}", serve: (*Server).appFile},

	// Handlers of other packages: the WebSocket event stream, the
	// OpenAI-compatible API (shape.go), agentd as an MCP server
	// (streamable HTTP: POST, GET and DELETE), and the web console's
	// files, which load before login (they hold no data).
	{pattern: "GET /v1/stream", part: "Stream"},
	{pattern: "GET /v1/models", part: "OpenAI"},
	{pattern: "GET /v1/models/{id}", part: "OpenAI"},
	{pattern: "POST /v1/chat/completions", part: "OpenAI", message: true},
	{pattern: "/mcp", part: "MCPHandler"},
	{pattern: "GET /{$}", access: public, part: "Console"},
	{pattern: "GET /console/", access: public, part: "Console"},

	// The console's login and logout (login.go).
	{pattern: "POST /v1/auth/login", access: public, front: (*auth).login},
	{pattern: "POST /v1/auth/logout", access: public, front: (*auth).logout},
}

// Route is a route of the API, as Routes lists it.
type Route struct {
	// Pattern is "METHOD /path" as http.ServeMux reads it; without a
	// method the route answers every method.
	Pattern string
	// Public routes need no token over TCP.
	Public bool
	// Admin routes change what runs on this machine: over TCP they need
	// AuthOptions.RemoteAdmin besides the token.
	Admin bool
	// Part is the field of Options whose handler serves the route; "" for
	// the gateway's own.
	Part string
	// Front routes are answered by Protect, in front of the API, so over
	// TCP only.
	Front bool
}

// Routes returns the routes s serves, in the order of its table: those of
// the parts it was given, and login and logout, which Protect answers.
func (s *Server) Routes() []Route {
	var out []Route
	for i := range routeTable {
		rt := &routeTable[i]
		if rt.front == nil && s.routes[rt.pattern] == nil {
			continue
		}
		out = append(out, Route{Pattern: rt.pattern, Public: rt.access == public, Admin: rt.access == admin,
			Part: rt.part, Front: rt.front != nil})
	}
	return out
}

// OpenAIRoutes are the routes of the OpenAI-compatible API (Options.OpenAI).
var OpenAIRoutes = partRoutes("OpenAI")

// partRoutes are the patterns of the routes part serves.
func partRoutes(part string) []string {
	var out []string
	for _, rt := range routeTable {
		if rt.part == part {
			out = append(out, rt.pattern)
		}
	}
	return out
}

// handle serves the routes of the table s has the parts of, and remembers
// them by pattern.
func (s *Server) handle() {
	s.routes = map[string]*route{}
	for i := range routeTable {
		rt := &routeTable[i]
		var h http.Handler
		switch {
		case rt.serve != nil:
			h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rt.serve(s, w, r) })
		case rt.part != "":
			h, _ = reflect.ValueOf(s.o).FieldByName(rt.part).Interface().(http.Handler)
		}
		if h == nil {
			continue
		}
		s.mux.Handle(rt.pattern, h)
		s.routes[rt.pattern] = rt
	}
}

// route returns the route of the table the mux gives r to, nil for none.
func (s *Server) route(r *http.Request) *route {
	_, pattern := s.mux.Handler(r)
	return s.routes[pattern]
}

// publicRoute returns the public route r is for, nil for any other. Only
// exact, clean paths are public: anything with dot segments, doubled
// slashes or escapes needs the token.
func publicRoute(r *http.Request) *route {
	p := r.URL.Path
	if r.URL.RawPath != "" || strings.Contains(p, "//") || strings.Contains(p, "/.") || strings.ContainsAny(p, "%\\") {
		return nil
	}
	for i := range routeTable {
		if rt := &routeTable[i]; rt.access == public && rt.matches(r.Method, p) {
			return rt
		}
	}
	return nil
}

// matches reports whether a request with method for the clean path p is
// for rt, as http.ServeMux would match a literal pattern: GET takes HEAD
// too, a subtree takes its path without the slash (which the mux
// redirects), {$} ends the path, and a segment {name} is one segment.
func (rt *route) matches(method, p string) bool {
	m, path, ok := strings.Cut(rt.pattern, " ")
	if !ok {
		path = m
	} else if m != method && !(m == http.MethodGet && method == http.MethodHead) {
		return false
	}
	switch {
	case strings.HasSuffix(path, "/{$}"):
		return p == strings.TrimSuffix(path, "{$}")
	case strings.HasSuffix(path, "/"):
		return p == strings.TrimSuffix(path, "/") || strings.HasPrefix(p, path)
	}
	want, got := strings.Split(path, "/"), strings.Split(p, "/")
	if len(want) != len(got) {
		return false
	}
	for i, w := range want {
		if w == "{name}" && got[i] != "" || w == got[i] {
			continue
		}
		return false
	}
	return true
}
