package gateway

// The client's calls of the dynamic agents' routes: the list with its
// filters, the tree, one agent's status, a start, a first contact and a
// stop.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// AgentQuery selects the agents GET /v1/agents lists; its zero value
// lists what the route lists without a query: the definitions and the
// live dynamic agents.
type AgentQuery struct {
	Type   string // an agent type
	Parent string // the parent's agent id
	Root   string // the top of the parent chain
	State  string // a state (store.AgentStates; ready or invalid for a definition)
	// Dynamic is "" for both, "true" for the dynamic agents only, "false"
	// for the definitions only.
	Dynamic string
	// All lists the dynamic agents that ended too.
	All    bool
	Limit  int    // the page size of the dynamic agents (0: the server's default)
	Before string // the cursor of the page (Agentd-Next of the one before)
}

// values is q as the query of GET /v1/agents.
func (q AgentQuery) values() url.Values {
	v := url.Values{}
	for _, f := range [...]struct{ k, v string }{{"type", q.Type}, {"parent", q.Parent}, {"root", q.Root},
		{"state", q.State}, {"dynamic", q.Dynamic}, {"before", q.Before}} {
		if f.v != "" {
			v.Set(f.k, f.v)
		}
	}
	if q.All {
		v.Set("all", "1")
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// ListAgents lists the agents q selects, and returns the cursor of the
// next page of dynamic agents ("" for none).
func (c *Client) ListAgents(ctx context.Context, q AgentQuery) ([]AgentInfo, string, error) {
	p := "/v1/agents"
	if v := q.values(); len(v) > 0 {
		p += "?" + v.Encode()
	}
	resp, err := c.send(ctx, "GET", p, nil)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	var out []AgentInfo
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, "", fmt.Errorf("gateway client: decode %s: %w", p, err)
	}
	return out, resp.Header.Get(NextHeader), nil
}

// AgentTree returns the forest of dynamic agents under root ("" for every
// tree with a live member, and the definitions).
func (c *Client) AgentTree(ctx context.Context, root string) (AgentTree, error) {
	var out AgentTree
	p := "/v1/agents/tree"
	if root != "" {
		p += "?" + url.Values{"root": {root}}.Encode()
	}
	return out, c.do(ctx, "GET", p, nil, &out)
}

// AgentStatus returns an agent as GET /v1/agents/{id} shows it: a dynamic
// agent's Instance is set.
func (c *Client) AgentStatus(ctx context.Context, id string) (AgentDetail, error) {
	var out AgentDetail
	s, err := seg(id)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, "GET", "/v1/agents/"+s, nil, &out)
}

// StartAgent starts a background agent of template; a key not "" is the
// request's Idempotency-Key: the same key starts it once.
func (c *Client) StartAgent(ctx context.Context, template, key string, req StartAgentRequest) (StartAgentResponse, error) {
	var out StartAgentResponse
	t, err := seg(template)
	if err != nil {
		return out, err
	}
	var h http.Header
	if key != "" {
		h = http.Header{"Idempotency-Key": {key}}
	}
	return out, c.doWith(ctx, "POST", "/v1/agents/"+t+"/start", h, req, &out)
}

// Contact submits a message of a person reaching template through a
// connector: to the user (or swarm) agent of that person, made on first
// contact.
func (c *Client) Contact(ctx context.Context, template string, req ContactRequest) (ContactResponse, error) {
	var out ContactResponse
	t, err := seg(template)
	if err != nil {
		return out, err
	}
	return out, c.do(ctx, "POST", "/v1/agents/"+t+"/contact", req, &out)
}

// StopAgent stops a dynamic agent and the agents below it, and returns
// the ids it stopped.
func (c *Client) StopAgent(ctx context.Context, id, reason string) ([]string, error) {
	var out StopAgentResponse
	s, err := seg(id)
	if err != nil {
		return nil, err
	}
	return out.Stopped, c.do(ctx, "POST", "/v1/agents/"+s+"/stop", StopAgentRequest{Reason: reason}, &out)
}
