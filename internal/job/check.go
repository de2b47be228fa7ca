package job

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"agentd/internal/extension"
	"agentd/internal/netguard"
	"agentd/internal/prompt"
	"agentd/internal/runtime"
	"agentd/internal/schema"
)

// MinEvery is the shortest interval of an every trigger.
const MinEvery = time.Second

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
	c := &checker{r: r, name: d.Name}
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
	for i, t := range s.Triggers {
		c.trigger("/triggers/"+strconv.Itoa(i), &t)
	}
	c.delivery("/deliver", s.Deliver)
	c.delivery("/on_failure", s.OnFailure)
	return c.errs
}

type checker struct {
	r    *Runner
	name string
	errs []schema.Error
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
	if t.Cron != "" {
		if err := checkCron(t.Cron); err != nil {
			c.add(ptr+"/cron", "%v", err)
		}
	}
	if t.TZ != "" {
		if t.Cron == "" {
			c.add(ptr+"/tz", "a time zone goes with a cron expression")
		} else if _, err := time.LoadLocation(t.TZ); err != nil || strings.EqualFold(t.TZ, "local") {
			c.add(ptr+"/tz", "unknown time zone %q (an IANA name such as Europe/Berlin)", t.TZ)
		}
	}
	if t.At != "" {
		if _, err := time.Parse(time.RFC3339, t.At); err != nil {
			c.add(ptr+"/at", "want an RFC 3339 time such as 2026-12-01T08:00:00Z, not %q", t.At)
		}
	}
	c.interval(ptr+"/every", t.Every)
	if w := t.Watch; w != nil && w.Debounce != "" {
		c.interval(ptr+"/watch/debounce", w.Debounce)
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
		c.interval(ptr+"/heartbeat/every", h.Every)
		if h.Prompt != "" && h.PromptFile != "" {
			c.add(ptr+"/heartbeat", "prompt or prompt_file, not both")
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

// cronFields are the fields of a cron expression: name, range and the
// names allowed for its values.
var cronFields = []struct {
	name     string
	min, max int
	names    []string
}{
	{"minute", 0, 59, nil},
	{"hour", 0, 23, nil},
	{"day of month", 1, 31, nil},
	{"month", 1, 12, []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
	{"day of week", 0, 7, []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
}

// checkCron checks a 5-field cron expression: each field a list of *,
// a value or a range, each with an optional /step.
func checkCron(expr string) error {
	fields := strings.Fields(expr)
	if len(fields) != len(cronFields) {
		return fmt.Errorf("want 5 fields (minute hour day-of-month month day-of-week), not %d", len(fields))
	}
	for i, f := range fields {
		cf := cronFields[i]
		for item := range strings.SplitSeq(f, ",") {
			if err := cronItem(item, cf.min, cf.max, cf.names); err != nil {
				return fmt.Errorf("%s %q: %w", cf.name, f, err)
			}
		}
	}
	return nil
}

func cronItem(item string, lo, hi int, names []string) error {
	rng, step, hasStep := strings.Cut(item, "/")
	if hasStep {
		if n, err := strconv.Atoi(step); err != nil || n < 1 || n > hi {
			return fmt.Errorf("bad step %q", step)
		}
	}
	if rng == "*" {
		return nil
	}
	a, b, isRange := strings.Cut(rng, "-")
	x, err := cronValue(a, lo, hi, names)
	if err != nil {
		return err
	}
	if !isRange {
		return nil
	}
	y, err := cronValue(b, lo, hi, names)
	if err != nil {
		return err
	}
	if y < x {
		return fmt.Errorf("range %s runs backwards", rng)
	}
	return nil
}

func cronValue(s string, lo, hi int, names []string) (int, error) {
	for i, n := range names {
		if strings.EqualFold(s, n) {
			if lo == 1 {
				return i + 1, nil
			}
			return i, nil
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%q is not a value from %d to %d", s, lo, hi)
	}
	return n, nil
}
