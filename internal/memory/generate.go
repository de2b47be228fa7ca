package memory

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Generate writes n synthetic memories into scope, for benchmarks and
// demonstrations: about two thirds are observations about a pool of people,
// projects and services, the rest free-form insights, with plausible text
// drawn from templates. The same seed gives the same memories. Creation
// times are spread over the year before the Store's clock. It writes in
// large transactions and leaves the memories pending for Run to embed.
func Generate(ctx context.Context, s *Store, scope string, n int, seed int64) error {
	if err := validScope(scope); err != nil {
		return fmt.Errorf("memory: generate: %w", err)
	}
	if n < 0 {
		return fmt.Errorf("memory: generate: %w: negative count", ErrInvalid)
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x6d656d6f7279))
	now := s.now()
	const perTx = 1000
	for done := 0; done < n; {
		batch := min(perTx, n-done)
		err := s.write(ctx, "generate", func(tx *sql.Tx) error {
			for i := range batch {
				at := now.Add(-time.Duration(r.Int64N(int64(365 * 24 * time.Hour)))).UnixNano()
				p := Provenance{Session: fmt.Sprintf("chat:user%d", r.IntN(50)), Turn: int64(done+i)/4 + 1}
				for { // until the memory is new, not a repeat of an observation
					res, err := s.rememberTx(ctx, tx, scope, synthetic(r), p, at)
					if err != nil {
						return err
					}
					if res.Duplicates == 0 {
						break
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		done += batch
	}
	s.countBacklog(ctx)
	s.poke()
	return nil
}

var (
	genFirst   = strings.Fields("Alice Bob Carol Dmitri Elena Farid Grace Hiro Ines Jonas Keiko Liam Maya Noor Oscar Priya Quentin Rosa Sven Tariq Uma Victor Wen Ximena Yusuf Zoe")
	genLast    = strings.Fields("Chen Garcia Okafor Novak Silva Tanaka Müller Haddad Kowalski Larsen Moreau Patel Rossi Schmidt Ivanova Nakamura")
	genProject = strings.Fields("billing-service search-indexer mobile-app data-pipeline auth-gateway design-system onboarding-flow ml-ranker invoice-export status-page")
	genOrg     = strings.Fields("Acme Globex Initech Umbrella Hooli Stark Wayne Tyrell Soylent Cyberdyne")
	genTopic   = []string{"the quarterly roadmap", "database migrations", "the on-call rotation", "flaky integration tests",
		"the pricing page", "customer churn", "the incident review", "API rate limits", "the hiring plan", "accessibility fixes",
		"the release checklist", "cloud costs", "the security audit", "latency in the EU region", "the style guide"}
	genThing = []string{"green tea", "dark mode", "short meetings", "written proposals", "Go", "Rust", "TypeScript", "Postgres",
		"SQLite", "morning standups", "async updates", "pair programming", "detailed tickets", "Vim", "long walks"}
	genDay  = strings.Fields("Monday Tuesday Wednesday Thursday Friday")
	genCity = strings.Fields("Berlin Lisbon Tokyo Toronto Nairobi Austin Warsaw Seoul Lyon Oslo")
)

var genObs = []func(r *rand.Rand) string{
	func(r *rand.Rand) string { return "prefers " + pick(r, genThing) + " over " + pick(r, genThing) },
	func(r *rand.Rand) string { return "is responsible for " + pick(r, genTopic) },
	func(r *rand.Rand) string {
		return "lives in " + pick(r, genCity) + " and works remotely on " + pick(r, genDay) + "s"
	},
	func(r *rand.Rand) string {
		return "asked for a summary of " + pick(r, genTopic) + " every " + pick(r, genDay)
	},
	func(r *rand.Rand) string {
		return "was blocked by " + pick(r, genProject) + " while working on " + pick(r, genTopic)
	},
	func(r *rand.Rand) string { return "reports to " + pick(r, genFirst) + " " + pick(r, genLast) },
	func(r *rand.Rand) string {
		return fmt.Sprintf("had a %d%% error rate after the %s deploy", 1+r.IntN(40), pick(r, genDay))
	},
	func(r *rand.Rand) string { return "depends on " + pick(r, genProject) + " for " + pick(r, genTopic) },
	func(r *rand.Rand) string {
		return "signed a contract with " + pick(r, genOrg) + " in " + pick(r, genCity)
	},
	func(r *rand.Rand) string {
		return "dislikes " + pick(r, genThing) + " and avoids meetings on " + pick(r, genDay)
	},
}

var genInsight = []func(r *rand.Rand) string{
	func(r *rand.Rand) string {
		return "Deploys of " + pick(r, genProject) + " tend to fail when " + pick(r, genTopic) + " is not finished first."
	},
	func(r *rand.Rand) string {
		return "The team agreed to review " + pick(r, genTopic) + " every other " + pick(r, genDay) + "."
	},
	func(r *rand.Rand) string {
		return pick(r, genOrg) + " cares most about " + pick(r, genTopic) + "; lead with that in proposals."
	},
	func(r *rand.Rand) string {
		return "When users ask about " + pick(r, genTopic) + ", point them to the " + pick(r, genProject) + " docs."
	},
	func(r *rand.Rand) string {
		return fmt.Sprintf("Response times in %s improved by %d%% after switching to %s.", pick(r, genCity), 5+r.IntN(60), pick(r, genThing))
	},
}

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

// synthetic makes the i-th synthetic memory.
func synthetic(r *rand.Rand) Remember {
	if r.IntN(3) == 2 {
		return Remember{Insight: pick(r, genInsight)(r), Tags: []string{pick(r, genProject)}}
	}
	var name, typ string
	switch r.IntN(4) {
	case 0:
		name, typ = pick(r, genProject), "project"
	case 1:
		name, typ = pick(r, genOrg), "company"
	default:
		name, typ = pick(r, genFirst)+" "+pick(r, genLast), "person"
	}
	return Remember{Entities: []EntityInput{{Name: name, Type: typ, Observations: []string{pick(r, genObs)(r)}}}}
}
