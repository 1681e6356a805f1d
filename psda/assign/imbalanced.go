package assign

import "fmt"

// Imbalanced solves the imbalanced assignment of the paper's eqs. 3–5: with
// nr >= nc it assigns every row of the row-major nr×nc cost matrix c to one
// column so that each column receives floor(nr/nc) or ceil(nr/nc) rows, at
// minimum total cost. The returned potentials satisfy Certify: with q =
// floor(nr/nc), every column that received q+1 rows has a potential no larger
// than every column that received q.
//
// Imbalanced requires 1 <= nc <= nr, len(c) == nr*nc and finite costs, and
// returns an error otherwise. With nr == nc it is Rectangular. Otherwise it is
// a capacitated shortest augmenting path method on the min-cost flow network
//
//	row i → column j (cost c[i][j], capacity 1)
//	column j → sink (capacity q: the required copies)
//	column j → X (capacity 1: the extra copy), X → sink (capacity nr mod nc)
//
// which is METHOD.md's implicit column copies with the copies merged: the
// Dijkstra search settles nc columns instead of nr+nc−(nr mod nc) copies, and
// the potential of X separates the columns with and without an extra row.
// There is no big-M: all forbidden moves are simply absent from the network.
//
// The time complexity of Imbalanced is O(nr²·nc) in the worst case; memory is
// O(nr+nc) besides c.
func Imbalanced(c []float64, nr, nc int) (*Solution, error) {
	if err := checkMatrix(c, nr, nc); err != nil {
		return nil, err
	}
	if nr < nc {
		return nil, fmt.Errorf("assign: Imbalanced needs nr >= nc, got %d rows and %d columns: transpose the matrix or use Rectangular", nr, nc)
	}
	if nr == nc {
		return Rectangular(c, nr, nc)
	}
	s := newCapSAP(c, nr, nc)
	for i := 0; i < nr; i++ {
		s.augment(i)
	}
	sol := &Solution{Col4Row: s.col4row, U: s.u, V: s.v}
	for i, j := range s.col4row {
		sol.Cost += c[i*nc+j]
	}
	return sol, nil
}

// fromX marks a column reached through the node X (it gives up its extra row).
const fromX = -1

// capSAP is the state of the capacitated shortest augmenting path solver.
// Potentials follow Crouse's convention (reduced cost c[i][j]-u[i]-v[j]); phiX
// is the potential of X, and columns below their q required rows keep v = 0,
// as free columns do in the uncapacitated method.
type capSAP struct {
	c            []float64
	nr, nc, q, r int
	hi           int // most rows per column: q+1, or q when r == 0
	u, v         []float64
	phiX         float64
	col4row      []int
	slots        []int // rows of column j are slots[j*hi : j*hi+cnt[j]]
	cnt          []int
	extras       int // columns holding q+1 rows

	// scratch of augment
	d        []float64 // tentative distance of each column
	pred     []int     // row (or fromX) that reached each column
	rem      []int     // columns not yet settled are rem[:num]
	tree     []int     // rows reached, with their distance in treeD
	treeD    []float64
	settledC []int
}

func newCapSAP(c []float64, nr, nc int) *capSAP {
	lo, hi := bounds(nr, nc)
	s := &capSAP{
		c: c, nr: nr, nc: nc, q: lo, r: nr % nc, hi: hi,
		u: make([]float64, nr), v: make([]float64, nc),
		col4row: make([]int, nr), slots: make([]int, nc*hi), cnt: make([]int, nc),
		d: make([]float64, nc), pred: make([]int, nc), rem: make([]int, nc),
	}
	for i := range s.col4row {
		s.col4row[i] = -1
	}
	return s
}

// augment routes the free row i0 along a shortest path in the residual
// network to the sink and updates the potentials (Dijkstra with Crouse's
// truncated potential update). Only columns are kept in the search; a row is
// reached at the distance of its column because assigned entries are tight.
func (s *capSAP) augment(i0 int) {
	nc, q, d, pred, rem, v := s.nc, s.q, s.d, s.pred, s.rem, s.v
	for j := range d {
		d[j] = inf
		rem[j] = nc - 1 - j
	}
	num := nc
	s.tree, s.treeD, s.settledC = s.tree[:0], s.treeD[:0], s.settledC[:0]
	dX, predX, xSettled := inf, -1, false
	scan := func(i int, di float64) {
		s.tree = append(s.tree, i)
		s.treeD = append(s.treeD, di)
		row, base := s.c[i*nc:i*nc+nc], di-s.u[i]
		for _, k := range rem[:num] {
			if val := base + row[k] - v[k]; val < d[k] {
				d[k], pred[k] = val, i
			}
		}
	}
	scan(i0, 0)
	sink, delta := 0, 0.0 // sink is a column, or fromX for X
	for {
		index, lowest := -1, inf
		for it, j := range rem[:num] {
			if dj := d[j]; dj < lowest || (dj == lowest && s.cnt[j] < q) {
				index, lowest = it, dj
			}
		}
		if !xSettled && (dX < lowest || (dX == lowest && s.extras < s.r)) {
			xSettled = true
			if s.extras < s.r {
				sink, delta = fromX, dX
				break
			}
			// X → column with an extra row: that column may give it up.
			for _, j := range rem[:num] {
				if s.cnt[j] == q+1 {
					if val := dX + s.phiX - v[j]; val < d[j] {
						d[j], pred[j] = val, fromX
					}
				}
			}
			continue
		}
		// lowest < inf: the network always has a path to the sink.
		j := rem[index]
		num--
		rem[index] = rem[num]
		s.settledC = append(s.settledC, j)
		if s.cnt[j] < q {
			sink, delta = j, lowest
			break
		}
		if s.cnt[j] == q && s.r > 0 && !xSettled {
			if val := lowest + v[j] - s.phiX; val < dX {
				dX, predX = val, j
			}
		}
		for _, i := range s.slots[j*s.hi : j*s.hi+s.cnt[j]] {
			scan(i, lowest)
		}
	}
	for k, i := range s.tree {
		s.u[i] += delta - s.treeD[k]
	}
	for _, j := range s.settledC {
		v[j] -= delta - d[j]
	}
	if xSettled && sink != fromX {
		s.phiX -= delta - dX
	}
	node := sink
	if sink == fromX {
		node = predX
	}
	for {
		if pred[node] == fromX {
			node = predX
			continue
		}
		i := pred[node]
		old := s.col4row[i]
		s.move(i, old, node)
		if i == i0 {
			return
		}
		node = old
	}
}

// move reassigns row i from column old (or from nowhere, old < 0) to column to.
func (s *capSAP) move(i, old, to int) {
	if old >= 0 {
		sl := s.slots[old*s.hi : old*s.hi+s.cnt[old]]
		for k, x := range sl {
			if x == i {
				sl[k] = sl[len(sl)-1]
				break
			}
		}
		if s.cnt[old] == s.q+1 {
			s.extras--
		}
		s.cnt[old]--
	}
	s.slots[to*s.hi+s.cnt[to]] = i
	s.cnt[to]++
	if s.cnt[to] == s.q+1 {
		s.extras++
	}
	s.col4row[i] = to
}
