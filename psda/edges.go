package psda

import (
	"slices"

	"github.com/psda-dev/psda/psda/internal/par"
)

// This file holds the candidate edge set of a sparse stage.

// edge is a candidate edge to column b with cross part x.
type edge struct {
	b int32
	x float64
}

// edges is the candidate edge set of a sparse stage, by solver row.
type edges [][]edge

// add appends edge (a, b) with cross part x; normalise restores the order.
func (e edges) add(a, b int, x float64) { e[a] = append(e[a], edge{int32(b), x}) }

// normalise sorts every row by column and drops repeated columns, keeping
// the first added; it returns the number of edges.
func (e edges) normalise() int {
	n := 0
	for a, row := range e {
		slices.SortStableFunc(row, func(p, q edge) int { return int(p.b) - int(q.b) })
		e[a] = slices.CompactFunc(row, func(p, q edge) bool { return p.b == q.b })
		n += len(e[a])
	}
	return n
}

// has reports whether the normalised row a holds column b.
func (e edges) has(a, b int) bool {
	_, ok := slices.BinarySearchFunc(e[a], int32(b), func(p edge, b int32) int { return int(p.b) - int(b) })
	return ok
}

// exactCross replaces the cross part of every edge by at(a, b), computed
// from the features, on all cores.
func exactCross(adj edges, at func(a, b int) float64) {
	par.Rows(len(adj), func(a0, a1 int) {
		for a := a0; a < a1; a++ {
			for k, e := range adj[a] {
				adj[a][k].x = at(a, int(e.b))
			}
		}
	})
}

// indices returns sub, or every index below n when sub is nil.
func indices(sub []int, n int) []int {
	if sub != nil {
		return sub
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	return all
}
