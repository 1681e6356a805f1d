package psda

// This file is the sparse exact path (docs/method.md, "The sparse exact path"):
// for sizes whose dense cost matrices do not fit, each stage keeps only
// candidate edges (the sparseK cheapest of every row and column under the
// cross part of the cost, found in one float64 Gram pass that also yields
// the exact row and column terms), solves the assignment on them, checks
// every other edge against the lists' thresholds, and prices the rows that
// check cannot clear from the features in further passes, adding the
// violators until the duals are feasible for the full problem. The
// result is then the dense optimum, certified, and no n_s×n_t or P×P matrix
// is ever stored: memory is O((n_s+n_t)·(d + sparseK)). The stages are in
// stage1_sparse.go and stage2_sparse.go (with stage2_sparse_records.go);
// this file holds what they share. The pricing loop is assign.Pricing, the
// cost models are internal/cost's, the candidate lists internal/topk's and
// the edge set is assign.Edges; the settings (sparseK, sparseAdd, ...) are
// fields of the plan (plan.go).
//
// psda's side of the pricing loop (docs/design.md, "The pricing loop"),
// which the dense LSAP's warm start runs too, is the models (stage1_sparse.go,
// stage2_sparse.go: cross parts by Gram passes, float32 bounds, column
// copies and dummies); each stage builds its assign.Pricing, run to the
// certificate (no MaxPasses or MaxAdd) keeping sparseAdd edges a row.

import (
	"github.com/psda-dev/psda/psda/assign"
	"github.com/psda-dev/psda/psda/internal/par"
)

// tracef sends one line to pl.trace, when set.
func (pl *plan) tracef(format string, args ...any) {
	if pl.trace != nil {
		pl.trace(format, args...)
	}
}

// lowerBy sets tau[i] −= e[i] + emax.
func lowerBy(tau, e []float64, emax float64) {
	for i := range tau {
		tau[i] -= e[i] + emax
	}
}

// exactCross replaces the cross part of every candidate edge by at(a, b),
// computed from the features, on all cores.
func exactCross(adj assign.Edges, at func(a, b int) float64) {
	par.Rows(len(adj), func(a0, a1 int) {
		for a := a0; a < a1; a++ {
			for k, e := range adj[a] {
				adj[a][k].X = at(a, int(e.B))
			}
		}
	})
}
