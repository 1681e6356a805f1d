package psda

import (
	"github.com/psda-dev/psda/psda/assign"
	"github.com/psda-dev/psda/psda/internal/par"
)

// This file holds helpers of the sparse stages' candidate edge sets
// (assign.Edges, the pricing loop's).

// exactCross replaces the cross part of every edge by at(a, b), computed
// from the features, on all cores.
func exactCross(adj assign.Edges, at func(a, b int) float64) {
	par.Rows(len(adj), func(a0, a1 int) {
		for a := a0; a < a1; a++ {
			for k, e := range adj[a] {
				adj[a][k].X = at(a, int(e.B))
			}
		}
	})
}
