package memory

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"agentd/internal/vector"
)

// Recall tuning.
const (
	candidates   = 50  // taken from each of BM25 and vector search
	rrfK         = 60  // reciprocal rank fusion constant
	recencyShare = 0.3 // share of the score subject to recency decay
	mmrLambda    = 0.7 // relevance versus novelty in MMR
	dupCosine    = 0.9 // cosine at or above which two memories are near-duplicates
	dupJaccard   = 0.8 // word-set overlap at or above which (without vectors) they are
)

// Query asks Recall for memories.
type Query struct {
	Scope  string    // the agent's scope
	Text   string    // what to look for
	K      int       // how many; default DefaultK, at most MaxK
	Shared bool      // include the Shared scope
	Since  time.Time // only memories created at or after this; zero for all
	Kinds  []string  // KindEntity, KindObservation, KindInsight; empty for all
}

// Recall is what Recall found.
type Recall struct {
	Items    []Item // best first
	Degraded bool   // keyword search only
	Reason   string // why, when Degraded
}

var kindKeys = map[string]int64{KindEntity: keyEntity, KindObservation: keyObservation, KindInsight: keyInsight}

// Recall finds the memories of q.Scope (and of Shared, when q.Shared) that
// best match q.Text: BM25 over the FTS index and cosine similarity over the
// embeddings, fused by reciprocal rank, weighted by recency, with
// near-duplicates dropped by maximal marginal relevance. When vectors
// cannot be used, Recall uses BM25 alone and says why in the result.
func (s *Store) Recall(ctx context.Context, q Query) (Recall, error) {
	if err := validScope(q.Scope); err != nil {
		return Recall{}, fmt.Errorf("memory: recall: %w", err)
	}
	text := strings.TrimSpace(q.Text)
	if text == "" {
		return Recall{}, fmt.Errorf("memory: recall: %w: empty query", ErrInvalid)
	}
	if len(text) > MaxTextLen {
		return Recall{}, fmt.Errorf("memory: recall: %w: query longer than %d bytes", ErrInvalid, MaxTextLen)
	}
	switch {
	case q.K < 0:
		return Recall{}, fmt.Errorf("memory: recall: %w: negative k", ErrInvalid)
	case q.K == 0:
		q.K = DefaultK
	case q.K > MaxK:
		q.K = MaxK
	}
	var kinds []int64
	for _, k := range q.Kinds {
		key, ok := kindKeys[k]
		if !ok {
			return Recall{}, fmt.Errorf("memory: recall: %w: kind %q: want %s, %s or %s", ErrInvalid, k, KindEntity, KindObservation, KindInsight)
		}
		if !slices.Contains(kinds, key) {
			kinds = append(kinds, key)
		}
	}
	scopes := []string{q.Scope}
	if q.Shared && q.Scope != Shared {
		scopes = append(scopes, Shared)
	}
	limit := candidates
	if !q.Since.IsZero() {
		limit *= 4 // some candidates will be too old
	}

	var res Recall
	if err := s.use(ctx, false); errors.Is(err, errEmpty) {
		res.Degraded, res.Reason = s.Status()
		return res, nil
	} else if err != nil {
		return Recall{}, fmt.Errorf("memory: recall: %w", err)
	}
	s.refreshStatus()
	res.Degraded, res.Reason = s.Status()
	if held, err := s.holdsAny(ctx, scopes); err != nil || !held {
		return res, err
	}

	terms := queryTerms(text)
	searched, err := s.selectTerms(ctx, terms)
	if err != nil {
		return Recall{}, err
	}
	var vec []vector.Hit
	var vecErr error
	vecDone := make(chan struct{})
	if !res.Degraded {
		// Vector search runs beside keyword search; Recall waits for it.
		go func() {
			defer close(vecDone)
			vec, vecErr = s.vectorSearch(ctx, text, scopes, kinds, limit)
		}()
	} else {
		close(vecDone)
	}
	bm, err := s.keyword(ctx, searched, scopes, kinds, limit)
	<-vecDone
	if err != nil {
		return Recall{}, err
	}
	if !res.Degraded {
		if err := vecErr; err != nil {
			if ctx.Err() != nil {
				return Recall{}, fmt.Errorf("memory: recall: %w", ctx.Err())
			}
			s.setDown(err)
			res.Degraded, res.Reason = true, "embedder unavailable: "+err.Error()
		}
	}

	fused := map[int64]float64{}
	for i, k := range bm {
		fused[k] += 1 / float64(rrfK+i+1)
	}
	for i, h := range vec {
		fused[h.ID] += 1 / float64(rrfK+i+1)
	}
	keys := make([]int64, 0, len(fused))
	for k := range fused {
		keys = append(keys, k)
	}
	got, err := s.items(ctx, keys, scopes)
	if err != nil {
		return Recall{}, s.dbErr("recall", err)
	}
	now := s.now()
	cands := make([]cand, 0, len(got))
	for k, it := range got {
		if !q.Since.IsZero() && it.Created.Before(q.Since) {
			continue
		}
		age := max(0, now.Sub(it.Created).Seconds())
		decay := math.Exp2(-age / s.halfLife.Seconds())
		it.Score = fused[k] * ((1 - recencyShare) + recencyShare*decay)
		it.Snippet = snippet(it.Text, terms)
		cands = append(cands, cand{key: k, item: it})
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if c := cmp.Compare(b.item.Score, a.item.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	if err := s.candVectors(ctx, cands); err != nil {
		return Recall{}, s.dbErr("recall", err)
	}
	for _, c := range mmr(cands, q.K) {
		res.Items = append(res.Items, c.item)
	}
	return res, nil
}

type cand struct {
	key   int64
	item  Item
	vec   []float32       // nil when not embedded
	words map[string]bool // for similarity without vectors
}

// holdsAny reports whether any of scopes holds a memory: an agent's scope
// is empty until it remembers something, and recall runs in every turn.
// It probes the scope indexes of entities and insights (an observation
// belongs to an entity of its scope), which costs a fraction of opening
// the keyword index, and in SQLite, which only this process writes (the
// data directory's lock), it keeps the scopes found empty until the next
// write. PostgreSQL may be written by other nodes: there it asks every
// time.
func (s *Store) holdsAny(ctx context.Context, scopes []string) (bool, error) {
	_, keep := s.idx.(ftsIndex)
	gen, known := s.empty.known(scopes)
	if keep && known {
		return false, nil
	}
	in := "?"
	args := []any{scopes[0], scopes[0]}
	if len(scopes) == 2 {
		in = "?, ?"
		args = []any{scopes[0], scopes[1], scopes[0], scopes[1]}
	}
	held, _, err := queryInt(ctx, prepared{s}, `SELECT CASE WHEN
		EXISTS (SELECT 1 FROM entities WHERE scope IN (`+in+`)) OR
		EXISTS (SELECT 1 FROM insights WHERE scope IN (`+in+`)) THEN 1 ELSE 0 END`, args...)
	if err != nil {
		return false, s.dbErr("recall", err)
	}
	if held == 0 && keep {
		s.empty.found(scopes, gen)
	}
	return held == 1, nil
}

// emptyScopes are the scopes recall found to hold no memory, as of a
// generation that every write ends by advancing: an answer found while a
// write ran is not kept. Bounded: past maxEmptyScopes it starts again.
// Its lock is a leaf (writes take it under Store.wmu).
type emptyScopes struct {
	mu    sync.Mutex
	gen   uint64
	empty map[string]bool
}

const maxEmptyScopes = 1024

// known reports whether every one of scopes is known to be empty, and the
// generation to pass to found.
func (e *emptyScopes) known(scopes []string) (gen uint64, empty bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, sc := range scopes {
		if !e.empty[sc] {
			return e.gen, false
		}
	}
	return e.gen, true
}

// found records scopes as empty, as a search that began at gen saw them,
// unless something was written since.
func (e *emptyScopes) found(scopes []string, gen uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if gen != e.gen {
		return
	}
	if e.empty == nil || len(e.empty) >= maxEmptyScopes {
		e.empty = make(map[string]bool)
	}
	for _, sc := range scopes {
		e.empty[sc] = true
	}
}

// wrote forgets every scope found empty: a write may have filled it.
func (e *emptyScopes) wrote() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.gen++
	clear(e.empty)
}

// termBudget bounds the documents a keyword search scores: BM25 is
// computed for every document matching any query word, so the commonest
// words are left out once the rarer ones already match this many. They
// would add little: BM25 weighs a word by its rarity.
const termBudget = 4000

// selectTerms returns the query words worth searching for: the rarest
// that occurs at all, then commoner ones while the documents they match
// stay within termBudget.
func (s *Store) selectTerms(ctx context.Context, terms []string) ([]string, error) {
	if len(terms) <= 1 {
		return terms, nil
	}
	type tf struct {
		term string
		docs int64
	}
	counts := make([]tf, len(terms))
	for i, t := range terms {
		n, err := s.idx.docs(ctx, prepared{s}, t)
		if err != nil {
			return nil, s.dbErr("recall: keyword search", err)
		}
		counts[i] = tf{term: t, docs: n}
	}
	slices.SortStableFunc(counts, func(a, b tf) int { return cmp.Compare(a.docs, b.docs) })
	var out []string
	total := int64(0)
	for _, c := range counts {
		switch {
		case c.docs < 0:
			out = append(out, c.term)
			continue
		case c.docs == 0:
			continue // matches nothing
		case len(out) > 0 && total+c.docs > termBudget:
			return out, nil
		}
		total += c.docs
		out = append(out, c.term)
	}
	return out, nil
}

// keyword returns the keys of up to limit items of scopes and kinds that
// match terms, best (BM25) first. It first ranks all matches and keeps
// those of scopes and kinds, which is quick; only when other scopes crowd
// the ranking out does it rank within scopes and kinds, which costs more
// because every item of the scopes takes part.
func (s *Store) keyword(ctx context.Context, terms, scopes []string, kinds []int64, limit int) ([]int64, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	over := 2 * limit
	keys, err := s.idx.search(ctx, prepared{s}, terms, nil, nil, over)
	if err != nil {
		return nil, s.dbErr("recall: keyword search", err)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	full := len(keys) == over // more matches than were ranked
	if len(kinds) > 0 {
		keys = slices.DeleteFunc(keys, func(k int64) bool { return !slices.Contains(kinds, keyKind(k)) })
	}
	scopeOf, err := s.scopes(ctx, keys)
	if err != nil {
		return nil, s.dbErr("recall: keyword search", err)
	}
	kept := slices.DeleteFunc(slices.Clone(keys), func(k int64) bool { return !slices.Contains(scopes, scopeOf[k]) })
	if len(kept) >= limit || !full {
		return kept[:min(len(kept), limit)], nil
	}
	keys, err = s.idx.search(ctx, prepared{s}, terms, scopes, kinds, limit)
	if err != nil {
		return nil, s.dbErr("recall: keyword search", err)
	}
	return keys, nil
}

// scopes returns the scope of each item key.
func (s *Store) scopes(ctx context.Context, keys []int64) (map[int64]string, error) {
	if len(keys) == 0 {
		return map[int64]string{}, nil
	}
	// The keys are numbers this package made: written into the
	// statement, as a VALUES list both databases read.
	list := make([]byte, 0, 10*len(keys))
	for i, k := range keys {
		if i > 0 {
			list = append(list, ',')
		}
		list = append(list, '(')
		list = strconv.AppendInt(list, k, 10)
		list = append(list, ')')
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT k, `+itemScope+`
		FROM (SELECT column1 AS k FROM (VALUES `+string(list)+`) AS v) ks `+itemJoin)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[int64]string, len(keys))
	for rows.Next() {
		var k int64
		var sc sql.NullString
		if err := rows.Scan(&k, &sc); err != nil {
			return nil, err
		}
		out[k] = sc.String
	}
	return out, rows.Err()
}

// vectorSearch embeds text and returns the nearest items of scopes, best
// first.
func (s *Store) vectorSearch(ctx context.Context, text string, scopes []string, kinds []int64, limit int) ([]vector.Hit, error) {
	ectx, cancel := context.WithTimeout(ctx, s.qTimeout)
	defer cancel()
	vs, err := s.emb.Embed(ectx, []string{text})
	if err != nil {
		return nil, fmt.Errorf("embed query: %w", err)
	}
	if len(vs) != 1 {
		return nil, fmt.Errorf("embed query: %d vectors for 1 text", len(vs))
	}
	qv := vs[0]
	if !vector.Normalize(qv) {
		return nil, nil // nothing embeddable in the query: keyword search only
	}
	var filter func(int64) bool
	if len(kinds) > 0 && len(kinds) < 3 {
		filter = func(id int64) bool { return slices.Contains(kinds, keyKind(id)) }
	}
	var hits []vector.Hit
	for _, sc := range scopes {
		s.imu.RLock()
		x := s.index[sc]
		s.imu.RUnlock()
		if x != nil {
			hits = append(hits, x.Search(qv, limit, filter)...)
		}
	}
	// Drop hits too far from the query to count as matches at all: in a
	// small memory the nearest 50 include unrelated ones.
	hits = slices.DeleteFunc(hits, func(h vector.Hit) bool { return float64(h.Score) < s.minSim })
	if len(scopes) > 1 {
		slices.SortFunc(hits, func(a, b vector.Hit) int {
			if c := cmp.Compare(b.Score, a.Score); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		})
		hits = hits[:min(len(hits), limit)]
	}
	return hits, nil
}

// candVectors loads the stored vectors of the candidates (for MMR), and
// the word sets of those without one.
func (s *Store) candVectors(ctx context.Context, cs []cand) error {
	if len(cs) == 0 {
		return nil
	}
	pos := make(map[int64]int, len(cs))
	keys := make([]int64, len(cs))
	for i, c := range cs {
		pos[c.key] = i
		keys[i] = c.key
	}
	if s.emb != nil {
		in, args := inList(keys)
		args = append(args, s.model)
		rows, err := s.rdb.QueryContext(ctx, `SELECT key, vec FROM vectors WHERE key IN (`+in+`) AND model = ?`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k int64
			var blob []byte
			if err := rows.Scan(&k, &blob); err != nil {
				return err
			}
			if v, err := vector.Decode(blob); err == nil {
				cs[pos[k]].vec = v
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
	}
	for i := range cs {
		if cs[i].vec == nil {
			cs[i].words = map[string]bool{}
			words(cs[i].item.Text, func(w string, _, _ int) { cs[i].words[w] = true })
		}
	}
	return nil
}

// similarity is the cosine of two candidates' vectors, or, when one is
// missing, the overlap (Jaccard) of their word sets scaled so that the
// near-duplicate thresholds line up.
func similarity(a, b *cand) float64 {
	if a.vec != nil && b.vec != nil && len(a.vec) == len(b.vec) {
		return float64(vector.Dot(a.vec, b.vec))
	}
	aw, bw := a.words, b.words
	if aw == nil {
		aw = map[string]bool{}
		words(a.item.Text, func(w string, _, _ int) { aw[w] = true })
	}
	if bw == nil {
		bw = map[string]bool{}
		words(b.item.Text, func(w string, _, _ int) { bw[w] = true })
	}
	inter := 0
	for w := range aw {
		if bw[w] {
			inter++
		}
	}
	union := len(aw) + len(bw) - inter
	if union == 0 {
		return 1
	}
	return float64(inter) / float64(union) * dupCosine / dupJaccard
}

// mmr picks up to k candidates (sorted best first) by maximal marginal
// relevance: each step takes the one maximising
// λ·relevance − (1−λ)·(its greatest similarity to those already taken),
// relevance being the score relative to the best. A candidate as similar
// as a near-duplicate to one already taken is dropped.
func mmr(cs []cand, k int) []cand {
	if len(cs) == 0 {
		return nil
	}
	top := cs[0].item.Score
	if top <= 0 {
		top = 1
	}
	maxSim := make([]float64, len(cs))
	taken := make([]bool, len(cs))
	var out []cand
	for len(out) < k {
		best, bestV := -1, math.Inf(-1)
		for i := range cs {
			if taken[i] || maxSim[i] >= dupCosine {
				continue
			}
			v := mmrLambda*cs[i].item.Score/top - (1-mmrLambda)*max(0, maxSim[i])
			if v > bestV {
				best, bestV = i, v
			}
		}
		if best < 0 {
			break
		}
		taken[best] = true
		out = append(out, cs[best])
		for i := range cs {
			if !taken[i] {
				maxSim[i] = max(maxSim[i], similarity(&cs[i], &cs[best]))
			}
		}
	}
	return out
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// stmt returns the prepared statement of query on the read pool,
// preparing it on first use (each connection of the pool prepares it once).
// prepared runs recall's reads as statements the store prepares once and
// keeps (stmt): preparing them again on every turn cost a tenth of a turn.
type prepared struct{ s *Store }

func (p prepared) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := p.s.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (s *Store) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st := s.stmts[query]; st != nil {
		return st, nil
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	st, err := s.rdb.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if s.stmts == nil {
		s.stmts = map[string]*sql.Stmt{}
	}
	s.stmts[query] = st
	return st, nil
}
