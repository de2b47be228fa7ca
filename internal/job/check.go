package job

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"agentd/internal/extension"
	"agentd/internal/netguard"
	"agentd/internal/prompt"
	"agentd/internal/runtime"
	"agentd/internal/schedule"
	"agentd/internal/schema"
)

// MinEvery is the shortest interval of an every trigger, a heartbeat or
// a watch's debounce.
const MinEvery = schedule.MinEvery

// Check checks what the schema cannot: the agents named exist, the
// prompt refers only to known variables, the budget is positive, every
// trigger has exactly one kind and its expression, zone, time or interval
// parses, and deliveries name a session address or a URL the SSRF guard
// lets through.
func (r *Runner) Check(_ context.Context, d *extension.Doc) []schema.Error {
	s, err := Decode(d.Spec)
	if err != nil {
		return []schema.Error{{Pointer: "/spec", Message: err.Error()}}
	}
	c := &checker{r: r, name: d.Name, agent: s.Agent}
	if _, ok := r.agents.Get(s.Agent); !ok {
		c.add("/agent", "no agent %q", s.Agent)
	}
	if s.Session != "" {
		if _, _, err := runtime.ParseAddress(s.Agent + "/" + s.Session); err != nil {
			c.add("/session", "%q is not a session key: it may hold anything but / and control characters", s.Session)
		}
	}
	for _, ref := range prompt.Refs(s.Prompt) {
		if !knownVar(ref) {
			c.add("/prompt", "{{%s}} is not a variable of a job (they are %s, payload.KEY)", ref, strings.Join(Vars, ", "))
		}
	}
	if _, err := s.Budget.Budgets(); err != nil {
		c.add("/budget/max_wall_time", "%v", err)
	}
	if b := s.Budget; b != nil && (b.MaxSteps < 0 || b.MaxOutputTokens < 0 || b.MaxUSD < 0) {
		c.add("/budget", "limits must be positive")
	}
	if s.Prompt == "" && !heartbeatPrompted(s) {
		c.add("/prompt", "a job has a prompt (only a job fired by a heartbeat alone may have the heartbeat's prompt or prompt_file stand for it)")
	}
	heartbeats := 0
	for i, t := range s.Triggers {
		c.trigger("/triggers/"+strconv.Itoa(i), &t)
		if t.Heartbeat != nil {
			if heartbeats++; heartbeats == 2 {
				c.add("/triggers/"+strconv.Itoa(i)+"/heartbeat", "a job has at most one heartbeat")
			}
		}
	}
	if cycle := r.chainCycle(d.Name, s); len(cycle) > 2 { // a job after itself is refused above
		for i, t := range s.Triggers {
			if t.Chain != nil && t.Chain.After == cycle[1] {
				c.add("/triggers/"+strconv.Itoa(i)+"/chain/after", "a chain cannot close a cycle: %s", cycleText(cycle))
				break
			}
		}
	}
	c.delivery("/deliver", s.Deliver)
	c.delivery("/on_failure", s.OnFailure)
	return c.errs
}

type checker struct {
	r     *Runner
	name  string
	agent string
	errs  []schema.Error
}

func (c *checker) add(ptr, format string, args ...any) {
	c.errs = append(c.errs, schema.Error{Pointer: "/spec" + ptr, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) trigger(ptr string, t *Trigger) {
	var kinds []string
	for _, k := range []struct {
		name string
		set  bool
	}{{"cron", t.Cron != ""}, {"at", t.At != ""}, {"every", t.Every != ""}, {"watch", t.Watch != nil},
		{"webhook", t.Webhook != nil}, {"chain", t.Chain != nil}, {"heartbeat", t.Heartbeat != nil}} {
		if k.set {
			kinds = append(kinds, k.name)
		}
	}
	if len(kinds) != 1 {
		c.add(ptr, "a trigger has exactly one of cron, at, every, watch, webhook, chain, heartbeat (this one has %d: %s)", len(kinds), strings.Join(kinds, ", "))
	}
	if t.Cron != "" || t.TZ != "" || t.Every != "" || t.At != "" {
		_, err := schedule.FromTrigger(t.Cron, t.TZ, t.Every, t.At)
		c.scheduleErrs(ptr, err)
	}
	if w := t.Watch; w != nil {
		c.watch(ptr+"/watch", w)
	}
	if wh := t.Webhook; wh != nil && (wh.SecretEnv == "") == (wh.Secret == "") {
		c.add(ptr+"/webhook", "a webhook has one of secret_env or secret")
	}
	if ch := t.Chain; ch != nil {
		switch {
		case !extension.ValidName(ch.After):
			c.add(ptr+"/chain/after", "%q is not a job's name", ch.After)
		case ch.After == c.name:
			c.add(ptr+"/chain/after", "a job cannot follow itself")
		}
	}
	if h := t.Heartbeat; h != nil {
		if _, err := schedule.ParseEvery(h.Every); err != nil {
			c.add(ptr+"/heartbeat/every", "%v", err)
		}
		if h.Prompt != "" && h.PromptFile != "" {
			c.add(ptr+"/heartbeat", "prompt or prompt_file, not both")
		}
		if h.PromptFile != "" {
			if _, err := c.r.readPromptFile(c.agent, h.PromptFile); err != nil {
				c.add(ptr+"/heartbeat/prompt_file", "%v", err)
			}
		}
		switch {
		case h.QuietHours != "":
			if _, err := ParseQuietHours(h.QuietHours, h.TZ); err != nil {
				c.add(ptr+"/heartbeat/quiet_hours", "%v", err)
			}
		case h.TZ != "":
			c.add(ptr+"/heartbeat/tz", "a time zone goes with quiet_hours")
		}
	}
}

// watch checks a watch trigger: a directory it may watch, a glob that
// parses, a debounce.
func (c *checker) watch(ptr string, w *Watch) {
	if _, err := c.r.watchRoot(w.Path); err != nil {
		c.add(ptr+"/path", "%v", err)
	}
	for _, e := range strings.Split(w.Glob, "/") {
		if _, err := path.Match(e, ""); err != nil {
			c.add(ptr+"/glob", "%q is not a glob: %v", w.Glob, err)
			break
		}
	}
	c.interval(ptr+"/debounce", w.Debounce)
}

// heartbeatPrompted reports whether every trigger of s is a heartbeat
// with a prompt or prompt_file of its own (and there is one).
func heartbeatPrompted(s *Spec) bool {
	for _, t := range s.Triggers {
		if h := t.Heartbeat; h == nil || (h.Prompt == "" && h.PromptFile == "") {
			return false
		}
	}
	return len(s.Triggers) > 0
}

// scheduleErrs adds the field errors of schedule.FromTrigger under the
// trigger at ptr; its error for the trigger as a whole (none or several
// of cron, every, at) is the one trigger reports already.
func (c *checker) scheduleErrs(ptr string, err error) {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		if fe, ok := e.(*schedule.FieldError); ok && fe.Pointer != "" {
			c.add(ptr+fe.Pointer, "%v", fe.Err)
		}
	}
}

// interval checks an interval of at least MinEvery ("" is none).
func (c *checker) interval(ptr, s string) {
	if s == "" {
		return
	}
	if d, err := time.ParseDuration(s); err != nil || d < MinEvery {
		c.add(ptr, "want an interval of at least %s such as 30s or 2h, not %q", MinEvery, s)
	}
}

func (c *checker) delivery(ptr string, d *Delivery) {
	if d == nil {
		return
	}
	n := 0
	for _, set := range []bool{d.Session != "", d.Webhook != "", d.None} {
		if set {
			n++
		}
	}
	if n != 1 {
		c.add(ptr, "a delivery is one of session, webhook or none")
	}
	if d.Silent && d.Session == "" {
		c.add(ptr+"/silent", "silent goes with a session")
	}
	if d.Session != "" {
		if a, _, err := runtime.ParseAddress(d.Session); err != nil {
			c.add(ptr+"/session", "want a session address <agent>/<key>, not %q", d.Session)
		} else if _, ok := c.r.agents.Get(a); !ok {
			c.add(ptr+"/session", "no agent %q", a)
		}
	}
	if d.Webhook != "" {
		if err := c.r.checkURL(d.Webhook); err != nil {
			c.add(ptr+"/webhook", "%v", err)
		}
	}
}

// checkURL refuses a webhook URL that is not an absolute http(s) URL
// without credentials, or whose host is an address (or "localhost") the
// guard blocks. A name that resolves to a blocked address is refused at
// the dialer, when the run is delivered.
func (r *Runner) checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: %q does not parse", netguard.ErrBadURL, raw)
	}
	if err := netguard.CheckURL(u); err != nil {
		return err
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		host = "127.0.0.1"
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return r.guard.Check(ip)
	}
	return nil
}

// touchesMachine is the job type's Machine: whether a job's spec reads or
// reaches past agentd — a watch (the names of files anywhere agentd may
// see), a webhook trigger (a route open without the gateway token, keyed
// by a secret of the machine's) or a webhook delivery (the network, with
// whatever the agent writes). An agent writes such a row only with the
// machine right. A spec that does not decode is taken to: the save
// refuses it anyway.
func touchesMachine(spec json.RawMessage) bool {
	s, err := Decode(spec)
	if err != nil {
		return true
	}
	for _, t := range s.Triggers {
		if t.Watch != nil || t.Webhook != nil {
			return true
		}
	}
	for _, d := range []*Delivery{s.Deliver, s.OnFailure} {
		if d != nil && d.Webhook != "" {
			return true
		}
	}
	return false
}
