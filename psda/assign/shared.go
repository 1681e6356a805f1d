package assign

import "math/bits"

// sharedRange answers MatchingDuals.Shared in O(1) with a range minimum:
// the vertices are numbered in depth-first order of the blossom forest, so
// that every blossom holds an interval of positions, and sep[k] is the
// shared dual of the vertices at positions k and k+1 (zUp of their lowest
// common blossom, 0 when they share none). For positions p < q the lowest
// common blossom of the two vertices is the shallowest of the lowest common
// blossoms of the consecutive pairs between them (the classic reduction of
// LCA to a range minimum of depths), and with Z >= 0 zUp only grows with
// depth, so Shared is min(sep[p..q−1]). Without this, Shared walks up the
// forest in O(depth), which for the large nested blossoms of clustered
// data dominated the pricing of every dense edge.
type sharedRange struct {
	pos []int32     // position of each vertex in the order
	tab [][]float64 // tab[j][k] = min(sep[k .. k+2^j−1])
}

// buildShared fills d.rng from a prepared forest whose duals are all >= 0
// (otherwise, or without blossoms, Shared keeps its walk). It takes
// O(n log n) time and memory.
func (d *MatchingDuals) buildShared() {
	d.rng = nil
	m, n := len(d.Z), len(d.In)
	if m == 0 || n < 2 {
		return
	}
	for _, z := range d.Z {
		if !(z >= 0) {
			return
		}
	}
	// Children: blossoms by parent, vertices by In (heads of linked lists).
	firstB, nextB := make([]int32, m+1), make([]int32, m) // index m: the forest's root
	firstV, nextV := make([]int32, m+1), make([]int32, n)
	for i := range firstB {
		firstB[i], firstV[i] = -1, -1
	}
	for b := m - 1; b >= 0; b-- {
		p := d.Parent[b]
		if p < 0 {
			p = m
		}
		nextB[b], firstB[p] = firstB[p], int32(b)
	}
	for v := n - 1; v >= 0; v-- {
		b := d.In[v]
		if b < 0 {
			b = m
		}
		nextV[v], firstV[b] = firstV[b], int32(v)
	}
	zUp := func(b int) float64 {
		if b == m {
			return 0
		}
		return d.zUp[b]
	}
	pos := make([]int32, n)
	sep := make([]float64, n-1)
	k := 0
	cur := 0.0 // the least zUp on the tree path since the last vertex
	// An explicit stack: blossoms may nest about n/2 deep.
	type frame struct{ b, child int32 }
	stack := []frame{{int32(m), -2}}
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		b := int(f.b)
		cur = min(cur, zUp(b))
		if f.child == -2 { // first visit: the vertices directly in b
			for v := firstV[b]; v >= 0; v = nextV[v] {
				if k > 0 {
					sep[k-1] = min(cur, zUp(b))
				}
				pos[v] = int32(k)
				k++
				cur = zUp(b)
			}
			f.child = firstB[b]
		} else {
			f.child = nextB[f.child]
		}
		if c := f.child; c >= 0 {
			stack = append(stack, frame{c, -2})
			continue
		}
		stack = stack[:len(stack)-1]
	}
	levels := bits.Len(uint(len(sep)))
	tab := make([][]float64, levels)
	tab[0] = sep
	for j := 1; j < levels; j++ {
		prev, h := tab[j-1], 1<<(j-1)
		row := make([]float64, len(sep)-(1<<j)+1)
		for i := range row {
			row[i] = min(prev[i], prev[i+h])
		}
		tab[j] = row
	}
	d.rng = &sharedRange{pos: pos, tab: tab}
}

// shared returns min(sep[p..q−1]) for the positions of i != j.
func (r *sharedRange) shared(i, j int) float64 {
	p, q := int(r.pos[i]), int(r.pos[j])
	if p > q {
		p, q = q, p
	}
	l := bits.Len(uint(q-p)) - 1
	t := r.tab[l]
	return min(t[p], t[q-(1<<l)])
}
