package psda

import (
	"github.com/psda-dev/psda/psda/assign"
	"github.com/psda-dev/psda/psda/internal/par"
)

// This file holds the candidate edge set of a sparse stage: assign.Edges,
// the pricing loop's, under the names the stages use.

// edges is the candidate edge set of a sparse stage, by solver row.
type edges assign.Edges

// add appends edge (a, b) with cross part x; normalise restores the order.
func (e edges) add(a, b int, x float64) { assign.Edges(e).Add(a, b, x) }

// normalise sorts every row by column and drops repeated columns, keeping
// the first added; it returns the number of edges.
func (e edges) normalise() int { return assign.Edges(e).Normalise() }

// has reports whether the normalised row a holds column b.
func (e edges) has(a, b int) bool { return assign.Edges(e).Has(a, b) }

// exactCross replaces the cross part of every edge by at(a, b), computed
// from the features, on all cores.
func exactCross(adj edges, at func(a, b int) float64) {
	par.Rows(len(adj), func(a0, a1 int) {
		for a := a0; a < a1; a++ {
			for k, e := range adj[a] {
				adj[a][k].X = at(a, int(e.B))
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
