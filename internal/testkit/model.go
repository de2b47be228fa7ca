package testkit

import (
	"context"
	"strings"
	"sync"

	"agentd/internal/model"
)

// Model is a model for tests of the layers above the engine. By default it
// answers "re: <the last user message>", streamed word by word. A call
// whose last user message has a gate (Gate) waits at it; with Hold set,
// every call waits for a value from it; Respond, if set, answers instead
// of the default. It records every request and how many calls run at
// once, in all and per tag (the last user message's text up to its first
// ':'). A call whose context is done fails, as a real client's does.
type Model struct {
	// Hold and Respond are set before the first call.
	Hold    chan struct{}
	Respond func(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error)

	mu        sync.Mutex
	reqs      []*model.Request
	gates     map[string]*Gate
	active    map[string]int
	maxTag    map[string]int
	activeAll int
	maxAll    int
}

// NewModel returns a Model that answers "re: <the last user message>".
func NewModel() *Model {
	return &Model{gates: map[string]*Gate{}, active: map[string]int{}, maxTag: map[string]int{}}
}

// Gate holds one model call until it is opened or the call's context ends.
type Gate struct {
	// Entered is closed when the call reaches the gate.
	Entered chan struct{}
	release chan struct{}
	once    sync.Once
	ctx     context.Context // the held call's, set before Entered is closed
}

// Open lets the held call go on.
func (g *Gate) Open() { g.once.Do(func() { close(g.release) }) }

// Ctx returns the held call's context, once Entered is closed.
func (g *Gate) Ctx() context.Context { return g.ctx }

// Gate makes the next call whose last user message is text wait.
func (m *Model) Gate(text string) *Gate {
	g := &Gate{Entered: make(chan struct{}), release: make(chan struct{})}
	m.mu.Lock()
	m.gates[text] = g
	m.mu.Unlock()
	return g
}

// LastUser returns the text of a request's last user message.
func LastUser(req *model.Request) string {
	var last string
	for _, msg := range req.Messages {
		if msg.Role == model.RoleUser {
			last = msg.Content
		}
	}
	return last
}

func tagOf(text string) string {
	tag, _, _ := strings.Cut(text, ":")
	return tag
}

// Stream answers a call.
func (m *Model) Stream(ctx context.Context, req *model.Request, onDelta func(model.Delta)) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	text := LastUser(req)
	cp := *req
	cp.Messages = append([]model.Message(nil), req.Messages...)
	g, hold, respond := m.enter(text, &cp)
	defer m.leave(tagOf(text))
	if g != nil {
		g.ctx = ctx
		close(g.Entered)
		if err := wait(ctx, g.release); err != nil {
			return nil, err
		}
	}
	if hold != nil {
		if err := wait(ctx, hold); err != nil {
			return nil, err
		}
	}
	if respond != nil {
		return respond(ctx, &cp, onDelta)
	}
	reply := "re: " + text
	if onDelta != nil {
		for w := range strings.SplitAfterSeq(reply, " ") {
			onDelta(model.Delta{Text: w})
		}
	}
	return &model.Response{Text: reply, StopReason: "stop", Usage: model.Usage{InputTokens: 3, OutputTokens: 2}}, nil
}

// enter records a call and returns its gate (taking it), Hold and Respond.
func (m *Model) enter(text string, req *model.Request) (*Gate, chan struct{}, func(context.Context, *model.Request, func(model.Delta)) (*model.Response, error)) {
	tag := tagOf(text)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs = append(m.reqs, req)
	m.active[tag]++
	m.maxTag[tag] = max(m.maxTag[tag], m.active[tag])
	m.activeAll++
	m.maxAll = max(m.maxAll, m.activeAll)
	g := m.gates[text]
	delete(m.gates, text)
	return g, m.Hold, m.Respond
}

func (m *Model) leave(tag string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.active[tag]--
	m.activeAll--
}

// wait waits for ch to deliver or be closed, or for ctx to end.
func wait(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Requests returns the requests whose last user message is text.
func (m *Model) Requests(text string) []*model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*model.Request
	for _, r := range m.reqs {
		if LastUser(r) == text {
			out = append(out, r)
		}
	}
	return out
}

// MaxOf returns the most calls that ran at once with tag ("" for all).
func (m *Model) MaxOf(tag string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if tag == "" {
		return m.maxAll
	}
	return m.maxTag[tag]
}

// Active returns how many calls are running now.
func (m *Model) Active() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.activeAll
}

// Calls returns how many calls were made.
func (m *Model) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.reqs)
}
