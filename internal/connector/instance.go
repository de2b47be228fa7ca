package connector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"agentd/internal/event"
	"agentd/internal/secret"
	"agentd/internal/store"
)

// instance is one connector row running on this node: its platform, the
// outbox worker, the sweep and the streamers, owned by run. What a crash
// leaves: nothing of an instance is kept but its store rows.
type instance struct {
	m    *Manager
	name string
	spec *Spec

	ended   chan ended    // turn ends handed by the Ended hook (buffered; full: the sweep finds them)
	wakeC   chan struct{} // a row became due
	done    chan struct{}
	stopped chan struct{} // closed by stop
	once    sync.Once

	strangers *limiter // replies to strangers
	full      *limiter // "this bot is private" once per hour when codes are full

	mu      sync.Mutex // guards the fields below
	plat    Platform
	caps    Caps
	vals    []secret.Value    // the resolved secrets, to redact
	streams map[int64]*stream // running streamers by session
	sctx    context.Context   // the streamers' context: the run's
	scancel context.CancelFunc
	swg     sync.WaitGroup // the streamers
	fig     figures
}

// ended is a turn's end the worker turns into an outbox row.
type ended struct {
	session, turn int64
	end           event.TurnEndData
	chat          Chat
}

func newInstance(m *Manager, name string, s *Spec) *instance {
	return &instance{m: m, name: name, spec: s, ended: make(chan ended, 1024), wakeC: make(chan struct{}, 1),
		done: make(chan struct{}), stopped: make(chan struct{}), strangers: newLimiter(StrangerEvery), full: newLimiter(time.Hour),
		streams: map[int64]*stream{}, fig: newFigures(m.o.Now())}
}

// stop ends the instance's run and waits for it, at most 5 s for a send
// in flight (its row is finished by the next run or node).
func (in *instance) stop() {
	in.once.Do(func() { close(in.stopped) })
	in.m.mu.RLock()
	started := in.m.started
	in.m.mu.RUnlock()
	if !started {
		return // it never ran
	}
	select {
	case <-in.done:
	case <-time.After(5 * time.Second):
		in.m.log.Warn("connector: stopping took long; it ends in the background", "connector", in.name)
	}
}

// wake tells the worker a row may be due.
func (in *instance) wake() {
	select {
	case in.wakeC <- struct{}{}:
	default:
	}
}

func (in *instance) platform() Platform {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.plat
}

// redact replaces the instance's secrets in s with their references.
func (in *instance) redact(s string) string {
	in.mu.Lock()
	vals := in.vals
	in.mu.Unlock()
	return secret.Redact(s, vals)
}

// run resolves the secrets, makes the platform, takes the lead and runs
// the platform, the worker and the sweep until the instance stops or the
// Manager closes; a missing secret or a platform that stops is tried again
// after RetryEvery.
func (in *instance) run(parent context.Context) {
	defer close(in.done)
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	go func() {
		select {
		case <-in.stopped:
			cancel()
		case <-ctx.Done():
		}
	}()
	for ctx.Err() == nil {
		err := in.runOnce(ctx)
		if ctx.Err() != nil {
			break
		}
		wait := in.m.o.RetryEvery
		switch {
		case errors.Is(err, errStandby):
			wait = 5 * time.Second
		case errors.Is(err, ErrAuth), errors.Is(err, ErrConfig):
			// No reconnect mends it: the row must change (which starts
			// a new instance).
			in.setState(StateDown, "", err)
			in.m.log.Error("connector stopped until its row changes", "connector", in.name, "err", in.redact(err.Error()))
			<-ctx.Done()
			continue
		default:
			in.setState(StateDown, "", err)
			in.m.log.Warn("connector stopped; trying again", "connector", in.name, "in", wait, "err", in.redact(fmt.Sprint(err)))
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	in.setState(StateDisabled, "", nil)
}

var errStandby = errors.New("connector: another node runs it")

// runOnce is one life of the connection.
func (in *instance) runOnce(ctx context.Context) error {
	in.setState(StateConnecting, "", nil)
	cfg, err := in.config()
	if err != nil {
		return err
	}
	deps := PlatformDeps{HTTP: in.m.o.Guard.Client(0), Dialer: in.m.o.Guard.Dialer(), Now: in.m.o.Now,
		Logger: in.m.log.With("connector", in.name), Redact: in.redact,
		State: func(state, bot string, err error) { in.setState(state, bot, err) }}
	plat, caps, err := in.m.platforms[in.spec.Platform](cfg, deps)
	if err != nil {
		return fmt.Errorf("connector: %s: %s", in.name, in.redact(err.Error()))
	}
	if in.spec.Markup == "plain" {
		caps.Dialect = "plain"
	}
	if in.m.o.Lead != nil {
		lead, err := in.m.o.Lead.TryLead(ctx, "connector:"+in.name)
		if err != nil {
			return err
		}
		if lead == nil {
			in.setState(StateStandby, "", nil)
			return errStandby
		}
		defer lead.Release() // another node takes over at once
		lctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-lead.Lost():
				cancel()
			case <-lctx.Done():
			}
		}()
		ctx = lctx
	}
	in.mu.Lock()
	in.plat, in.caps = plat, caps
	in.sctx, in.scancel = context.WithCancel(ctx)
	in.mu.Unlock()
	if err := in.loadConversations(ctx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	wctx, stopWork := context.WithCancel(ctx)
	wg.Go(func() { in.work(wctx) })
	wg.Go(func() { in.sweepLoop(wctx) })
	err = plat.Run(ctx, in)
	stopWork()
	wg.Wait()
	in.stopStreams()
	return err
}

// config resolves the row's secrets into the platform's Config.
func (in *instance) config() (Config, error) {
	s := in.spec
	var vals []secret.Value
	get := func(ref string) (string, error) {
		if ref == "" {
			return "", nil
		}
		v, vs, err := in.m.o.Secrets.Expand(ref)
		vals = append(vals, vs...)
		return v, err
	}
	cfg := Config{Name: in.name, APIURL: s.APIURL, Mode: s.Mode, PublicURL: s.PublicURL, GatewayURL: s.GatewayURL}
	if cfg.Mode == "" {
		cfg.Mode = defaultMode(s.Platform)
	}
	var errs []error
	for _, f := range []struct {
		to  *string
		ref string
	}{{&cfg.Token, s.tokenRef()}, {&cfg.AppToken, envRef(s.AppTokenEnv)}, {&cfg.SigningSecret, envRef(s.SigningSecretEnv)},
		{&cfg.WebhookSecret, envRef(s.WebhookSecretEnv)}} {
		v, err := get(f.ref)
		*f.to = v
		errs = append(errs, err)
	}
	in.mu.Lock()
	in.vals = vals
	in.mu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return cfg, fmt.Errorf("connector: %s: %w", in.name, err)
	}
	return cfg, nil
}

// loadConversations maps the connector's sessions to their chats.
func (in *instance) loadConversations(ctx context.Context) error {
	cs, err := in.m.st.Conversations(ctx, in.name)
	if err != nil {
		return fmt.Errorf("connector: %s: conversations: %w", in.name, err)
	}
	for _, c := range cs {
		in.m.remember(c.SessionID, convRef{connector: in.name, chat: chatOf(c.Chat, c.ChatJSON)})
	}
	return nil
}

// chatOf is the chat a conversation (or an outbox row's chat key) names.
func chatOf(key, js string) Chat {
	var c Chat
	if js != "" && json.Unmarshal([]byte(js), &c) == nil && c.ID != "" {
		return c
	}
	id, thread, _ := strings.Cut(key, "/")
	return Chat{ID: id, Thread: thread, Kind: ChatGroup} // unknown: group rules, never a DM's
}

// chatOfRow is where an outbox row goes.
func (in *instance) chatOfRow(it store.OutboxItem) Chat {
	if c, ok := in.m.conv(it.SessionID); ok && it.SessionID != 0 {
		return c.chat
	}
	return chatOf(it.Chat, "")
}
