package assign

import (
	"fmt"
	"math"
)

// This file is the exact phase of SolveSparse (sparse.go): Dijkstra shortest
// augmenting paths on reduced costs, with the column heap they use.

// finish augments every free row along a shortest path, polling h. A row
// without an augmenting path is skipped and the error names the size of a
// maximum matching: the rows R reached by the failed search are matched to
// exactly the columns C they reach, one fewer than R (a Hall violator), so
// no later path can leave R∪C for a free column nor change the matching
// inside it (by induction, no row of R ever gets a path). Later searches
// therefore skip the rows of R (dead), and the failures cost one pass over
// the graph in all. After a failure the potentials no longer matter.
//
// With limit > 0, finish gives up, returning false, once the searches have
// scanned limit rows; the paths found so far stay (every augmentation
// keeps the potentials feasible and tight) and an interrupted search
// changes nothing.
func (s *sparseLSAP) finish(limit int, h *Hooks) (bool, error) {
	var free []int
	for i, j := range s.col4row {
		if j < 0 && (s.dead == nil || !s.dead[i]) {
			free = append(free, i)
		}
	}
	s.limit = math.MaxInt
	if limit > 0 {
		s.limit = s.ops + limit
	}
	for k, i := range free {
		if s.dead != nil && s.dead[i] {
			continue
		}
		found, err := s.augment(i, h)
		if err != nil {
			return false, err
		}
		if s.ops >= s.limit {
			return false, nil
		}
		if !found {
			if s.stuck < 0 {
				s.stuck = i
				s.dead = make([]bool, s.n)
			}
			for _, r := range s.rows {
				s.dead[r] = true
			}
		}
		if k&63 == 0 {
			h.progress(float64(k) / float64(len(free)))
		}
	}
	if s.stuck >= 0 {
		matched := 0
		for _, j := range s.col4row {
			if j >= 0 {
				matched++
			}
		}
		return false, fmt.Errorf("%w: a maximum matching covers %d of %d rows (row %d has no augmenting path)", ErrNoPerfect, matched, s.n, s.stuck)
	}
	h.progress(1)
	return true, nil
}

// augment finds a shortest augmenting path from the free row cur by
// Dijkstra's algorithm on the reduced costs c−u−v (non-negative on every
// edge), with column labels in a binary heap, updates the potentials so
// that they stay feasible and tight on the assignment (Crouse 2016, as
// lsap.augment), and flips the path. It returns false, changing nothing,
// when no free column is reachable or the search reaches s.limit, and h's
// Stop error when h stops it.
func (s *sparseLSAP) augment(cur int, h *Hooks) (bool, error) {
	s.stamp++
	lab, set := 2*s.stamp, 2*s.stamp+1
	s.rows, s.cols = s.rows[:0], s.cols[:0]
	s.heap.h = s.heap.h[:0]
	minVal, i, sink := 0.0, cur, int32(-1)
	for {
		s.rows = append(s.rows, i)
		if err := s.tick(h); err != nil {
			return false, err
		}
		if s.ops >= s.limit {
			return false, nil
		}
		s.scanRow(i, minVal, lab, set)
		if len(s.heap.h) == 0 {
			return false, nil
		}
		j := s.heap.pop()
		s.mark[j] = set
		s.cols = append(s.cols, j)
		minVal = s.d[j]
		if s.row4col[j] < 0 {
			sink = j
			break
		}
		i = s.row4col[j]
	}
	for _, j := range s.cols {
		s.v[j] -= minVal - s.d[j]
	}
	s.u[cur] += minVal
	for k, i := range s.rows[1:] {
		s.u[i] += minVal - s.d[s.cols[k]] // row rows[k+1] was reached through cols[k]
	}
	for j := int(sink); ; {
		i := int(s.pred[j])
		s.row4col[j] = i
		j, s.col4row[i] = s.col4row[i], j
		if i == cur {
			break
		}
	}
	return true, nil
}

// scanRow relaxes the edges of row i, reached at distance minVal, to the
// columns not settled yet. Labels below minVal, which only rounding can
// produce, are raised to it so that the search stays monotone. A row whose
// edge range was already scanned in this search from an offset
// minVal−u no larger is skipped: all its labels would be dominated.
func (s *sparseLSAP) scanRow(i int, minVal float64, lab, set uint32) {
	g := s.g
	base := minVal - s.u[i]
	if s.dead != nil && s.dead[i] {
		return
	}
	if s.shared {
		k := s.group[i]
		if s.grpMark[k] == s.stamp && s.grpOffset[k] <= base {
			return
		}
		s.grpMark[k], s.grpOffset[k] = s.stamp, base
	}
	cols, costs := g.Col[g.Lo[i]:g.Hi[i]], g.Cost[g.Lo[i]:g.Hi[i]]
	costs = costs[:len(cols)]
	for e, j := range cols {
		m := s.mark[j]
		if m == set {
			continue
		}
		r := base + costs[e] - s.v[j]
		if r < minVal {
			r = minVal
		}
		if m != lab {
			s.mark[j], s.d[j], s.pred[j] = lab, r, int32(i)
			s.heap.push(j)
		} else if r < s.d[j] {
			s.d[j], s.pred[j] = r, int32(i)
			s.heap.up(int(s.heap.pos[j]))
		}
	}
}

// colHeap is a binary min-heap of columns keyed by d, ties broken in favour
// of free columns (the search ends sooner), with each column's position for
// decrease-key.
type colHeap struct {
	h       []int32
	pos     []int32
	d       []float64
	row4col []int
}

func (q *colHeap) less(a, b int32) bool {
	da, db := q.d[a], q.d[b]
	return da < db || da == db && q.row4col[a] < 0 && q.row4col[b] >= 0
}

func (q *colHeap) push(j int32) {
	q.pos[j] = int32(len(q.h))
	q.h = append(q.h, j)
	q.up(len(q.h) - 1)
}

func (q *colHeap) up(k int) {
	h, j := q.h, q.h[k]
	for k > 0 {
		p := (k - 1) / 2
		if !q.less(j, h[p]) {
			break
		}
		h[k] = h[p]
		q.pos[h[k]] = int32(k)
		k = p
	}
	h[k] = j
	q.pos[j] = int32(k)
}

func (q *colHeap) pop() int32 {
	h := q.h
	top := h[0]
	last := h[len(h)-1]
	h = h[:len(h)-1]
	q.h = h
	if len(h) == 0 {
		return top
	}
	k := 0
	for {
		c := 2*k + 1
		if c >= len(h) {
			break
		}
		if c+1 < len(h) && q.less(h[c+1], h[c]) {
			c++
		}
		if !q.less(h[c], last) {
			break
		}
		h[k] = h[c]
		q.pos[h[k]] = int32(k)
		k = c
	}
	h[k] = last
	q.pos[last] = int32(k)
	return top
}
