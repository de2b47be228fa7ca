package vector

import (
	"cmp"
	"slices"
)

// Hit is one search result: the id of a stored vector and its score, the dot
// product with the query (the cosine similarity when both are unit length).
type Hit struct {
	ID    int64
	Score float32
}

// TopK returns the k vectors most similar to query, best first, scored by
// Dot. ids[i] names vecs[i]; when the two slices differ in length, the extra
// elements of the longer are ignored. Equal scores are ordered by smaller
// ID. Vectors whose score is NaN are skipped. k <= 0 returns nil.
func TopK(query []float32, ids []int64, vecs [][]float32, k int) []Hit {
	n := min(len(ids), len(vecs))
	if k <= 0 || n == 0 {
		return nil
	}
	h := newHeap(min(k, n))
	for i := range n {
		h.offer(ids[i], Dot(query, vecs[i]))
	}
	return h.sorted()
}

// worse reports whether a ranks below b: a lower score, or an equal score
// and a larger ID.
func worse(a, b Hit) bool {
	return a.Score < b.Score || (a.Score == b.Score && a.ID > b.ID)
}

// compareHits orders hits best first.
func compareHits(a, b Hit) int {
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// topHeap keeps the best k hits seen so far in a min-heap whose root is the
// worst of them, so a new hit is compared with one element and, when it is
// better, replaces it in O(log k).
type topHeap struct {
	h []Hit
	k int
}

func newHeap(k int) topHeap {
	return topHeap{h: make([]Hit, 0, k), k: k}
}

// offer considers one candidate.
func (t *topHeap) offer(id int64, score float32) {
	if score != score { // NaN cannot be ranked
		return
	}
	c := Hit{ID: id, Score: score}
	if len(t.h) < t.k {
		t.h = append(t.h, c)
		t.up(len(t.h) - 1)
		return
	}
	if worse(t.h[0], c) {
		t.h[0] = c
		t.down(0)
	}
}

// full reports whether the heap holds k hits, and if so the worst score
// among them: a candidate scoring below it cannot enter.
func (t *topHeap) full() (float32, bool) {
	if len(t.h) < t.k {
		return 0, false
	}
	return t.h[0].Score, true
}

func (t *topHeap) up(i int) {
	h := t.h
	for i > 0 {
		p := (i - 1) / 2
		if !worse(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (t *topHeap) down(i int) {
	h := t.h
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && worse(h[r], h[l]) {
			m = r
		}
		if !worse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// sorted returns the hits best first. The heap is consumed.
func (t *topHeap) sorted() []Hit {
	if len(t.h) == 0 {
		return nil
	}
	slices.SortFunc(t.h, compareHits)
	return t.h
}
