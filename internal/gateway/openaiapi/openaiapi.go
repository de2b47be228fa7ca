// Package openaiapi serves agentd's agents over the OpenAI Chat Completions
// API, so that OpenAI client libraries and chat UIs can talk to them:
//
//	GET  /v1/models             every agent, as a model whose id is the agent's id
//	GET  /v1/models/{id}        one of them
//	POST /v1/chat/completions   a message to an agent; streamed (server-sent events) or not
//
// A conversation is a session. With the header X-Agentd-Session: <key>, or
// else the request's "user" field, the request continues the session
// <agent>/openai:<key>: the session already holds the earlier messages, so
// only the last user message is sent (after any system messages that follow
// the last assistant message). Without either, the request starts a new
// session <agent>/openai:<id> whose first message is the request's earlier
// messages as a short transcript followed by the last user message; the
// response's X-Agentd-Session header gives the key to continue it.
//
// Images come as image_url content parts holding data: URLs (agentd fetches
// no URL on a client's behalf). The last user message's images are sent
// with it; a new session's transcript mentions earlier ones as "[image]".
//
// The agent decides how it calls its model: sampling parameters
// (temperature, top_p, max_tokens, stop, seed, ...) are ignored, and the
// client's tools are refused (the agent has its own). Authentication is
// the gateway's: the OpenAI client's API key is sent as a bearer token.
package openaiapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/gateway"
	"agentd/internal/prompttag"
	"agentd/internal/runtime"
)

// SessionHeader names the session key of a conversation, in a request (to
// continue it) and in every answer to a chat completion.
const SessionHeader = "X-Agentd-Session"

// KeyPrefix starts the key of every session this API names.
const KeyPrefix = "openai:"

// Source is the source of the inputs this API sends.
const Source = "openai"

// Runtime runs turns: Stream submits an input and calls fn with each event
// of its turn until it ends (runtime.Runtime's Stream).
type Runtime interface {
	Stream(ctx context.Context, in runtime.Input, fn func(event.Event) error) (runtime.Receipt, event.TurnEndData, error)
}

// Agents lists the agents (agent.Registry).
type Agents interface {
	List() []*agent.Definition
}

// AgentFiles is the optional ability of Agents to say why an agent's file
// does not load (agent.Registry has it), so that a request naming that
// agent says so rather than that there is no such model.
type AgentFiles interface {
	FileError(id string) error
}

// Options configure the handler; nil means the defaults.
type Options struct {
	Logger *slog.Logger
	// Created is the creation time reported for every model; zero: the
	// time New was called.
	Created time.Time
	// MaxBody bounds a request body (default DefaultMaxBody).
	MaxBody int64
}

// DefaultMaxBody is the default bound of a request body: the gateway's
// bound of a message, room for a message's images (each at most
// model.MaxImageBytes, base64).
const DefaultMaxBody = gateway.MaxMessageBody

type handler struct {
	rt      Runtime
	agents  Agents
	log     *slog.Logger
	created int64
	maxBody int64
	mux     *http.ServeMux
}

// New returns the handler of the OpenAI-compatible routes. It expects the
// full request path (/v1/...); requests reach it authenticated. It also
// answers, in this API's shape, the errors the gateway meets on its routes
// before they reach it (gateway.ErrorWriter).
func New(rt Runtime, agents Agents, o *Options) http.Handler {
	var opts Options
	if o != nil {
		opts = *o
	}
	h := &handler{rt: rt, agents: agents, log: opts.Logger, maxBody: opts.MaxBody}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBody
	}
	created := opts.Created
	if created.IsZero() {
		created = time.Now()
	}
	h.created = created.Unix()
	h.mux = http.NewServeMux()
	// The routes are the gateway's list of this API's routes; each path
	// answers another method with this API's 405.
	for _, p := range gateway.OpenAIRoutes {
		method, path, _ := strings.Cut(p, " ")
		h.mux.HandleFunc(path, h.only(method, h.handler(p)))
	}
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		e := said(gateway.ErrNotFound, "", "unknown path %s: this API serves GET /v1/models and POST /v1/chat/completions", clip(r.URL.Path, 100))
		e.code = "unknown_url"
		writeError(w, e)
	})
	return h
}

// handler returns the handler of the route pattern, one of
// gateway.OpenAIRoutes.
func (h *handler) handler(pattern string) http.HandlerFunc {
	switch pattern {
	case "GET /v1/models":
		return h.models
	case "GET /v1/models/{id}":
		return h.model
	case "POST /v1/chat/completions":
		return h.chat
	}
	panic("openaiapi: no handler for the route " + pattern)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// WriteFailure answers, in this API's shape, an error the gateway met
// before the request reached the handler (authentication, admission, a
// method its routes do not serve).
func (h *handler) WriteFailure(w http.ResponseWriter, f gateway.Failure) {
	writeError(w, fromFailure(f))
}

// only answers requests with another method with 405, in OpenAI's shape.
func (h *handler) only(method string, fn http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			w.Header().Set("Allow", method)
			writeError(w, said(gateway.ErrMethodNotAllowed, "", "%s is not allowed here; use %s", r.Method, method))
			return
		}
		fn(w, r)
	}
}

// Model is an agent as /v1/models lists it. Name and Description are
// agentd's additions (some chat UIs show a model's name).
type Model struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
}

// ModelList answers GET /v1/models.
type ModelList struct {
	Object string  `json:"object"`
	Data   []Model `json:"data"`
}

func (h *handler) asModel(d *agent.Definition) Model {
	return Model{ID: d.ID, Object: "model", Created: h.created, OwnedBy: "agentd", Name: d.Name, Description: d.Description}
}

func (h *handler) models(w http.ResponseWriter, r *http.Request) {
	defs := slices.Clone(h.agents.List())
	slices.SortFunc(defs, func(a, b *agent.Definition) int { return strings.Compare(a.ID, b.ID) })
	out := ModelList{Object: "list", Data: make([]Model, 0, len(defs))}
	for _, d := range defs {
		out.Data = append(out.Data, h.asModel(d))
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *handler) model(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	d := h.agent(id)
	if d == nil {
		writeError(w, modelNotFound(id))
		return
	}
	writeJSON(w, http.StatusOK, h.asModel(d))
}

// noAgent is the error of a request naming model id, which is not an
// agent in use: its file is invalid, or there is no such agent.
func (h *handler) noAgent(id string) *apiError {
	if f, ok := h.agents.(AgentFiles); ok {
		if err := f.FileError(id); err != nil {
			return agentInvalid(id, err)
		}
	}
	return modelNotFound(id)
}

func (h *handler) agent(id string) *agent.Definition {
	for _, d := range h.agents.List() {
		if d.ID == id {
			return d
		}
	}
	return nil
}

// idempotencyHeader names the request's idempotency key: a request with a
// key its session has seen starts no second turn and is answered with the
// first one's result.
const idempotencyHeader = "Idempotency-Key"

func (h *handler) chat(w http.ResponseWriter, r *http.Request) {
	req, aerr := decodeRequest(r.Body, r.ContentLength, h.maxBody)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if h.agent(req.model) == nil {
		writeError(w, h.noAgent(req.model))
		return
	}
	idem := r.Header.Get(idempotencyHeader)
	if idem != "" && !validKey(idem) {
		writeError(w, invalid("", "the %s header must be at most 256 bytes of text without control characters or \"/\"", idempotencyHeader))
		return
	}
	key, continued := strings.TrimSpace(r.Header.Get(SessionHeader)), true
	switch {
	case key != "":
		if !validKey(key) {
			writeError(w, invalid("", "the %s header must be at most 256 bytes of text without control characters or \"/\"", SessionHeader))
			return
		}
	case req.user != "":
		key = req.user
		if !validKey(key) {
			writeError(w, invalid("user", "user must be at most 256 bytes of text without control characters or \"/\" to name a conversation"))
			return
		}
	default:
		continued = false
		key = newKey(req.model, idem)
	}
	in := runtime.Input{Session: req.model + "/" + KeyPrefix + key, Text: inputText(req.messages, continued),
		Images: req.images, Source: Source, IdempotencyKey: idem}
	c := &completion{h: h, w: w, r: r, req: req, key: key, created: time.Now().Unix()}
	if req.stream {
		c.stream(in)
	} else {
		c.whole(in)
	}
}

// newKey names a new conversation. A request with an idempotency key
// names the same one every time, so that a retry finds the first attempt's
// turn in it.
func newKey(agentID, idem string) string {
	if idem != "" {
		sum := sha256.Sum256([]byte("agentd openai session\x00" + agentID + "\x00" + idem))
		return hex.EncodeToString(sum[:12])
	}
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// The tags inputText wraps earlier messages in. Each message's text has
// them escaped (wrapperTags), so that what a client's user wrote cannot
// pass for another message of the transcript, a system one say.
const (
	tagConversation = "conversation_so_far"
	tagInstructions = "instructions"
)

var wrapperTags = []string{tagConversation, tagInstructions, roleSystem, roleUser, roleAssistant}

// inputText is what the agent receives: the last user message, preceded by
// what the session does not hold yet. A continued session holds the
// earlier conversation, so only system messages after the last assistant
// message are new; a new session gets every earlier message, an image in
// one as "[image]" (only the last message's images are sent).
func inputText(msgs []message, continued bool) string {
	last := prompttag.Escape(msgs[len(msgs)-1].text, wrapperTags)
	prior := msgs[:len(msgs)-1]
	if continued {
		from := 0
		for i, m := range prior {
			if m.role == roleAssistant {
				from = i + 1
			}
		}
		var sys []message
		for _, m := range prior[from:] {
			if m.role == roleSystem {
				sys = append(sys, m)
			}
		}
		prior = sys
	}
	var b strings.Builder
	wrap := tagConversation
	onlySystem := true
	for _, m := range prior {
		if m.role != roleSystem {
			onlySystem = false
		}
	}
	if onlySystem {
		wrap = tagInstructions
	}
	n := 0
	for _, m := range prior {
		shown := prompttag.Escape(m.shown, wrapperTags)
		if strings.TrimSpace(shown) == "" {
			continue
		}
		if n == 0 {
			b.WriteString("<" + wrap + ">\n")
		}
		n++
		if onlySystem {
			b.WriteString(shown + "\n")
			continue
		}
		b.WriteString("<" + m.role + ">\n" + shown + "\n</" + m.role + ">\n")
	}
	if n == 0 {
		return last
	}
	b.WriteString("</" + wrap + ">\n\n")
	b.WriteString(last)
	return b.String()
}
