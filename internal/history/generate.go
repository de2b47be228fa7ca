package history

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"agentd/internal/event"
	"agentd/internal/store"
	"agentd/internal/store/sqlite"
)

// GenerateEpoch returns when the histories GenerateHistory writes begin;
// they span GenerateSpan from there.
func GenerateEpoch() time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) }

// GenerateSpan is the time the generated histories cover.
const GenerateSpan = 365 * 24 * time.Hour

// maxGenerateBatch is the most events GenerateHistory commits at once.
const maxGenerateBatch = 4096

// GenerateHistory fills st with a synthetic corpus for tests and
// benchmarks: sessions sessions spread over agents agents ("agent-0", …),
// holding messages messages in all, alternating user inputs and assistant
// texts of varied, plausible technical chat (a few hundred topic words
// drawn with a skewed distribution, identifiers, numbers, hosts). Each
// session's messages are minutes apart, starting at a random time of
// GenerateSpan after GenerateEpoch(). The same arguments give the same text.
// It commits thousands of events at a time, several sessions at once.
func GenerateHistory(ctx context.Context, st *sqlite.Store, agents, sessions, messages int, seed int64) error {
	switch {
	case agents <= 0 || sessions <= 0 || messages < 0:
		return fmt.Errorf("history: generate: want agents > 0, sessions > 0, messages >= 0; got %d, %d, %d", agents, sessions, messages)
	case sessions < agents:
		return fmt.Errorf("history: generate: %d sessions for %d agents: want at least one each", sessions, agents)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	per, extra := messages/sessions, messages%sessions
	for i := range sessions {
		n := per
		if i < extra {
			n++
		}
		g.Go(func() error { return generateSession(gctx, st, i, agents, n, seed) })
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("history: generate: %w", err)
	}
	return nil
}

func generateSession(ctx context.Context, st *sqlite.Store, i, agents, n int, seed int64) error {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
	agent := "agent-" + strconv.Itoa(i%agents)
	key := fmt.Sprintf("chat:%s-%d", userNames[rng.IntN(len(userNames))], i)
	sess, _, err := st.Session(ctx, agent, key)
	if err != nil {
		return err
	}
	t := GenerateEpoch().Add(time.Duration(rng.Int64N(int64(GenerateSpan))))
	batch := &store.Batch{Session: sess.ID, Events: make([]event.Event, 0, min(n, maxGenerateBatch))}
	var sb strings.Builder
	topic := rng.IntN(len(topics))
	for m := range n {
		t = t.Add(time.Duration(5+rng.IntN(600)) * time.Second)
		if rng.IntN(8) == 0 {
			topic = rng.IntN(len(topics)) // the conversation moves on
		}
		sb.Reset()
		turn := int64(m/2 + 1)
		var e event.Event
		if m%2 == 0 {
			userMessage(&sb, rng, topic)
			e = event.New(sess.ID, turn, event.Input, event.InputData{Text: sb.String(), Source: "cli"})
		} else {
			assistantMessage(&sb, rng, topic)
			e = event.New(sess.ID, turn, event.Text, event.TextData{Text: sb.String(), Step: 1})
		}
		e.Time = t
		batch.Events = append(batch.Events, e)
		if len(batch.Events) == maxGenerateBatch || m == n-1 {
			if err := st.Commit(ctx, batch); err != nil {
				return err
			}
			batch.Events = batch.Events[:0]
		}
	}
	return nil
}

// word draws a word of a topic, the first ones far more often (a skewed,
// roughly Zipf-like distribution, as in real text).
func word(rng *rand.Rand, list []string) string {
	// The minimum of two uniform draws favours small indexes.
	return list[min(rng.IntN(len(list)), rng.IntN(len(list)), rng.IntN(len(list)))]
}

func userMessage(sb *strings.Builder, rng *rand.Rand, topic int) {
	sb.WriteString(openers[rng.IntN(len(openers))])
	sentence(sb, rng, topic, 6+rng.IntN(10))
	if rng.IntN(3) == 0 {
		sb.WriteString(" ")
		sb.WriteString(questions[rng.IntN(len(questions))])
	}
}

func assistantMessage(sb *strings.Builder, rng *rand.Rand, topic int) {
	for s := range 1 + rng.IntN(4) {
		if s > 0 {
			sb.WriteString(" ")
		}
		sentence(sb, rng, topic, 8+rng.IntN(16))
	}
}

// sentence writes about n words: topic words, common words and now and
// then an identifier, a number or a host name.
func sentence(sb *strings.Builder, rng *rand.Rand, topic, n int) {
	for w := range n {
		if w > 0 {
			sb.WriteByte(' ')
		}
		switch r := rng.IntN(100); {
		case r < 38:
			sb.WriteString(word(rng, topics[topic]))
		case r < 44:
			sb.WriteString(word(rng, topics[rng.IntN(len(topics))]))
		case r < 46:
			fmt.Fprintf(sb, "%s-%d", idPrefixes[rng.IntN(len(idPrefixes))], rng.IntN(10000))
		case r < 48:
			fmt.Fprintf(sb, "%s-%02d.%s", hostRoles[rng.IntN(len(hostRoles))], rng.IntN(40), word(rng, topics[topic]))
		case r < 50:
			sb.WriteString(strconv.Itoa(rng.IntN(5000)))
		default:
			sb.WriteString(word(rng, common))
		}
	}
	sb.WriteByte('.')
}

var (
	userNames  = []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory", "oscar", "peggy", "trent", "victor", "walter"}
	idPrefixes = []string{"ERR", "INC", "PR", "JIRA", "TICKET", "BUILD", "REQ", "CVE"}
	hostRoles  = []string{"db", "api", "web", "cache", "worker", "queue", "edge", "auth"}
	openers    = []string{"", "Hi, ", "Hey, ", "Quick question: ", "Can you check ", "Please look at ", "Remind me about ", "I think ", "Yesterday ", "Follow-up: ", "Can we ", "Why does "}
	questions  = []string{"Any idea why?", "What should we do?", "Is that expected?", "Can you summarise?", "How long will it take?", "Who owns this?", "Is there a workaround?", "Should I roll back?"}
	common     = []string{
		"the", "a", "to", "and", "of", "in", "is", "it", "that", "for", "on", "with", "we", "this", "was", "be",
		"not", "are", "after", "before", "again", "still", "now", "then", "when", "because", "but", "so", "if",
		"all", "some", "every", "new", "old", "last", "next", "first", "same", "other", "more", "less", "very",
		"looks", "seems", "think", "need", "want", "should", "could", "would", "will", "can", "did", "does",
		"today", "yesterday", "tomorrow", "week", "morning", "night", "team", "customer", "users", "change",
		"problem", "issue", "fix", "plan", "idea", "question", "answer", "result", "number", "time", "way",
	}
	topics = [][]string{
		{"database", "postgres", "migration", "schema", "index", "query", "replica", "vacuum", "table", "column", "transaction", "deadlock", "backup", "restore", "connection", "pool", "latency", "sqlite", "wal", "checkpoint", "foreign", "constraint", "rollback", "timeout", "primary"},
		{"deploy", "release", "pipeline", "build", "docker", "image", "kubernetes", "pod", "helm", "rollout", "canary", "staging", "production", "artifact", "registry", "tag", "container", "node", "cluster", "manifest", "namespace", "ingress", "secret", "config", "version"},
		{"invoice", "payment", "refund", "subscription", "customer", "billing", "stripe", "charge", "plan", "discount", "tax", "receipt", "currency", "checkout", "card", "declined", "dispute", "renewal", "trial", "pricing", "quote", "contract", "ledger", "balance", "payout"},
		{"meeting", "calendar", "schedule", "agenda", "notes", "standup", "retro", "roadmap", "deadline", "milestone", "sprint", "priority", "estimate", "review", "feedback", "decision", "owner", "action", "summary", "slides", "demo", "quarter", "goal", "okr", "hiring"},
		{"error", "exception", "stacktrace", "panic", "crash", "bug", "regression", "reproduce", "logs", "trace", "debug", "breakpoint", "nil", "pointer", "overflow", "leak", "memory", "cpu", "profile", "flamegraph", "race", "goroutine", "mutex", "signal", "core"},
		{"model", "prompt", "token", "embedding", "context", "inference", "finetune", "dataset", "evaluation", "benchmark", "temperature", "completion", "agent", "tool", "retrieval", "vector", "rerank", "hallucination", "latency", "throughput", "gpu", "batch", "quantization", "weights", "tokenizer"},
		{"travel", "flight", "hotel", "booking", "paris", "berlin", "tokyo", "london", "train", "airport", "passport", "visa", "luggage", "itinerary", "conference", "dinner", "restaurant", "taxi", "weather", "rain", "sunny", "museum", "ticket", "delay", "gate"},
		{"security", "certificate", "tls", "password", "token", "oauth", "login", "session", "firewall", "vulnerability", "patch", "audit", "permission", "role", "key", "rotation", "encryption", "phishing", "incident", "alert", "mfa", "sso", "policy", "scan", "compliance"},
		{"frontend", "react", "css", "layout", "button", "component", "render", "browser", "mobile", "responsive", "accessibility", "font", "color", "theme", "animation", "bundle", "webpack", "typescript", "form", "validation", "modal", "navigation", "dashboard", "chart", "table"},
		{"garden", "tomatoes", "compost", "seeds", "water", "soil", "harvest", "roses", "pruning", "greenhouse", "basil", "weeds", "fertilizer", "spring", "autumn", "frost", "sunlight", "shade", "pots", "mulch", "bees", "lavender", "apple", "pear", "hedge"},
	}
)

// BenchQueries returns n search queries of one to three words that
// GenerateHistory's text contains, for benchmarks: mostly words of one
// topic, as a person looking for a conversation would type them.
func BenchQueries(n int, seed int64) []string {
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	out := make([]string, n)
	for i := range out {
		t := topics[rng.IntN(len(topics))]
		words := make([]string, 1+rng.IntN(3))
		for j := range words {
			words[j] = t[rng.IntN(len(t))]
		}
		out[i] = strings.Join(words, " ")
	}
	return out
}
