package files

import (
	"context"
	"io/fs"
	"os"
	"path"
	"sync"
	"sync/atomic"
)

// A walk visits a tree of the workspace from several goroutines at once:
// each directory is opened as its own os.Root (from its parent's), so a
// file is opened by one name relative to an open directory — as confined
// as through the workspace's root, without walking the path again for
// every file. Symlinks are not followed (a symlink is visited as an
// entry) and ".git" is skipped.
type walk struct {
	workers int
	// dir is called for each directory below the start; file for every
	// other entry, with the directory's root to open it by name. file
	// returning false stops the walk.
	dir  func(rel string)
	file func(dir *os.Root, name, rel string, d fs.DirEntry) bool
}

// dirRef is an open directory shared by the jobs that use it; the last
// to release it closes it.
type dirRef struct {
	root *os.Root
	rel  string
	refs atomic.Int32
}

func (d *dirRef) hold() { d.refs.Add(1) }
func (d *dirRef) release() {
	if d.refs.Add(-1) == 0 {
		d.root.Close()
	}
}

// job is a directory to read (sub, the name in parent) or a batch of
// files of parent.
type job struct {
	parent *dirRef
	sub    string
	names  []fs.DirEntry
}

// fileBatch is how many files of a directory make one job: small enough
// to spread a directory of many files over the workers.
const fileBatch = 64

// run walks start (a directory, relative to root) until done, stopped or
// ctx ends.
func (wk *walk) run(ctx context.Context, root *os.Root, start string) error {
	top, err := root.OpenRoot(start)
	if err != nil {
		return err
	}
	q := &queue{}
	q.cond.L = &q.mu
	ref := &dirRef{root: top, rel: start}
	ref.hold()
	wk.readDir(ctx, q, ref)
	var wg sync.WaitGroup
	for range wk.workers {
		wg.Go(func() {
			for j, ok := q.pop(); ok; j, ok = q.pop() {
				if ctx.Err() != nil || q.stopped() {
					j.parent.release()
				} else {
					wk.do(ctx, q, j)
				}
				q.done()
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}

// do runs one job and releases its parent.
func (wk *walk) do(ctx context.Context, q *queue, j job) {
	if j.sub != "" {
		sub, err := j.parent.root.OpenRoot(j.sub)
		rel := path.Join(j.parent.rel, j.sub)
		j.parent.release()
		if err != nil {
			return // gone, or swapped for a symlink since it was listed
		}
		ref := &dirRef{root: sub, rel: rel}
		ref.hold()
		wk.readDir(ctx, q, ref)
		return
	}
	defer j.parent.release()
	for _, d := range j.names {
		if !wk.file(j.parent.root, d.Name(), path.Join(j.parent.rel, d.Name()), d) {
			q.stop()
			return
		}
	}
}

// readDir lists ref's directory, queues its subdirectories and its files
// in batches, then releases ref.
func (wk *walk) readDir(ctx context.Context, q *queue, ref *dirRef) {
	defer ref.release()
	f, err := ref.root.Open(".")
	if err != nil {
		return
	}
	ents, _ := f.ReadDir(-1)
	f.Close()
	var batch []fs.DirEntry
	flush := func() {
		if len(batch) > 0 {
			ref.hold()
			q.push(job{parent: ref, names: batch})
			batch = nil
		}
	}
	for _, d := range ents {
		if ctx.Err() != nil {
			break
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				continue
			}
			if wk.dir != nil {
				wk.dir(path.Join(ref.rel, d.Name()))
			}
			ref.hold()
			q.push(job{parent: ref, sub: d.Name()})
			continue
		}
		if batch = append(batch, d); len(batch) == fileBatch {
			flush()
		}
	}
	flush()
}

// queue is an unbounded job queue; pending counts the jobs pushed and not
// yet done, so the workers know when the walk is over.
type queue struct {
	mu      sync.Mutex // guards the fields below; cond waits on it
	cond    sync.Cond
	jobs    []job
	pending int
	halt    bool
}

func (q *queue) push(j job) {
	q.mu.Lock()
	q.jobs = append(q.jobs, j)
	q.pending++
	q.mu.Unlock()
	q.cond.Signal()
}

// pop waits for a job; false when every job is done.
func (q *queue) pop() (job, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.jobs) == 0 && q.pending > 0 {
		q.cond.Wait()
	}
	if len(q.jobs) == 0 {
		return job{}, false
	}
	n := len(q.jobs) - 1
	j := q.jobs[n] // depth first keeps the queue short
	q.jobs = q.jobs[:n]
	return j, true
}

func (q *queue) done() {
	q.mu.Lock()
	q.pending--
	end := q.pending == 0
	q.mu.Unlock()
	if end {
		q.cond.Broadcast()
	}
}

func (q *queue) stop() {
	q.mu.Lock()
	q.halt = true
	q.mu.Unlock()
}

func (q *queue) stopped() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.halt
}
