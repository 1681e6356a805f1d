package psda

import (
	"math"

	"github.com/psda-dev/psda/psda/internal/cost"
)

// This file builds the cost models of internal/cost (the paper's section
// "Cost computation") from a Config, for the dense stages (stage1.go,
// stage2.go) and the sparse ones (stage1_sparse.go, stage2_sparse.go).

// costSpec returns the cost model c selects.
func (c Config) costSpec() cost.Spec {
	switch {
	case c.Discrepancy == CORAL:
		return cost.Spec{Kind: cost.CORAL, K: c.BatchSize}
	case c.Kernel == Linear:
		return cost.Spec{Kind: cost.LinearMMD, K: c.BatchSize}
	}
	return cost.Spec{Kind: cost.RBFMMD, K: c.BatchSize, Gammas: c.gammas()}
}

// newStage1Model returns the split of C^st for cfg's discrepancy, its Gram
// passes followed and cancelled by cfg.Monitor; deferSums is
// cost.NewStage1's (Matching.sumsPending).
func newStage1Model(src, tgt Matrix, cfg Config, deferSums bool) *cost.Stage1 {
	return cost.NewStage1(src, tgt, cfg.costSpec(), deferSums, progress{cfg.Monitor})
}

// newStage2Model returns the split of C^MM over pairs for cfg's
// discrepancy, its Gram passes followed and cancelled by cfg.Monitor;
// maxTable is cost.NewStage2's (the bytes the RBF mixture's tables against
// the smaller side may take).
func newStage2Model(src, tgt Matrix, cfg Config, pairs []Pair, maxTable int64) *cost.Stage2 {
	return cost.NewStage2(src, tgt, cfg.costSpec(), pairs, maxTable, progress{cfg.Monitor})
}

// stage2Dense returns the dense matrix C^MM over the pairs, its size m
// (cost.Stage2.Dense) and the model, whose sums Match reads after the pass;
// cross, when not nil, is Stage 1's RBF cross kernel, which the model
// reads instead of recomputing it where it can (cost.Stage2.UseCross), and
// buf memory the matrix may overwrite (cost.Stage2.DenseIn).
func stage2Dense(src, tgt Matrix, cfg Config, pairs []Pair, cross *cost.Cross, buf []float64) ([]float64, int, *cost.Stage2) {
	// The RBF mixture's tables (2·P·n_small float64) add at most half the
	// P×P matrix's bytes (cost.FactorMin = 4 <= P/n_small), as before.
	md := newStage2Model(src, tgt, cfg, pairs, math.MaxInt64)
	md.UseCross(cross)
	c, m := md.DenseIn(buf)
	return c, m, md
}
