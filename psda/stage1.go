package psda

import (
	"fmt"

	"github.com/psda-dev/psda/psda/assign"
)

// This file is Stage 1 on the dense path: the paper's eqs. 3–5 as one
// capacitated assignment on the full n_s×n_t cost matrix
// (stage1_sparse.go is the sparse path's).

// stage1 solves the paper's eqs. 3–5 with the larger side as rows, so that the
// assignment uses every row once and spreads the rows evenly over the columns.
// With more targets than sources the cost model writes the matrix in that
// layout itself (cost.Stage1.DenseT, and its kept cross kernel too, which
// the factored Stage 2 then reads as its table K_ab), so that the two
// orientations of a problem cost the same time and memory; the entries
// are the bits of the n_s×n_t matrix either way.
func (pl *plan) stage1(src, tgt Matrix, cfg Config, m *Matching) error {
	cfg.Monitor.enter(PhaseStage1Costs)
	md := newStage1Model(src, tgt, cfg, m.sumsPending)
	if m.keepCross {
		md.KeepCross()
	}
	trans := tgt.N > src.N
	nr, nc := src.N, tgt.N
	if trans {
		nr, nc = tgt.N, src.N
	}
	size := nr * nc
	if m.handOn {
		n := nr + nr%2 // Stage 2's nodes: the pairs and, for an odd number, a dummy
		size = n * n
	}
	buf := newMatrix(0, size)
	dense := md.DenseIn
	if trans {
		dense = md.DenseTIn
	}
	c := dense(buf)
	m.cross = md.Cross()
	if err := cfg.Monitor.err(); err != nil {
		return fmt.Errorf("psda: stage 1 costs: %w", err)
	}
	cfg.Monitor.enter(PhaseStage1Assign)
	sol, err := assign.ImbalancedWith(c, nr, nc, cfg.Monitor.hooks(PhaseStage1Assign))
	if err != nil {
		return fmt.Errorf("psda: stage 1: %w", err)
	}
	// The dual certificate costs one pass over c and turns "the solver says
	// optimal" into a checked fact; a failure would be a solver bug.
	if err := assign.Certify(c, nr, nc, sol, assign.PriceTol(c)); err != nil {
		return fmt.Errorf("psda: stage 1 optimality certificate failed (a bug: please report it): %w", err)
	}
	m.Pairs = make([]Pair, nr)
	for r, col := range sol.Col4Row {
		if trans {
			m.Pairs[r] = Pair{S: col, T: r}
		} else {
			m.Pairs[r] = Pair{S: r, T: col}
		}
	}
	m.Stage1Cost = sol.Cost
	if m.handOn {
		m.spare = c
	}
	return nil
}
