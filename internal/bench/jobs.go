package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"agentd/internal/app"
	"agentd/internal/event"
	"agentd/internal/extension"
	"agentd/internal/gateway"
	"agentd/internal/job"
	"agentd/internal/schedule"
	"agentd/internal/secret"
	"agentd/internal/store"
)

// The jobs figures (`agentd bench jobs`): agentd serve with 10,000 job
// rows, put through its API as a user puts them. The scheduler at idle
// (memory and CPU with no fire due, beside the same daemon with no job),
// how late a burst of scheduled fires is accepted, and a signed webhook's
// round trip to its 202.

// JobsOptions say how Jobs measures.
type JobsOptions struct {
	// Quick runs smaller counts, for CI. Default false: the full counts.
	Quick bool
	// Jobs is how many job rows the daemon holds (default 10,000; quick
	// 1,000); Fires how many of them fire at one time (default 500; quick
	// 100), and as many others once each spread over 20 s; Hooks how many
	// webhook requests each of TCP and the socket sends (default 1,000;
	// quick 200).
	Jobs, Fires, Hooks int
	// Idle is how long idle CPU is measured, with and without the jobs
	// (default 30 s; quick 5 s).
	Idle time.Duration
	// Synchronous is the store's synchronous mode (default "full").
	Synchronous string
	// Executable is the agentd binary whose serve is measured. Default:
	// the running executable.
	Executable string
	// Version is agentd's version, as the result gives it. Default "".
	Version string
}

// JobsResult is what Jobs measured; `agentd bench jobs --json` prints it.
type JobsResult struct {
	Jobs int `json:"jobs"`
	// CreatePerS is job rows put a second through the API (over the
	// socket, 8 at once); StartMS agentd serve's start over them, to
	// accepting on its socket.
	CreatePerS float64 `json:"jobs_create_per_s"`
	StartMS    float64 `json:"jobs_start_ms"`
	// The daemon idle, with no job (…0) and with Jobs jobs none of which
	// is due: RSS, anonymous RSS, CPU in % of one core over IdleS seconds.
	Idle0RSSMB  float64 `json:"idle_0_jobs_rss_mb"`
	Idle0AnonMB float64 `json:"idle_0_jobs_anon_mb"`
	Idle0CPUPct float64 `json:"idle_0_jobs_cpu_pct"`
	IdleRSSMB   float64 `json:"idle_jobs_rss_mb"`
	IdleAnonMB  float64 `json:"idle_jobs_anon_mb"`
	IdleCPUPct  float64 `json:"idle_jobs_cpu_pct"`
	IdleS       float64 `json:"idle_s"`
	// Fires jobs share one scheduled time (a cron minute; an at time in
	// tests). Their lateness, from the scheduled time to the run's turn
	// taking its input up (the time of the input event, its session's
	// first), p50/p99/max; taken: to the run recorded in the run history
	// (its started time). The input is accepted between the two. Metric:
	// the share of the fires agentd_job_fire_lateness_seconds counts
	// within 100 ms (fired = the input accepted). FireCPUms is the daemon's CPU from the
	// scheduled time to the first look (every 100 ms) that found every
	// fire accepted, with what their turns did meanwhile.
	Fires            int     `json:"fires"`
	FireTrigger      string  `json:"fire_trigger"`
	FireLateP50ms    float64 `json:"fire_late_p50_ms"`
	FireLateP99ms    float64 `json:"fire_late_p99_ms"`
	FireLateMaxms    float64 `json:"fire_late_max_ms"`
	FireTakenP50ms   float64 `json:"fire_taken_p50_ms"`
	FireTakenP99ms   float64 `json:"fire_taken_p99_ms"`
	FireMetric100Pct float64 `json:"fire_metric_within_100ms_pct"`
	FireCPUms        float64 `json:"fire_cpu_ms"`
	// As many jobs again fire once each over SpreadS seconds, at whole
	// seconds spread evenly (every triggers of intervals of an hour or
	// more): their lateness, and the share within 100 ms (metric).
	SpreadS            float64 `json:"spread_s"`
	SpreadLateP50ms    float64 `json:"spread_late_p50_ms"`
	SpreadLateP99ms    float64 `json:"spread_late_p99_ms"`
	SpreadLateMaxms    float64 `json:"spread_late_max_ms"`
	SpreadMetric100Pct float64 `json:"spread_metric_within_100ms_pct"`
	// Webhook requests, signed, each with a delivery id of its own, one
	// after the other: POST /hooks/{name} to its 202 (the run's input
	// accepted), over TCP and over the socket.
	Hooks        int     `json:"hooks"`
	HookTCPP50ms float64 `json:"hook_tcp_p50_ms"`
	HookTCPP99ms float64 `json:"hook_tcp_p99_ms"`
	HookSockP50  float64 `json:"hook_unix_p50_ms"`
	HookSockP99  float64 `json:"hook_unix_p99_ms"`

	RunInfo
}

// jobsConfig is one Jobs run's counts.
type jobsConfig struct {
	jobs, fires, hooks int
	idle, settle       time.Duration
	// lead is how long after the daemon's restart the fires are due, at
	// least; minute makes their time a minute boundary and their trigger
	// a cron (else an at trigger, for tests that cannot wait a minute).
	lead   time.Duration
	minute bool
	// spreadAfter is how long after the burst the spread fires begin,
	// spreadFor how long they go on.
	spreadAfter, spreadFor time.Duration
	sync                   string
	exe, ver               string
	quick                  bool
}

func newJobsConfig(o *JobsOptions) (jobsConfig, error) {
	if o == nil {
		o = new(JobsOptions)
	}
	c := jobsConfig{jobs: 10000, fires: 500, hooks: 1000, idle: 30 * time.Second, settle: time.Second, minute: true,
		spreadAfter: 30 * time.Second, spreadFor: 20 * time.Second,
		sync: o.Synchronous, exe: o.Executable, ver: o.Version, quick: o.Quick}
	if o.Quick {
		c.jobs, c.fires, c.hooks, c.idle, c.settle = 1000, 100, 200, 5*time.Second, 250*time.Millisecond
	}
	for _, v := range []struct {
		dst *int
		v   int
	}{{&c.jobs, o.Jobs}, {&c.fires, o.Fires}, {&c.hooks, o.Hooks}} {
		if v.v > 0 {
			*v.dst = v.v
		}
	}
	if o.Idle > 0 {
		c.idle = o.Idle
	}
	if 2*c.fires+2 > c.jobs {
		return c, fmt.Errorf("bench: jobs: %d jobs cannot hold twice %d fires and two webhooks", c.jobs, c.fires)
	}
	c.lead = c.idle + c.settle + 30*time.Second
	err := daemonDefaults(&c.sync, &c.exe)
	return c, err
}

// jobsAgent is the agent every bench job runs: the minimal one (no
// tools, no recall) on the fake model, whose turn is one cheap call.
const jobsAgent = "minimal"

// hookSecret is the bench's webhook jobs' secret, in the data
// directory's secrets as bench_hook.
const hookSecret = "bench-hook-secret"

// Jobs measures agentd serve holding many jobs. It needs the agentd
// binary (JobsOptions.Executable) and loopback; what it writes goes into
// a temporary folder it removes.
func Jobs(ctx context.Context, o *JobsOptions) (*JobsResult, error) {
	c, err := newJobsConfig(o)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "agentd-bench-jobs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	return runJobs(ctx, dir, c)
}

func runJobs(ctx context.Context, dir string, c jobsConfig) (*JobsResult, error) {
	res := &JobsResult{Jobs: c.jobs, Fires: c.fires, Hooks: c.hooks, IdleS: c.idle.Seconds(),
		RunInfo: newRunInfo(c.quick, c.sync, c.ver)}
	base, stopFake, err := startFake(ctx, "bench", fakeScript)
	if err != nil {
		return nil, err
	}
	defer stopFake()
	if err := writeAPIData(dir, base, c.sync); err != nil {
		return nil, err
	}
	if err := secret.NewFile(dir).Set("bench_hook", hookSecret); err != nil {
		return nil, err
	}

	// Idle with no job.
	srv, err := startServe(ctx, c.exe, dir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if srv != nil { // nil if the second start failed
			srv.stop()
		}
	}()
	res.Idle0RSSMB, res.Idle0AnonMB, res.Idle0CPUPct = idleFigures(ctx, srv.pid(), c)

	// The jobs, but those that fire, through the API; then their time.
	cl := gateway.NewUnixClient(filepath.Join(dir, app.SocketFile))
	now := time.Now()
	t0 := now
	if err := putJobs(ctx, cl, 2*c.fires, c.jobs, func(i int) extension.Doc { return backgroundJob(i, now, c) }); err != nil {
		return nil, err
	}
	res.CreatePerS = float64(c.jobs-2*c.fires) / time.Since(t0).Seconds()
	at := time.Now().Add(c.lead + time.Duration(float64(2*c.fires)/res.CreatePerS*float64(time.Second))*2)
	at = at.Truncate(time.Second) // a run's scheduled time is kept to the millisecond
	if c.minute {
		at = at.Truncate(time.Minute).Add(time.Minute)
	}
	spread := at.Add(c.spreadAfter)
	if err := putJobs(ctx, cl, 0, c.fires, func(i int) extension.Doc { return firingJob(i, at, c) }); err != nil {
		return nil, err
	}
	if err := putJobs(ctx, cl, 0, c.fires, func(i int) extension.Doc { return spreadJob(i, spread, c) }); err != nil {
		return nil, err
	}
	res.FireTrigger = "at"
	if c.minute {
		res.FireTrigger = "cron"
	}

	// A fresh daemon over them: its start (to accepting on TCP), then idle.
	srv.stop()
	t0 = time.Now()
	if srv, err = startServe(ctx, c.exe, dir); err != nil {
		return nil, err
	}
	res.StartMS = ms(time.Since(t0))
	res.IdleRSSMB, res.IdleAnonMB, res.IdleCPUPct = idleFigures(ctx, srv.pid(), c)
	if !time.Now().Before(at) {
		return nil, fmt.Errorf("bench: jobs: the fires at %s were due before the idle figures were read; give a shorter --idle", at.Format(time.TimeOnly))
	}

	tok, err := gatewayToken(dir)
	if err != nil {
		return nil, err
	}
	tcp := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	if err := measureFires(ctx, srv, cl, tcp, tok, at, res, c); err != nil {
		return nil, err
	}
	if !time.Now().Before(spread) {
		return nil, fmt.Errorf("bench: jobs: the spread fires from %s were due before the burst's were read", spread.Format(time.TimeOnly))
	}
	if err := measureSpread(ctx, srv, cl, tcp, tok, spread, res, c); err != nil {
		return nil, err
	}
	return res, measureHooks(ctx, dir, srv, tcp, res, c)
}

// idleFigures lets the daemon settle (until a second passes in which it
// uses less than 2 % of a core — its scheduler has read every job's last
// run —, at most a minute), then reads its memory and its CPU over
// c.idle, in % of one core.
func idleFigures(ctx context.Context, pid int, c jobsConfig) (rss, anon, cpuPct float64) {
	sleep(ctx, c.settle)
	for end := time.Now().Add(time.Minute); time.Now().Before(end) && ctx.Err() == nil; {
		cpu0 := cpuTime(pid)
		sleep(ctx, time.Second)
		if cpuTime(pid)-cpu0 < 20*time.Millisecond {
			break
		}
	}
	cpu0, t0 := cpuTime(pid), time.Now()
	sleep(ctx, c.idle)
	cpuPct = float64(cpuTime(pid)-cpu0) / float64(time.Since(t0)) * 100
	return rssMB(pid), statusMB(pid, "RssAnon"), cpuPct
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// putJobs puts the job rows doc(from) … doc(to-1) through the API, 8 at
// once.
func putJobs(ctx context.Context, cl *gateway.Client, from, to int, doc func(i int) extension.Doc) error {
	var next atomic.Int64
	next.Store(int64(from))
	var first atomic.Value
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(to) && first.Load() == nil; i = next.Add(1) - 1 {
				d := doc(int(i))
				st, err := cl.PutExtension(ctx, d, nil)
				if err == nil && st.Active != st.Version {
					err = fmt.Errorf("not active: %s", st.Error)
				}
				if err != nil {
					first.CompareAndSwap(nil, fmt.Errorf("bench: job %s: %w", d.Name, err))
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return err
	}
	return nil
}

// quietFor is how long from now a background job fires at the soonest:
// longer than any run of the bench.
const quietFor = 2 * time.Hour

// backgroundJob is the i-th job that does not fire in the bench (i ≥
// 2 × c.fires): the first two are webhook jobs (hook-tcp, hook-unix); of the
// others, by turns, a daily cron, a weekday cron in a time zone and an
// every, their times spread over the day but none within quietFor of
// now (nor in the minute before it, which a new job would catch up).
func backgroundJob(i int, now time.Time, c jobsConfig) extension.Doc {
	k := i - 2*c.fires
	if k < 2 {
		name := [2]string{"hook-tcp", "hook-unix"}[k]
		return jobDoc(name, `{"webhook": {"secret": "${secret:bench_hook}"}}`, job.Allow)
	}
	var trigger string
	for n := 0; ; n++ {
		// A minute of the day, or an interval, spread by k, moved on by n
		// until it is quiet.
		m := (k*7919 + n*37) % 1440
		switch k % 3 {
		case 0:
			trigger = fmt.Sprintf(`{"cron": "%d %d * * *"}`, m%60, m/60)
		case 1:
			trigger = fmt.Sprintf(`{"cron": "%d %d * * 1-5", "tz": "Europe/Berlin"}`, m%60, m/60)
		default:
			trigger = fmt.Sprintf(`{"every": "%dm%ds"}`, 180+m, k%60)
		}
		if quiet(trigger, now) {
			break
		}
	}
	return jobDoc(fmt.Sprintf("bg-%05d", k), trigger, "")
}

// quiet reports whether the trigger does not fire between a minute
// before now and quietFor after.
func quiet(trigger string, now time.Time) bool {
	var t job.Trigger
	if err := json.Unmarshal([]byte(trigger), &t); err != nil {
		return false
	}
	s, err := schedule.FromTrigger(t.Cron, t.TZ, t.Every, t.At)
	if err != nil {
		return false
	}
	next, ok := s.Next(now.Add(-schedule.Grace - time.Second))
	return !ok || next.After(now.Add(quietFor))
}

// firingJob is the i-th job that fires at at: a cron of that minute (UTC)
// if c.minute, else an at trigger.
func firingJob(i int, at time.Time, c jobsConfig) extension.Doc {
	at = at.UTC()
	trigger := fmt.Sprintf(`{"at": %q}`, at.Format(time.RFC3339Nano))
	if c.minute {
		trigger = fmt.Sprintf(`{"cron": "%d %d %d %d *"}`, at.Minute(), at.Hour(), at.Day(), at.Month())
	}
	return jobDoc(fireName(i), trigger, "")
}

// fireName and spreadName are the names of the i-th job of the burst and
// of the spread fires.
func fireName(i int) string   { return fmt.Sprintf("fire-%05d", i) }
func spreadName(i int) string { return fmt.Sprintf("spread-%05d", i) }

// spreadJob is the i-th job that fires once in the c.spreadFor after
// from, at a whole second of its own place in it: an every trigger of an
// interval of an hour or more (fire times are its multiples since the
// epoch) that the second divides.
func spreadJob(i int, from time.Time, c jobsConfig) extension.Doc {
	ts := from.Unix() + int64(i)*int64(c.spreadFor/time.Second)/int64(c.fires)
	for ; ; ts++ {
		for iv := int64(3600); iv <= 86400; iv++ {
			if ts%iv == 0 {
				return jobDoc(spreadName(i), fmt.Sprintf(`{"every": "%ds"}`, iv), "")
			}
		}
	}
}

func jobDoc(name, trigger, concurrency string) extension.Doc {
	spec := fmt.Sprintf(`{"agent": %q, "prompt": "hello from {{job}} at {{fired_at}}", "triggers": [%s], "deliver": {"none": true}`,
		jobsAgent, trigger)
	if concurrency != "" {
		spec += fmt.Sprintf(`, "concurrency": %q`, concurrency)
	}
	return extension.Doc{Type: job.TypeName, Name: name, Spec: json.RawMessage(spec + "}")}
}

// measureFires waits for the burst of fires at at, reads each one's
// lateness from the run history and its session, the share within
// 100 ms from the metrics, and waits for their turns to end.
func measureFires(ctx context.Context, srv *serveChild, cl *gateway.Client, tcp *http.Client, tok string, at time.Time, res *JobsResult, c jobsConfig) error {
	sleep(ctx, time.Until(at))
	cpu0 := cpuTime(srv.pid())
	le100, count, err := waitFired(ctx, srv, tcp, tok, c.fires, at)
	if err != nil {
		return err
	}
	res.FireCPUms = ms(cpuTime(srv.pid()) - cpu0)
	res.FireMetric100Pct = le100 / count * 100
	late, taken, err := latenessOf(ctx, cl, c.fires, fireName)
	if err != nil {
		return err
	}
	res.FireLateP50ms, res.FireLateP99ms, res.FireLateMaxms = pct(late, 50), pct(late, 99), pct(late, 100)
	res.FireTakenP50ms, res.FireTakenP99ms = pct(taken, 50), pct(taken, 99)
	return waitRuns(ctx, cl, c.fires, fireName)
}

// measureSpread waits for the spread fires from from, and reads their
// lateness as measureFires does.
func measureSpread(ctx context.Context, srv *serveChild, cl *gateway.Client, tcp *http.Client, tok string, from time.Time, res *JobsResult, c jobsConfig) error {
	sleep(ctx, time.Until(from.Add(c.spreadFor)))
	le100, count, err := waitFired(ctx, srv, tcp, tok, 2*c.fires, from)
	if err != nil {
		return err
	}
	// The histogram counts the burst's fires too.
	res.SpreadMetric100Pct = (le100 - res.FireMetric100Pct/100*float64(c.fires)) / (count - float64(c.fires)) * 100
	late, _, err := latenessOf(ctx, cl, c.fires, spreadName)
	if err != nil {
		return err
	}
	res.SpreadS = c.spreadFor.Seconds()
	res.SpreadLateP50ms, res.SpreadLateP99ms, res.SpreadLateMaxms = pct(late, 50), pct(late, 99), pct(late, 100)
	return waitRuns(ctx, cl, c.fires, spreadName)
}

// waitFired looks at /metrics every 100 ms (a look costs the daemon some
// SQL, which would otherwise be part of the burst) until it has counted
// n fires, and returns the fires within 100 ms and all of them.
func waitFired(ctx context.Context, srv *serveChild, tcp *http.Client, tok string, n int, since time.Time) (le100, count float64, err error) {
	deadline := time.Now().Add(2*time.Minute + time.Duration(n)*100*time.Millisecond)
	for {
		sleep(ctx, 100*time.Millisecond)
		if le100, count, err = lateness(ctx, tcp, srv.base(), tok); err != nil {
			return 0, 0, err
		}
		if count >= float64(n) {
			return le100, count, nil
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("bench: jobs: %v of %d fires after %s", count, n, time.Since(since).Round(time.Second))
		}
	}
}

// latenessOf reads the newest run of each of n jobs and its session's
// first event, its input: from its scheduled time to the input event's
// time (late) and to its run recorded (taken).
func latenessOf(ctx context.Context, cl *gateway.Client, n int, name func(i int) string) (late, taken []time.Duration, err error) {
	for i := range n {
		page, err := cl.JobRuns(ctx, name(i), "", 1)
		if err != nil {
			return nil, nil, fmt.Errorf("bench: jobs: runs of %s: %w", name(i), err)
		}
		if len(page.Runs) != 1 {
			return nil, nil, fmt.Errorf("bench: jobs: %s did not fire", name(i))
		}
		r := page.Runs[0]
		in, err := inputOf(ctx, cl, r.Session)
		if err != nil {
			return nil, nil, fmt.Errorf("bench: jobs: %s: %w", name(i), err)
		}
		late = append(late, in.Time.Sub(r.Scheduled))
		taken = append(taken, r.Started.Sub(r.Scheduled))
	}
	return late, taken, nil
}

// inputOf returns the first event of a run's session, its input, waiting
// for its turn to take it up: the turns of a burst start once the burst is
// accepted, so the last ones may not have yet.
func inputOf(ctx context.Context, cl *gateway.Client, session string) (event.Event, error) {
	ev, err := cl.Events(ctx, session, 0, 1, time.Minute)
	if err != nil {
		return event.Event{}, fmt.Errorf("session %s: %w", session, err)
	}
	if len(ev.Events) == 0 || ev.Events[0].Kind != event.Input {
		return event.Event{}, fmt.Errorf("session %s does not begin with its input: %v", session, ev.Events)
	}
	return ev.Events[0], nil
}

// waitRuns waits until the newest run of each of n jobs has ended, so that
// their turns are not what the next figure measures.
func waitRuns(ctx context.Context, cl *gateway.Client, n int, name func(i int) string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for i := 0; i < n; {
		page, err := cl.JobRuns(ctx, name(i), "", 1)
		if err != nil {
			return err
		}
		if len(page.Runs) == 1 && page.Runs[0].Status != store.RunRunning && page.Runs[0].Status != store.RunQueued {
			i++
			continue
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: jobs: the run of %s did not end", name(i))
		}
		sleep(ctx, 20*time.Millisecond)
	}
	return nil
}

// lateness reads agentd_job_fire_lateness_seconds from /metrics: the
// fires within 100 ms, and all of them, summed over the triggers.
func lateness(ctx context.Context, hc *http.Client, base, tok string) (le100, count float64, err error) {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, 0, fmt.Errorf("bench: jobs: GET /metrics: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "agentd_job_fire_lateness_seconds_")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(f[0], "bucket{") && strings.Contains(f[0], `le="0.1"`):
			le100 += v
		case strings.HasPrefix(f[0], "count"):
			count += v
		}
	}
	return le100, count, sc.Err()
}

// measureHooks sends c.hooks signed webhook requests, each with a
// delivery id of its own, one after the other, over TCP (to hook-tcp)
// and over the socket (to hook-unix), and times each to its 202.
func measureHooks(ctx context.Context, dir string, srv *serveChild, tcp *http.Client, res *JobsResult, c jobsConfig) error {
	for _, v := range []struct {
		name, base string
		hc         *http.Client
		p50, p99   *float64
	}{
		{"hook-tcp", srv.base(), tcp, &res.HookTCPP50ms, &res.HookTCPP99ms},
		{"hook-unix", "http://agentd", unixHTTP(dir), &res.HookSockP50, &res.HookSockP99},
	} {
		lat, err := timeEach(ctx, c.hooks, func(ctx context.Context, i int) error {
			return postHook(ctx, v.hc, v.base, v.name, fmt.Sprintf("bench-%s-%d", v.name, i))
		})
		if err != nil {
			return fmt.Errorf("bench: jobs: webhook %s: %w", v.name, err)
		}
		*v.p50, *v.p99 = pct(lat, 50), pct(lat, 99)
	}
	return nil
}

// postHook sends one signed webhook request with the delivery id
// delivery, as a third-party service would, and wants its 202.
func postHook(ctx context.Context, hc *http.Client, base, name, delivery string) error {
	body := []byte(`{"event": "push", "delivery": "` + delivery + `"}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/hooks/"+name, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Agentd-Timestamp", ts)
	req.Header.Set("X-Agentd-Signature", job.Sign([]byte(hookSecret), ts, body))
	req.Header.Set("X-Agentd-Delivery", delivery)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusAccepted {
		return errors.New(resp.Status + ": " + string(b))
	}
	return nil
}

// WriteTable writes the result for people.
func (r *JobsResult) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "# agentd serve holding %d jobs\nFIGURE\tVALUE\tTARGET\tWHAT\n", r.Jobs)
	fmt.Fprintf(tw, "jobs_create_per_s\t%.0f /s\t\tjob rows put through the API over the socket, 8 at once\n", r.CreatePerS)
	fmt.Fprintf(tw, "jobs_start_ms\t%.1f ms\t\tagentd serve's start over them, to accepting on TCP\n", r.StartMS)
	fmt.Fprintf(tw, "idle RSS / anon, 0 jobs\t%.1f / %.1f MB\t\tthe daemon idle with no job\n", r.Idle0RSSMB, r.Idle0AnonMB)
	fmt.Fprintf(tw, "idle RSS / anon, %d jobs\t%.1f / %.1f MB\t\tthe daemon idle with the jobs, none due\n", r.Jobs, r.IdleRSSMB, r.IdleAnonMB)
	fmt.Fprintf(tw, "idle CPU, 0 / %d jobs\t%.2f / %.2f %%\t\tof one core over %.0f s\n", r.Jobs, r.Idle0CPUPct, r.IdleCPUPct, r.IdleS)
	fmt.Fprintf(tw, "fire lateness p50 / p99 / max\t%.1f / %.1f / %.1f ms\t≤ 100 ms (p99)\t%d jobs due at one time (%s): scheduled → the run's turn took its input up (input event)\n",
		r.FireLateP50ms, r.FireLateP99ms, r.FireLateMaxms, r.Fires, r.FireTrigger)
	fmt.Fprintf(tw, "fire taken p50 / p99\t%.1f / %.1f ms\t\tscheduled → the run recorded (its started time)\n", r.FireTakenP50ms, r.FireTakenP99ms)
	fmt.Fprintf(tw, "fires within 100 ms (metric)\t%.1f %%\t≥ 99 %%\tagentd_job_fire_lateness_seconds, le=0.1\n", r.FireMetric100Pct)
	fmt.Fprintf(tw, "fire CPU\t%.0f ms\t\tthe daemon's CPU from the scheduled time until every fire was accepted (looked at every 100 ms), their turns' included as far as they ran\n", r.FireCPUms)
	fmt.Fprintf(tw, "spread lateness p50 / p99 / max\t%.1f / %.1f / %.1f ms\t≤ 100 ms (p99)\t%d jobs more, each due once at a whole second over %.0f s (every)\n",
		r.SpreadLateP50ms, r.SpreadLateP99ms, r.SpreadLateMaxms, r.Fires, r.SpreadS)
	fmt.Fprintf(tw, "spread within 100 ms (metric)\t%.1f %%\t≥ 99 %%\tagentd_job_fire_lateness_seconds, le=0.1\n", r.SpreadMetric100Pct)
	fmt.Fprintf(tw, "webhook p50 / p99, TCP\t%.2f / %.2f ms\t\t%d signed POST /hooks/{name} → 202, one after the other\n", r.HookTCPP50ms, r.HookTCPP99ms, r.Hooks)
	fmt.Fprintf(tw, "webhook p50 / p99, socket\t%.2f / %.2f ms\t\tthe same over the local socket\n", r.HookSockP50, r.HookSockP99)
	if err := tw.Flush(); err != nil {
		return err
	}
	return r.writeFooter(w)
}
