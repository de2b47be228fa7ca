package vector

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
)

// Errors returned by Index.Add.
var (
	ErrDim       = errors.New("vector: wrong dimension")
	ErrNotFinite = errors.New("vector: value is NaN or infinite")
)

// parallelMin is the number of stored floats (vectors × dimension) from which
// Search splits its scan across GOMAXPROCS goroutines. Below it, starting the
// goroutines costs more than they save.
const parallelMin = 1 << 20

// Index is an in-memory flat index: every vector is kept, one after another,
// in a single []float32, and Search scores all of them against the query.
// Vectors are expected to be unit length (see Normalize), so a score is the
// cosine similarity.
//
// An Index is safe for use by many goroutines: searches run concurrently
// with each other and wait for Add and Remove, which run one at a time.
type Index struct {
	mu   sync.RWMutex
	dim  int
	data []float32     // len(ids) × dim
	ids  []int64       // ids[i] names data[i*dim : (i+1)*dim]
	pos  map[int64]int // id → row
}

// NewIndex returns an empty index for vectors of dim elements. With dim <= 0
// the index takes its dimension from the first vector added.
func NewIndex(dim int) *Index {
	return &Index{dim: max(dim, 0), pos: make(map[int64]int)}
}

// Dim returns the index's dimension, or 0 when it was created without one
// and nothing has been added yet.
func (x *Index) Dim() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.dim
}

// Len returns the number of vectors in the index.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.ids)
}

// Add stores a copy of v under id, replacing any vector already stored under
// it. v should already be normalised. It returns ErrDim when v's length is
// not the index's dimension and ErrNotFinite when v holds NaN or an
// infinity.
func (x *Index) Add(id int64, v []float32) error {
	for i, f := range v {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return fmt.Errorf("%w: element %d of id %d", ErrNotFinite, i, id)
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.dim == 0 && len(v) > 0 {
		x.dim = len(v)
	}
	if len(v) != x.dim {
		return fmt.Errorf("%w: got %d elements, index has %d", ErrDim, len(v), x.dim)
	}
	if row, ok := x.pos[id]; ok {
		copy(x.data[row*x.dim:], v)
		return nil
	}
	x.pos[id] = len(x.ids)
	x.ids = append(x.ids, id)
	x.data = append(x.data, v...)
	return nil
}

// Remove deletes the vector stored under id and reports whether there was
// one. The last vector moves into the freed row, so storage stays
// contiguous.
func (x *Index) Remove(id int64) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	row, ok := x.pos[id]
	if !ok {
		return false
	}
	last := len(x.ids) - 1
	if row != last {
		moved := x.ids[last]
		x.ids[row] = moved
		x.pos[moved] = row
		copy(x.data[row*x.dim:(row+1)*x.dim], x.data[last*x.dim:])
	}
	x.ids = x.ids[:last]
	x.data = x.data[:last*x.dim]
	delete(x.pos, id)
	return true
}

// Search returns the k stored vectors with the highest dot product with
// query, best first; equal scores are ordered by smaller ID. When filter is
// not nil, only ids for which it returns true are considered.
//
// A query whose length is not the index's dimension matches nothing, and
// k <= 0 returns nil. On large indexes the scan is split across goroutines,
// so filter may be called concurrently from several of them; it must not
// call Add or Remove on the same index.
func (x *Index) Search(query []float32, k int, filter func(id int64) bool) []Hit {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := len(x.ids)
	if k <= 0 || n == 0 || len(query) != x.dim {
		return nil
	}
	k = min(k, n)
	workers := min(runtime.GOMAXPROCS(0), n*x.dim/(parallelMin/2))
	if workers <= 1 || n*x.dim < parallelMin {
		h := newHeap(k)
		x.scan(&h, query, 0, n, filter)
		return h.sorted()
	}
	heaps := make([]topHeap, workers)
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for w := range workers {
		lo, hi := w*chunk, min((w+1)*chunk, n)
		heaps[w] = newHeap(k)
		wg.Go(func() { x.scan(&heaps[w], query, lo, hi, filter) })
	}
	wg.Wait()
	best := heaps[0]
	for _, h := range heaps[1:] {
		for _, hit := range h.h {
			best.offer(hit.ID, hit.Score)
		}
	}
	return best.sorted()
}

// scan offers rows [lo, hi) to h. The caller holds x.mu.
func (x *Index) scan(h *topHeap, query []float32, lo, hi int, filter func(int64) bool) {
	dim := x.dim
	for row := lo; row < hi; row++ {
		id := x.ids[row]
		if filter != nil && !filter(id) {
			continue
		}
		s := Dot(query, x.data[row*dim:(row+1)*dim])
		if worst, full := h.full(); full && s < worst {
			continue
		}
		h.offer(id, s)
	}
}
