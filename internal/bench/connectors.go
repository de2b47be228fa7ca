package bench

import (
	"context"
	"encoding/json"
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

	"agentd/internal/agent"
	"agentd/internal/app"
	"agentd/internal/connector/chatfake"
	"agentd/internal/connector/telegram/telegramfake"
	"agentd/internal/event"
	"agentd/internal/extension"
	"agentd/internal/gateway"
	"agentd/internal/secret"
	"agentd/internal/store"
)

// The connectors' figures (`agentd bench connectors`): agentd serve with
// a Telegram connector polling a fake Bot API (telegramfake) in the bench
// process, its agent on the fake model. Messages a second from people to
// their replies delivered; the latency a message through Telegram adds
// over the same turn posted to the API; how often a streamed reply is
// edited, with and without a storm of 429s.

// ConnectorsOptions say how Connectors measures.
type ConnectorsOptions struct {
	// Quick runs smaller counts, for CI. Default false: the full counts.
	Quick bool
	// Users people send PerUser messages each, as fast as the fake takes
	// them (default 50 × 20; quick 5 × 4).
	Users, PerUser int
	// Latency is how many turns each of the API and Telegram times,
	// interleaved (default 500; quick 20).
	Latency int
	// Streams is how many streamed replies of StreamChars characters at
	// 200 a second each edit-rate figure reads (default 3 of 2,000; quick
	// 1 of 400).
	Streams, StreamChars int
	// Synchronous is the store's synchronous mode (default "full").
	Synchronous string
	// Executable is the agentd binary whose serve is measured. Default:
	// the running executable.
	Executable string
	// Version is agentd's version, as the result gives it. Default "".
	Version string
}

// ConnectorsResult is what Connectors measured; `agentd bench connectors
// --json` prints it.
type ConnectorsResult struct {
	// Throughput: Users × PerUser messages, each person's one after the
	// other as its replies come (a person's session takes one turn at a
	// time), all people at once. PerS is messages from the first post to
	// the last reply the fake recorded; a message's time is its post to
	// its reply's last version.
	Users      int     `json:"users"`
	Messages   int     `json:"messages"`
	PerS       float64 `json:"throughput_msgs_per_s"`
	MsgP50ms   float64 `json:"msg_p50_ms"`
	MsgP99ms   float64 `json:"msg_p99_ms"`
	Duplicates int     `json:"duplicate_replies"` // replies to a message beyond its first: 0
	// Latency: the same one-step turn of the same agent definition as
	// POST /v1/sessions/{agent}/{key}/messages?wait=true over TCP (API),
	// and as a Telegram message: from the post (the fake's long poll
	// answers it at once) to the fake receiving sendMessage. Added is the
	// difference of the two's p50 and of their p99.
	Latency       int     `json:"latency_turns"`
	APIP50ms      float64 `json:"api_p50_ms"`
	APIP99ms      float64 `json:"api_p99_ms"`
	TelegramP50ms float64 `json:"telegram_p50_ms"`
	TelegramP99ms float64 `json:"telegram_p99_ms"`
	AddedP50ms    float64 `json:"added_p50_ms"`
	AddedP99ms    float64 `json:"added_p99_ms"`
	// Streaming: Streams replies of StreamChars characters streamed at
	// 200 a second, edited in place; EveryMS is the least time between
	// two edits the connector keeps in a DM. Edits per reply, the most
	// edits of one message in any second, and from the turn's end
	// (turn_end's time) to the reply's final text at the fake.
	Streams        int     `json:"streams"`
	StreamChars    int     `json:"stream_chars"`
	EveryMS        float64 `json:"edit_every_ms"`
	EditsPerMsg    float64 `json:"edits_per_msg"`
	MaxEditsPerS   int     `json:"max_edits_per_s"`
	FinalAfterEnd  float64 `json:"final_after_end_ms"`
	StormEdits     float64 `json:"storm_edits_per_msg"`
	StormMaxPerS   int     `json:"storm_max_edits_per_s"`
	StormFinal     float64 `json:"storm_final_after_end_ms"`
	Storm429       int     `json:"storm_429s"`
	StormDelivered bool    `json:"storm_delivered"`

	RunInfo
}

// connConfig is one Connectors run's counts.
type connConfig struct {
	users, perUser, latency, streams, chars int
	sync, exe, ver                          string
	quick                                   bool
}

func newConnConfig(o *ConnectorsOptions) (connConfig, error) {
	if o == nil {
		o = new(ConnectorsOptions)
	}
	c := connConfig{users: o.Users, perUser: o.PerUser, latency: o.Latency, streams: o.Streams, chars: o.StreamChars,
		sync: o.Synchronous, exe: o.Executable, ver: o.Version, quick: o.Quick}
	def := func(v *int, full, quick int) { orCount(v, full, quick, c.quick) }
	def(&c.users, 50, 5)
	def(&c.perUser, 20, 4)
	def(&c.latency, 500, 20)
	def(&c.streams, 3, 1)
	def(&c.chars, 2000, 400)
	if c.sync == "" {
		c.sync = "full"
	}
	if c.exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return c, err
		}
		c.exe = exe
	}
	return c, nil
}

// The bench's bot, its connector row and its agents: tg, a user agent
// (one instance per person), and minimal, the same definition as a
// permanent agent, for the API's turns.
const (
	benchBotToken  = "777000:BENCH-token"
	benchConnector = "tg-bench"
	// streamRate is the characters a second the fake model streams.
	streamRate = 200
)

// Connectors measures a Telegram connector of agentd serve.
func Connectors(ctx context.Context, o *ConnectorsOptions) (*ConnectorsResult, error) {
	c, err := newConnConfig(o)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "agentd-bench-connectors-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	return runConnectors(ctx, dir, c)
}

// connBench is a running Connectors measure: the fake Bot API, the
// daemon and the clients of both.
type connBench struct {
	c     connConfig
	world *chatfake.World
	srv   *serveChild
	cl    *gateway.Client
	tcp   *http.Client
	tok   string
	// next is the next person's id.
	next int
}

func runConnectors(ctx context.Context, dir string, c connConfig) (*ConnectorsResult, error) {
	res := &ConnectorsResult{Users: c.users, Messages: c.users * c.perUser, Latency: c.latency, Streams: c.streams, StreamChars: c.chars,
		RunInfo: newRunInfo(c.quick, c.sync, c.ver)}
	// One context for both fakes: stop ends the model and Telegram.
	fctx, stop := context.WithCancel(ctx)
	base, _, err := startFake(fctx, "bench", connScript(c.chars))
	if err != nil {
		stop()
		return nil, err
	}
	b := &connBench{c: c, world: chatfake.New(nil), next: 100000}
	tg := telegramfake.New(&telegramfake.Options{World: b.world, Token: benchBotToken})
	defer func() { stop(); tg.Close() }() // Close waits for the server, which ends with fctx
	api, err := tg.Start(fctx, "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if err := writeConnData(dir, base, c.sync); err != nil {
		return nil, err
	}
	if b.srv, err = startServe(ctx, c.exe, dir); err != nil {
		return nil, err
	}
	defer b.srv.stop()
	if b.tok, err = gatewayToken(dir); err != nil {
		return nil, err
	}
	b.cl = gateway.NewUnixClient(filepath.Join(dir, app.SocketFile))
	b.tcp = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	if err := b.putConnector(ctx, api); err != nil {
		return nil, err
	}
	if err := b.throughput(ctx, res); err != nil {
		return nil, err
	}
	if err := b.latency(ctx, res); err != nil {
		return nil, err
	}
	if err := b.streaming(ctx, res, false); err != nil {
		return nil, err
	}
	return res, b.streaming(ctx, res, true)
}

// connScript is the fake model's script: a message starting "stream"
// has a reply of chars characters streamed at streamRate a second; any
// other a short one.
func connScript(chars int) string {
	pieces := max(chars/10, 1)
	gap := time.Second * 10 / streamRate
	return "match ^stream\nchunks " + strconv.Itoa(pieces) + "\ngap " + gap.String() + "\nsay " + streamText(chars) + "\n\n" +
		"match *\nsay ok: {{last_user}}\n"
}

// streamText is a reply of n characters, words of the alphabet.
func streamText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("word" + strconv.Itoa(i%10))
	}
	return strings.TrimSpace(b.String()[:n]) // a script's lines are trimmed
}

// writeConnData writes the API figures' data directory, the agents tg
// (a user agent) and minimal on the fake at base, and lets connectors
// reach the fake Bot API on loopback; the bot token is a secret of the
// directory.
func writeConnData(dir, base, sync string) error {
	if err := writeAPIData(dir, base, sync); err != nil {
		return err
	}
	def := "model:\n  provider: openai\n  name: fake\n  base_url: " + base + "\ntools:\n  builtin: []\nmemory:\n  recall: -1\n"
	if err := os.WriteFile(filepath.Join(dir, agent.AgentsDir, "tg.yaml"), []byte("name: TG\ntype: user\n"+def), 0o600); err != nil {
		return err
	}
	conf := filepath.Join(dir, agent.ConfigFile)
	b, err := os.ReadFile(conf)
	if err != nil {
		return err
	}
	const none = "connectors:\n  # allow_networks: [\"10.20.0.0/16\"]\n  allow_networks: []\n"
	if !strings.Contains(string(b), none) {
		return fmt.Errorf("bench: %s written by agentd init has no %q to change", agent.ConfigFile, none)
	}
	b = []byte(strings.Replace(string(b), none, "connectors:\n  allow_networks: [127.0.0.1/32]\n", 1))
	if err := os.WriteFile(conf, b, 0o600); err != nil {
		return err
	}
	return secret.NewFile(dir).Set("bench_tg", benchBotToken)
}

// putConnector puts the connector row, polling the fake at api, open to
// anyone (pairing is not what is measured), and waits for it to connect.
func (b *connBench) putConnector(ctx context.Context, api string) error {
	spec, _ := json.Marshal(map[string]any{"platform": "telegram", "token": "${secret:bench_tg}", "api_url": api, "agent": "tg",
		"dm_policy": "open", "typing": false})
	st, err := b.cl.PutExtension(ctx, extension.Doc{Type: "integration", Name: benchConnector, Spec: spec}, nil)
	if err == nil && st.Active != st.Version {
		err = fmt.Errorf("not active: %s", st.Error)
	}
	if err != nil {
		return fmt.Errorf("bench: connector: %w", err)
	}
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		d, err := b.cl.Connector(ctx, benchConnector)
		if err == nil && d.State == "connected" {
			return nil
		}
		if time.Now().After(end) || ctx.Err() != nil {
			return fmt.Errorf("bench: connector not connected: %+v %v", d.ConnectorState, err)
		}
	}
}

// person adds a person and their DM with the bot, and returns its id.
func (b *connBench) person() string {
	b.next++
	id := strconv.Itoa(b.next)
	b.world.AddUser(chatfake.User{ID: id, Name: "person " + id})
	b.world.AddChat(chatfake.Chat{ID: id, Kind: chatfake.DM})
	return id
}

// answered waits until the bot's text in chat is want (a reply is not
// threaded to its message: each text the bench waits for is one of its
// chat's alone), and returns that message.
func (b *connBench) answered(ctx context.Context, chat, want string) (chatfake.Message, error) {
	var got chatfake.Message
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err := b.world.Wait(wctx, func() bool {
		for _, m := range b.world.Messages(chat) {
			if m.Text() == want {
				got = m
				return true
			}
		}
		return false
	})
	if err != nil {
		return got, fmt.Errorf("bench: no reply %.40q in chat %s: %w", want, chat, err)
	}
	return got, nil
}

// throughput sends each person's messages one after the other as their
// replies come, every person at once.
func (b *connBench) throughput(ctx context.Context, res *ConnectorsResult) error {
	people := make([]string, b.c.users)
	for i := range people {
		people[i] = b.person()
	}
	var mu sync.Mutex
	var lat []time.Duration
	var first error
	var last time.Time
	t0 := time.Now()
	var wg sync.WaitGroup
	for _, p := range people {
		wg.Go(func() {
			for i := range b.c.perUser {
				text := fmt.Sprintf("m%d from %s", i, p)
				post := b.world.SendAsUser(p, p, text)
				m, err := b.answered(ctx, p, "ok: "+text)
				mu.Lock()
				if err != nil {
					first = cmpErr(first, err)
					mu.Unlock()
					return
				}
				at := m.Versions[len(m.Versions)-1].At
				lat = append(lat, at.Sub(post.At))
				if at.After(last) {
					last = at
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	res.PerS = float64(res.Messages) / last.Sub(t0).Seconds()
	res.MsgP50ms, res.MsgP99ms = pct(lat, 50), pct(lat, 99)
	for _, p := range people {
		seen := map[string]bool{}
		for _, m := range b.world.Messages(p) {
			if seen[m.Text()] {
				res.Duplicates++
			}
			seen[m.Text()] = true
		}
	}
	return nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// latency times the same turn through the API and through Telegram,
// interleaved, each in a session of its own every 20 turns.
func (b *connBench) latency(ctx context.Context, res *ConnectorsResult) error {
	post := newPoster(b.srv.base(), http.Header{"Authorization": {"Bearer " + b.tok}}, b.tcp)
	var viaAPI, viaTG []time.Duration
	person := b.person()
	for i := range b.c.latency {
		if i%20 == 0 && i > 0 {
			person = b.person()
		}
		text := "lat " + strconv.Itoa(i)
		t0 := time.Now()
		if err := post(ctx, "minimal/lat-"+strconv.Itoa(i/20), text); err != nil {
			return fmt.Errorf("bench: latency: the API's turn: %w", err)
		}
		viaAPI = append(viaAPI, time.Since(t0))
		p := b.world.SendAsUser(person, person, text)
		m, err := b.answered(ctx, person, "ok: "+text)
		if err != nil {
			return err
		}
		viaTG = append(viaTG, m.Versions[0].At.Sub(p.At))
	}
	res.APIP50ms, res.APIP99ms = pct(viaAPI, 50), pct(viaAPI, 99)
	res.TelegramP50ms, res.TelegramP99ms = pct(viaTG, 50), pct(viaTG, 99)
	res.AddedP50ms, res.AddedP99ms = res.TelegramP50ms-res.APIP50ms, res.TelegramP99ms-res.APIP99ms
	return nil
}

// streaming sends Streams messages whose replies stream, one after the
// other, and reads how their messages were edited; storm answers every
// fifth edit 429 with retry_after 2 s.
func (b *connBench) streaming(ctx context.Context, res *ConnectorsResult, storm bool) error {
	every := time.Second // the Bot API connector's least time between edits in a DM
	res.EveryMS = ms(every)
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	n429 := func() int { return 0 }
	if storm {
		n429 = b.storm(sctx)
	}
	tag := "calm"
	if storm {
		tag = "storm"
	}
	var edits, maxPerS int
	var after []time.Duration
	want := streamText(b.c.chars)
	for i := range b.c.streams {
		text := fmt.Sprintf("stream %s %d", tag, i)
		person := b.person() // the reply's text is the same each time: a chat of its own
		b.world.SendAsUser(person, person, text)
		m, err := b.answered(ctx, person, want)
		if err != nil {
			return err
		}
		edits += m.Edits()
		maxPerS = max(maxPerS, mostEditsInASecond(m.Versions))
		end, err := b.turnEnd(ctx, text)
		if err != nil {
			return err
		}
		after = append(after, m.Versions[len(m.Versions)-1].At.Sub(end))
	}
	stop()
	if storm {
		res.StormEdits, res.StormMaxPerS, res.StormFinal = float64(edits)/float64(b.c.streams), maxPerS, pct(after, 50)
		res.Storm429, res.StormDelivered = n429(), true
		return nil
	}
	res.EditsPerMsg, res.MaxEditsPerS, res.FinalAfterEnd = float64(edits)/float64(b.c.streams), maxPerS, pct(after, 50)
	return nil
}

// storm fails every fifth editMessageText with a 429 (retry_after 2 s)
// until ctx ends, and returns how many 429s it has set so far.
func (b *connBench) storm(ctx context.Context) func() int {
	// The fake fails the next call of a method it is told to; the storm
	// tells it again each time four more edits went through.
	const method = "editMessageText"
	var set atomic.Int64
	seen := b.world.Count(method)
	go func() {
		for ctx.Err() == nil {
			ch := b.world.Changed()
			if n := b.world.Count(method); n-seen >= 4 {
				b.world.Fail(method, 1, chatfake.Fault{Status: http.StatusTooManyRequests, RetryAfter: 2 * time.Second})
				seen = n + 1
				set.Add(1)
			}
			select {
			case <-ctx.Done():
			case <-ch:
			}
		}
	}()
	return func() int { return int(set.Load()) }
}

// mostEditsInASecond is the most versions after the first made within any one
// second.
func mostEditsInASecond(vs []chatfake.Version) int {
	most := 0
	for i := 1; i < len(vs); i++ {
		j := i
		for j < len(vs) && vs[j].At.Sub(vs[i].At) < time.Second {
			j++
		}
		most = max(most, j-i)
	}
	return most
}

// turnEnd is the time of the turn_end that answered the message text,
// read from the log of the session it went to (any of the run's: the
// full run makes more than a page of people). The streamed text can show
// whole before the turn's end is written: it is looked for again, for up
// to 10 s.
func (b *connBench) turnEnd(ctx context.Context, text string) (time.Time, error) {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		at, ok, err := b.findTurnEnd(ctx, text)
		if err != nil || ok {
			return at, err
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("bench: no turn_end answering %q", text)
		}
	}
}

func (b *connBench) findTurnEnd(ctx context.Context, text string) (time.Time, bool, error) {
	ss, err := b.cl.Sessions(ctx, store.SessionFilter{Limit: 10000})
	if err != nil {
		return time.Time{}, false, err
	}
	for _, s := range ss {
		page, err := b.cl.Events(ctx, s.Address, 0, 10000, 0)
		if err != nil {
			return time.Time{}, false, err
		}
		found := false
		for _, ev := range page.Events {
			switch {
			case ev.Kind == event.Input && strings.Contains(string(ev.Data), text):
				found = true
			case ev.Kind == event.TurnEnd && found:
				return ev.Time, true, nil
			}
		}
	}
	return time.Time{}, false, nil
}

// WriteTable writes the result for people.
func (r *ConnectorsResult) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "# agentd serve with a Telegram connector polling a fake Bot API\nFIGURE\tVALUE\tTARGET\tWHAT\n")
	fmt.Fprintf(tw, "throughput\t%.1f msgs/s\t\t%d people × %d messages, each person's one after the other; first post → last reply at the fake\n",
		r.PerS, r.Users, r.Messages/max(r.Users, 1))
	fmt.Fprintf(tw, "message p50 / p99\t%.1f / %.1f ms\t\ta post → its reply's final text at the fake, under that load\n", r.MsgP50ms, r.MsgP99ms)
	fmt.Fprintf(tw, "duplicate replies\t%d\t0\treplies to a message beyond its first\n", r.Duplicates)
	fmt.Fprintf(tw, "API turn p50 / p99\t%.2f / %.2f ms\t\t%d turns: POST …/messages?wait=true over TCP\n", r.APIP50ms, r.APIP99ms, r.Latency)
	fmt.Fprintf(tw, "Telegram turn p50 / p99\t%.2f / %.2f ms\t\tthe same turn: post (long poll answered) → sendMessage at the fake\n", r.TelegramP50ms, r.TelegramP99ms)
	fmt.Fprintf(tw, "added p50 / p99\t%.2f / %.2f ms\t≤ 5 ms (p50)\tTelegram − API\n", r.AddedP50ms, r.AddedP99ms)
	fmt.Fprintf(tw, "edits per reply\t%.1f\t\t%d replies of %d characters streamed at %d/s\n", r.EditsPerMsg, r.Streams, r.StreamChars, streamRate)
	fmt.Fprintf(tw, "most edits in 1 s\t%d\t≤ %.0f\tof one message (the connector edits at most every %.0f ms)\n", r.MaxEditsPerS, 1000/r.EveryMS, r.EveryMS)
	fmt.Fprintf(tw, "final text after turn_end\t%.0f ms\t\tp50: the turn's end → the message's final text\n", r.FinalAfterEnd)
	fmt.Fprintf(tw, "429 storm: edits per reply\t%.1f\t\tevery 5th edit answered 429 retry_after 2 s (%d 429s)\n", r.StormEdits, r.Storm429)
	fmt.Fprintf(tw, "429 storm: most edits in 1 s\t%d\t≤ %.0f\t\n", r.StormMaxPerS, 1000/r.EveryMS)
	fmt.Fprintf(tw, "429 storm: final after turn_end\t%.0f ms\t\tp50; every final text delivered: %v\n", r.StormFinal, r.StormDelivered)
	if err := tw.Flush(); err != nil {
		return err
	}
	return r.writeFooter(w)
}
