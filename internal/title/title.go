// Package title names conversations for people. The store titles a
// session from its first message as soon as that is logged; for an agent
// on a real model, a Titler then asks a model once, after the session's
// first reply, for a few words that name the conversation better, and
// stores them in place of the first message's line.
//
// It is best effort and out of the way: it watches the event bus, never
// delays a turn, gives up when too many titles are being written at once,
// and a failure leaves the first message's title. Agents on the built-in
// echo model are never asked, and a person's title is never replaced.
package title

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"agentd/internal/agent"
	"agentd/internal/event"
	"agentd/internal/model"
	"agentd/internal/store"
)

// Store is what a Titler reads and writes.
type Store interface {
	SessionByID(ctx context.Context, id int64) (store.Session, error)
	InboxItem(ctx context.Context, id int64) (store.InboxItem, error)
	// SetTitle sets a session's title unless one from a later source
	// stands (see store.TitleByInput).
	SetTitle(ctx context.Context, id int64, title, by string) (bool, error)
	Commit(ctx context.Context, b *store.Batch) error
}

// Agents gives agents' definitions.
type Agents interface {
	Get(id string) (*agent.Definition, bool)
}

// Models gives the client of a model.
type Models interface {
	Provider(m agent.Model) (model.Provider, error)
}

// Options configure a Titler. The zero value is usable.
type Options struct {
	Logger *slog.Logger
	// Prices per model name, to record the cost of a title's call.
	Prices map[string]agent.Price
	// MaxConcurrent bounds the titles being written at once; a session
	// whose first reply ends while that many are keeps its first
	// message's title (default 4).
	MaxConcurrent int
	// Timeout bounds one title's model call (default 30 s).
	Timeout time.Duration
}

// Titler writes titles with a model after sessions' first replies.
type Titler struct {
	st     Store
	agents Agents
	models Models
	bus    *event.Bus
	o      Options

	mu    sync.Mutex
	tried map[int64]bool // sessions asked about since Run started
}

// maxTried bounds the sessions a Titler remembers having asked about;
// past it, it forgets them all (a session is asked about again only if
// its first reply's input is still its title, which a failed try leaves),
// and the map is made anew: a cleared map keeps the room it grew to.
const maxTried = 1024

// New returns a Titler; Run makes it work.
func New(st Store, agents Agents, models Models, bus *event.Bus, o *Options) *Titler {
	t := &Titler{st: st, agents: agents, models: models, bus: bus, tried: map[int64]bool{}}
	if o != nil {
		t.o = *o
	}
	if t.o.Logger == nil {
		t.o.Logger = slog.New(slog.DiscardHandler)
	}
	if t.o.MaxConcurrent <= 0 {
		t.o.MaxConcurrent = 4
	}
	if t.o.Timeout <= 0 {
		t.o.Timeout = 30 * time.Second
	}
	return t
}

// busBuffer is the Titler's subscription's buffer. If the Titler falls
// behind the bus drops it; it subscribes again and misses those ends.
const busBuffer = 1024

// Run watches the turns that end until ctx is done, and titles the
// sessions whose first reply it sees. Calls in flight are cancelled when
// ctx is, and Run returns once they have ended.
func (t *Titler) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, t.o.MaxConcurrent)
	for ctx.Err() == nil {
		sub := t.bus.SubscribeLocal(0, busBuffer) // titled by the node that ran the turn
		t.watch(ctx, sub, func(ev event.Event) {
			if t.asked(ev.Session) {
				return // every later turn of a session: nothing to read
			}
			select {
			case slots <- struct{}{}:
			default:
				return // busy: the first message's title stays
			}
			wg.Go(func() {
				defer func() { <-slots }()
				t.title(ctx, ev)
			})
		})
		sub.Close()
	}
	return nil
}

// watch hands each stored, completed turn end of sub to fn until ctx is
// done or the bus drops sub.
func (t *Titler) watch(ctx context.Context, sub *event.Subscription, fn func(event.Event)) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-sub.C:
			if !ok {
				return
			}
			if ev.Kind == event.TurnEnd && ev.Seq > 0 && ev.Turn > 0 {
				fn(ev)
			}
		}
	}
}

// title titles ev's session if ev ends its first reply.
func (t *Titler) title(ctx context.Context, ev event.Event) {
	var end event.TurnEndData
	if ev.Decode(&end) != nil || end.Status != event.StatusDone || strings.TrimSpace(end.Reply) == "" {
		return
	}
	sess, err := t.st.SessionByID(ctx, ev.Session)
	if err != nil || sess.TitleBy != store.TitleByInput {
		return
	}
	def, ok := t.agents.Get(sess.Agent)
	if !ok || def.Model.Provider == agent.ProviderEcho {
		return
	}
	in, err := t.st.InboxItem(ctx, ev.Turn)
	if err != nil || in.Kind != event.Input || store.TitleOf(in.Text) != sess.Title {
		return // not the message the session is titled from: not its first reply
	}
	m := def.Model
	if sm := def.Memory.SummaryModel; sm != nil && sm.Provider != "" {
		m = *sm
	}
	if m.Provider == agent.ProviderEcho || !t.first(sess.ID) {
		return
	}
	title, err := t.ask(ctx, sess, m, in.Text, end.Reply)
	if err != nil {
		t.o.Logger.Debug("no title from the model; the first message's stays", "session", sess.Address(), "err", err)
		return
	}
	if _, err := t.st.SetTitle(ctx, sess.ID, title, store.TitleByModel); err != nil {
		t.o.Logger.Debug("session title", "session", sess.Address(), "err", err)
	}
}

// asked reports whether session id was asked about already.
func (t *Titler) asked(id int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tried[id]
}

// first reports whether session id has not been asked about yet, and
// marks it asked.
func (t *Titler) first(id int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tried[id] {
		return false
	}
	if len(t.tried) >= maxTried {
		t.tried = map[int64]bool{}
	}
	t.tried[id] = true
	return true
}

// Prompt is what a title's model call is told.
const Prompt = "You name conversations. Reply with a title for the conversation below: at most six words, " +
	"in the conversation's language, no quotes, no final period, nothing else."

// Lead starts the one message of a title's model call.
const Lead = "Conversation to name:\n\n"

// maxQuote bounds how much of the message and of the reply a title's
// call sends, in bytes.
const maxQuote = 2000

// ask asks model m for a title of the exchange, and records the call's
// usage against the session.
func (t *Titler) ask(ctx context.Context, sess store.Session, m agent.Model, input, reply string) (string, error) {
	p, err := t.models.Provider(m)
	if err != nil {
		return "", err
	}
	timeout := t.o.Timeout
	if d := m.Timeout.D(); d > 0 && d < timeout {
		timeout = d
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req := &model.Request{Model: m.Name, System: Prompt, MaxTokens: 24, Messages: []model.Message{{Role: model.RoleUser,
		Content: Lead + "User: " + cut(input, maxQuote) + "\n\nAssistant: " + cut(reply, maxQuote)}}}
	resp, err := p.Stream(cctx, req, nil)
	if err != nil {
		return "", err
	}
	if err := t.st.Commit(ctx, &store.Batch{Usage: []store.Usage{{Session: sess.ID, Agent: sess.Agent, Model: m.Name,
		InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens, CostUSD: t.price(m.Name, resp.Usage)}}}); err != nil {
		t.o.Logger.Warn("record a title's usage", "session", sess.Address(), "err", err)
	}
	if len(resp.ToolCalls) > 0 {
		return "", fmt.Errorf("the model called %s instead of writing a title", resp.ToolCalls[0].Name)
	}
	title := Clean(resp.Text)
	if title == "" {
		return "", errors.New("the model wrote no title")
	}
	return title, nil
}

func (t *Titler) price(name string, u model.Usage) float64 {
	p, ok := t.o.Prices[name]
	if !ok {
		return 0
	}
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output) / 1e6
}

// Clean makes a model's answer a title: its first line, without a
// "Title:" label, surrounding quotes or markup, or a final period, cut
// like a first message's (store.TitleOf).
func Clean(s string) string {
	const marks = " \"'`*_#“”‘’«»"
	s = strings.Trim(store.TitleOf(s), marks)
	if k, v, ok := strings.Cut(s, ":"); ok && strings.EqualFold(strings.Trim(k, marks), "title") {
		s = strings.Trim(v, marks)
	}
	return strings.TrimSpace(strings.TrimSuffix(s, "."))
}

// cut shortens s to at most n bytes, at a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isStart(s[n]) {
		n--
	}
	return s[:n] + " …"
}

func isStart(b byte) bool { return b&0xC0 != 0x80 }
