package tokens

// mergeHeapFrom is the piece length, in bytes, from which merge keeps its
// candidates in a heap: a scan for the lowest rank costs O(n) a merge, so
// O(n²) a piece, which only short pieces can afford.
const mergeHeapFrom = 96

// noRank marks a pair that is no token.
const noRank = ^uint32(0)

// merge returns how many tokens byte-pair encoding leaves of piece, which
// is no token itself: starting from its bytes, the adjacent pair whose
// joined bytes have the lowest rank is merged (the leftmost of equals),
// until no pair is a token. scratch is reused between calls.
func (v *vocab) merge(piece string, scratch []int32) (int, []int32) {
	if len(piece) >= mergeHeapFrom {
		return v.mergeHeap(piece), scratch
	}
	// bounds[k] is where part k starts; ranks[k] the rank of parts k and
	// k+1 joined.
	n := len(piece)
	scratch = scratch[:0]
	for i := 0; i <= n; i++ {
		scratch = append(scratch, int32(i))
	}
	bounds := scratch
	var ranksBuf [mergeHeapFrom]uint32
	ranks := ranksBuf[:n]
	pair := func(k int) uint32 {
		if k+2 >= len(bounds) {
			return noRank
		}
		if r, ok := v.rank(piece[bounds[k]:bounds[k+2]]); ok {
			return r
		}
		return noRank
	}
	for k := range ranks {
		ranks[k] = pair(k)
	}
	for len(bounds) > 2 {
		best, at := noRank, -1
		for k, r := range ranks[:len(bounds)-2] {
			if r < best {
				best, at = r, k
			}
		}
		if at < 0 {
			break
		}
		// Parts at and at+1 become one: drop the boundary between them.
		bounds = append(bounds[:at+1], bounds[at+2:]...)
		ranks = append(ranks[:at+1], ranks[at+2:]...)
		ranks[at] = pair(at)
		if at > 0 {
			ranks[at-1] = pair(at - 1)
		}
	}
	return len(bounds) - 1, scratch
}

// mergeHeap is merge for long pieces: the parts are a linked list and the
// pairs that are tokens a heap ordered by rank, then position; an entry
// whose pair has changed since it was pushed is skipped when popped.
func (v *vocab) mergeHeap(piece string) int {
	n := int32(len(piece))
	type node struct {
		prev, next int32 // -1 at the ends; next == -2 once merged away
		rank       uint32
	}
	nodes := make([]node, n)
	for i := range nodes {
		nodes[i] = node{prev: int32(i) - 1, next: int32(i) + 1, rank: noRank}
	}
	nodes[n-1].next = -1
	end := func(i int32) int32 { // where part i ends
		if j := nodes[i].next; j >= 0 {
			return j
		}
		return n
	}
	pairRank := func(i int32) uint32 {
		j := nodes[i].next
		if j < 0 {
			return noRank
		}
		if r, ok := v.rank(piece[i:end(j)]); ok {
			return r
		}
		return noRank
	}
	h := mergeHeap{}
	for i := int32(0); i < n; i++ {
		if r := pairRank(i); r != noRank {
			nodes[i].rank = r
			h.push(candidate{r, i})
		}
	}
	parts := int(n)
	for len(h) > 0 {
		c := h.pop()
		if nodes[c.pos].next == -2 || nodes[c.pos].rank != c.rank {
			continue // stale
		}
		j := nodes[c.pos].next
		nodes[c.pos].next = nodes[j].next
		if k := nodes[j].next; k >= 0 {
			nodes[k].prev = c.pos
		}
		nodes[j].next, nodes[j].rank = -2, noRank
		parts--
		// The pairs around the merged part have changed (and so has
		// their rank: a token is longer than either of its halves).
		for _, i := range [2]int32{c.pos, nodes[c.pos].prev} {
			if i < 0 {
				continue
			}
			r := pairRank(i)
			nodes[i].rank = r
			if r != noRank {
				h.push(candidate{r, i})
			}
		}
	}
	return parts
}

type candidate struct {
	rank uint32
	pos  int32
}

// mergeHeap is a binary min-heap of candidates by (rank, pos).
type mergeHeap []candidate

func (h mergeHeap) less(a, b int) bool {
	return h[a].rank < h[b].rank || h[a].rank == h[b].rank && h[a].pos < h[b].pos
}

func (h *mergeHeap) push(c candidate) {
	*h = append(*h, c)
	for i := len(*h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		(*h)[i], (*h)[p] = (*h)[p], (*h)[i]
		i = p
	}
}

func (h *mergeHeap) pop() candidate {
	old := *h
	top := old[0]
	last := len(old) - 1
	old[0] = old[last]
	*h = old[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.less(l, m) {
			m = l
		}
		if r < last && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		old[i], old[m] = old[m], old[i]
		i = m
	}
	return top
}
