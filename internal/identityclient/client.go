// Package identityclient is agentd's side of an identity server: for the
// agents that name one (identity_server), it registers their character
// files at start and delivers every message lifecycle to the server's
// log through a durable queue (store.IdentityOutbox), in order, exactly
// once as the server sees it: a resend after a crash is answered by the
// server's idempotency by messageId.
//
// What a crash leaves: a turn that ended but was not queued is found by
// the sweep at the next start (turns ended since the first one queued
// with no row); a row delivered but not marked sent is sent again and the
// server stores nothing new.
package identityclient

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"agentd/internal/identityserver"
	"agentd/internal/store"
)

// Agent is one agent that logs to the server.
type Agent struct {
	ID        string
	KeyID     string // the agent whose key signs for it (default ID)
	Character identityserver.Character
}

// Leader makes the caller the one node that delivers to a server
// (store.OnceStore); nil Lead: another node leads.
type Leader interface {
	TryLead(ctx context.Context, role string) (store.Lead, error)
}

// Options configure a Client. URL, Agents, Outbox, Keys and Lifecycle are
// required.
type Options struct {
	URL string // the identity server's URL, as the agents name it
	// Agents are the agents that log there with one key (their
	// characters' Pubkey): a node delivers the rows of its own key, as
	// nodes sharing a store may each hold their own.
	Agents []Agent
	Outbox store.IdentityOutbox
	Keys   Signer
	// Lifecycle builds the lifecycle object of a turn (an inbox item id)
	// of an agent, signature-free.
	Lifecycle func(ctx context.Context, agentID string, turn int64) (json.RawMessage, error)
	// Lead, when set, is asked to lead "identity:<URL>#<pubkey>" before
	// delivering (nodes sharing a store and a key: one of them
	// delivers); nil: this node delivers.
	Lead Leader
	// Dial connects to the server (default Dial over streamable HTTP).
	Dial func(ctx context.Context) (Session, error)
	// Backoff is the pause after n failures in a row (default 1s doubled
	// each time, at most 1m).
	Backoff func(n int) time.Duration
	Logger  *slog.Logger // default slog.Default()
	Version string       // agentd's version, in initialize
}

// Client registers the agents at one identity server and delivers their
// lifecycles to it. Run owns its goroutine; Ended may be called from any.
type Client struct {
	o      Options
	pubkey string // the agents' key
	agents map[string]Agent
	wake   chan struct{} // capacity 1

	mu    sync.Mutex
	ended []ended // turns to queue, in the order they ended
}

type ended struct {
	agent string
	turn  int64
}

// New returns a Client of o.
func New(o *Options) (*Client, error) {
	if o == nil || o.URL == "" || len(o.Agents) == 0 || o.Outbox == nil || o.Keys == nil || o.Lifecycle == nil {
		return nil, errors.New("identityclient: URL, Agents, Outbox, Keys and Lifecycle are required")
	}
	c := &Client{o: *o, pubkey: o.Agents[0].Character.Pubkey, agents: make(map[string]Agent, len(o.Agents)), wake: make(chan struct{}, 1)}
	for _, a := range o.Agents {
		if a.Character.Pubkey != c.pubkey {
			return nil, errors.New("identityclient: the agents of one client share one key")
		}
		if a.KeyID == "" {
			a.KeyID = a.ID
		}
		c.agents[a.ID] = a
	}
	if c.o.Logger == nil {
		c.o.Logger = slog.Default()
	}
	c.o.Logger = c.o.Logger.With("identity_server", o.URL, "pubkey", c.pubkey)
	if c.o.Dial == nil {
		c.o.Dial = func(ctx context.Context) (Session, error) { return Dial(ctx, o.URL, o.Version) }
	}
	if c.o.Backoff == nil {
		c.o.Backoff = func(n int) time.Duration { return min(time.Second<<min(n, 6), time.Minute) }
	}
	return c, nil
}

// Ended notes that an agent's turn ended: Run queues its lifecycle. It
// does not block; a turn of an agent that does not use this server is
// ignored.
func (c *Client) Ended(agentID string, turn int64) {
	if _, ok := c.agents[agentID]; !ok {
		return
	}
	c.mu.Lock()
	c.ended = append(c.ended, ended{agentID, turn})
	c.mu.Unlock()
	c.poke()
}

func (c *Client) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Run sweeps for turns a crash kept from the queue, then queues the turns
// Ended reports and, while this node leads the server's delivery,
// registers the agents and delivers the queue, until ctx ends.
func (c *Client) Run(ctx context.Context) {
	for id := range c.agents {
		c.sweep(ctx, id)
	}
	fails := 0
	for ctx.Err() == nil {
		err := c.lead(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			fails++
			c.o.Logger.Warn("identity server: delivery paused", "err", err, "retry_in", c.o.Backoff(fails))
		} else {
			fails = 0
		}
		c.queueEnded(ctx)
		pause := c.o.Backoff(fails)
		if err == nil {
			pause = time.Minute // another node leads: ask again now and then
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-c.wake:
		}
		t.Stop()
	}
}

// lead delivers while this node leads: nil when another node leads, the
// error that broke the connection otherwise.
func (c *Client) lead(ctx context.Context) error {
	if c.o.Lead != nil {
		l, err := c.o.Lead.TryLead(ctx, "identity:"+c.o.URL+"#"+c.pubkey)
		if err != nil || l == nil {
			return err
		}
		defer l.Release()
		lctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-l.Lost():
				cancel()
			case <-lctx.Done():
			}
		}()
		ctx = lctx
	}
	s, err := c.o.Dial(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := c.register(ctx, s); err != nil {
		return err
	}
	for {
		c.queueEnded(ctx)
		if err := c.deliver(ctx, s); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.wake:
		}
	}
}

// register stores each agent's character file and reads it back: a file
// the server keeps differently is logged, not fatal.
func (c *Client) register(ctx context.Context, s Session) error {
	for _, a := range c.agents {
		if _, err := call(ctx, s, c.o.Keys, c.o.URL, a.KeyID, identityserver.ToolRegister, map[string]any{"character": a.Character}); err != nil {
			if errors.Is(err, ErrRefused) {
				c.o.Logger.Error("identity server: registration refused", "agent", a.ID, "err", err)
				continue
			}
			return err
		}
		out, err := call(ctx, s, c.o.Keys, c.o.URL, a.KeyID, identityserver.ToolGetCharacter, map[string]any{"pubkey": a.Character.Pubkey})
		if err != nil {
			return err
		}
		var got struct {
			Characters []struct {
				Character identityserver.Character `json:"character"`
			} `json:"characters"`
		}
		if err := json.Unmarshal(out, &got); err != nil || len(got.Characters) != 1 || !sameCharacter(got.Characters[0].Character, a.Character) {
			c.o.Logger.Warn("identity server: the character file it keeps differs from the agent's", "agent", a.ID, "answer", string(out))
			continue
		}
		c.o.Logger.Info("identity server: registered", "agent", a.ID, "pubkey", a.Character.Pubkey)
	}
	return nil
}

// keyOf is the agent whose key signs for agentID.
func (c *Client) keyOf(agentID string) string {
	if a, ok := c.agents[agentID]; ok {
		return a.KeyID
	}
	return agentID
}

// sameCharacter compares two character files as JSON values.
func sameCharacter(a, b identityserver.Character) bool {
	var x, y any
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return json.Unmarshal(ja, &x) == nil && json.Unmarshal(jb, &y) == nil && reflect.DeepEqual(x, y)
}

// deliver sends the due rows in order, each marked sent once the server
// answered; it stops at the first failure, which it records on the row.
func (c *Client) deliver(ctx context.Context, s Session) error {
	for {
		due, err := c.o.Outbox.DueIdentityLogs(ctx, c.o.URL, c.pubkey, 50)
		if err != nil || len(due) == 0 {
			return err
		}
		for _, it := range due {
			_, err := call(ctx, s, c.o.Keys, c.o.URL, c.keyOf(it.Agent), identityserver.ToolLog, map[string]any{"lifecycle": it.Lifecycle})
			if err != nil {
				if ctx.Err() == nil {
					_ = c.o.Outbox.MarkIdentityLog(context.WithoutCancel(ctx), it.ID, time.Time{}, err.Error())
				}
				return err
			}
			if err := c.o.Outbox.MarkIdentityLog(ctx, it.ID, time.Now(), ""); err != nil {
				return err
			}
		}
	}
}

// queueEnded queues the lifecycles of the turns Ended reported; one that
// fails stays for the next round.
func (c *Client) queueEnded(ctx context.Context) {
	c.mu.Lock()
	todo := c.ended
	c.ended = nil
	c.mu.Unlock()
	for i, e := range todo {
		if err := c.queue(ctx, e.agent, e.turn); err != nil {
			c.o.Logger.Warn("identity server: queue a lifecycle", "agent", e.agent, "turn", e.turn, "err", err)
			c.mu.Lock()
			c.ended = append(todo[i:len(todo):len(todo)], c.ended...)
			c.mu.Unlock()
			return
		}
	}
}

func (c *Client) queue(ctx context.Context, agentID string, turn int64) error {
	doc, err := c.o.Lifecycle(ctx, agentID, turn)
	if err != nil {
		return err
	}
	_, _, err = c.o.Outbox.QueueIdentityLog(ctx, store.IdentityOutboxItem{Server: c.o.URL, Pubkey: c.pubkey, Agent: agentID, Turn: turn, Lifecycle: doc})
	return err
}

// sweep queues the agent's turns that ended since the first one queued
// and have no row: those whose end a crash kept from the queue.
func (c *Client) sweep(ctx context.Context, agentID string) {
	first, err := c.o.Outbox.FirstIdentityTurn(ctx, c.o.URL, agentID)
	if err != nil || first == 0 {
		return
	}
	after := first
	for ctx.Err() == nil {
		turns, err := c.o.Outbox.IdentityTurns(ctx, c.o.URL, agentID, after, 100)
		if err != nil {
			c.o.Logger.Warn("identity server: sweep", "agent", agentID, "err", err)
			return
		}
		for _, t := range turns {
			if err := c.queue(ctx, agentID, t); err != nil {
				c.o.Logger.Warn("identity server: sweep: queue a lifecycle", "agent", agentID, "turn", t, "err", err)
			}
			after = t
		}
		if len(turns) < 100 {
			return
		}
	}
}
