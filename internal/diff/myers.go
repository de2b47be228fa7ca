package diff

// edit is one step of an edit script from a to b: ' ' keeps a[ai] (which
// is b[bi]), '-' removes a[ai] (bi is where b stands), '+' inserts b[bi]
// (ai is where a stands).
type edit struct {
	op     byte
	ai, bi int
}

// maxD bounds the number of differences the Myers search looks for: its
// work is O((N+M)·D) and its memory O(D²). Past it the differing middle is
// shown as removed then added — a valid diff, only not the shortest.
const maxD = 1000

// edits returns a shortest edit script from a to b (Myers' O(ND)
// algorithm, on the lines between the common prefix and suffix).
func edits(a, b []string) []edit {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var out []edit
	for i := range pre {
		out = append(out, edit{' ', i, i})
	}
	ids := map[string]int{}
	intern := func(ls []string) []int {
		xs := make([]int, len(ls))
		for i, l := range ls {
			id, ok := ids[l]
			if !ok {
				id = len(ids)
				ids[l] = id
			}
			xs[i] = id
		}
		return xs
	}
	A, B := intern(a[pre:len(a)-suf]), intern(b[pre:len(b)-suf])
	for _, e := range myers(A, B) {
		out = append(out, edit{e.op, e.ai + pre, e.bi + pre})
	}
	for i := range suf {
		out = append(out, edit{' ', len(a) - suf + i, len(b) - suf + i})
	}
	return out
}

func myers(A, B []int) []edit {
	n, m := len(A), len(B)
	if n == 0 || m == 0 {
		return replaceAll(n, m)
	}
	dmax := min(n+m, maxD)
	off := dmax + 1
	v := make([]int, 2*dmax+3)
	var trace [][]int
	for d := 0; d <= dmax; d++ {
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && A[x] == B[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, n, m)
			}
		}
	}
	return replaceAll(n, m)
}

// backtrack walks the saved frontiers back from (n, m) to (0, 0).
func backtrack(trace [][]int, n, m int) []edit {
	var rev []edit
	x, y := n, m
	for d := len(trace) - 1; d > 0; d-- {
		vp := trace[d]
		get := func(k int) int { return vp[k+d+1] }
		k := x - y
		pk := k - 1
		if k == -d || (k != d && get(k-1) < get(k+1)) {
			pk = k + 1
		}
		px := get(pk)
		py := px - pk
		// back along the snake of diagonal k to the one step from (px, py)
		if pk == k+1 {
			for x > px {
				x--
				y--
				rev = append(rev, edit{' ', x, y})
			}
			y--
			rev = append(rev, edit{'+', x, y})
		} else {
			for y > py {
				x--
				y--
				rev = append(rev, edit{' ', x, y})
			}
			x--
			rev = append(rev, edit{'-', x, y})
		}
	}
	for x > 0 && y > 0 {
		x--
		y--
		rev = append(rev, edit{' ', x, y})
	}
	out := make([]edit, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}

// replaceAll is the script removing n lines and adding m.
func replaceAll(n, m int) []edit {
	out := make([]edit, 0, n+m)
	for i := range n {
		out = append(out, edit{'-', i, 0})
	}
	for j := range m {
		out = append(out, edit{'+', n, j})
	}
	return out
}
