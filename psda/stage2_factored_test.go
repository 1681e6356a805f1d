package psda

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/psda-dev/psda/psda/internal/cost"
	"github.com/psda-dev/psda/psda/internal/testref"
)

// TestMatchFactoredStage2 checks that the imbalanced RBF Stage 2 gives the
// same matching with the factored model (cost.FactorMin at its default)
// as with the Gram matrix of all paired vectors (FactorMin = MaxInt), on
// the dense path and on the sparse one (few candidates, so that its float32
// pricing passes over rows run): the same pairs, quadruplets and singles,
// and the costs (Stage 1's too, whose deferred kernel sums Stage 2 adds)
// and bound to rounding. Source and target larger, P/n_small
// from 2 to 10, Gaussian and ReLU-like features, and features with
// duplicated rows (then tied quadruplets may swap, and only the costs are
// compared).
func TestMatchFactoredStage2(t *testing.T) {
	defer func(old int) { cost.FactorMin = old }(cost.FactorMin)
	pl := defaultPlan()
	pl.sparseK, pl.sparseAdd = 4, 8
	for _, tc := range []struct {
		ns, nt, d int
		feat      func(n, d int, seed uint64) Matrix
		dup, ties bool // dup: rows copied; ties: tied quadruplets may swap
	}{
		{300, 60, 16, gaussFeatures, false, false},
		{41, 410, 8, gaussFeatures, false, false},
		{251, 120, 64, testref.BenchFeatures, false, false},
		{100, 300, 3, testref.BenchFeatures, false, true}, // 1/8 of the rows are 0
		{200, 40, 4, gaussFeatures, true, true},
	} {
		for _, solver := range []string{Dense, Sparse} {
			name := fmt.Sprintf("%dx%d/d=%d/dup=%v/%s", tc.ns, tc.nt, tc.d, tc.dup, solver)
			t.Run(name, func(t *testing.T) {
				src, tgt := tc.feat(tc.ns, tc.d, 1), tc.feat(tc.nt, tc.d, 2)
				if tc.dup {
					for i := 0; i < src.N; i += 3 {
						copy(src.F64[i*src.D:(i+1)*src.D], src.F64[(i/2)*src.D:])
					}
					copy(tgt.F64[:tgt.D], src.F64[:src.D])
				}
				cfg := Config{BatchSize: 8, Stages: 2, Discrepancy: MMD, Kernel: RBF, Solver: solver}
				run := func(factorMin int) *Matching {
					cost.FactorMin = factorMin
					m, err := pl.match(src, tgt, cfg)
					if err != nil {
						t.Fatal(err)
					}
					return m
				}
				old, nw := run(math.MaxInt), run(2) // 2: the factored model from P/n_small = 2
				// Stage 1's cost takes its deferred kernel sums from Stage 2.
				if !slices.Equal(nw.Pairs, old.Pairs) || testref.Rel(nw.Stage1Cost, old.Stage1Cost) > 1e-12 {
					t.Fatalf("stage 1 differs: cost %.17g vs %.17g", nw.Stage1Cost, old.Stage1Cost)
				}
				tol := 1e-9 * (1 + math.Abs(old.Stage2Cost))
				if math.Abs(nw.Stage2Cost-old.Stage2Cost) > tol || math.Abs(nw.Stage2Bound-old.Stage2Bound) > tol {
					t.Fatalf("stage 2: cost %.17g, bound %.17g; with rbf2 %.17g, %.17g", nw.Stage2Cost, nw.Stage2Bound, old.Stage2Cost, old.Stage2Bound)
				}
				if !tc.ties && (!slices.Equal(nw.Quads, old.Quads) || !slices.Equal(nw.Singles, old.Singles)) {
					t.Fatalf("quadruplets differ from rbf2's")
				}
				checkQuads(t, nw, len(nw.Pairs))
			})
		}
	}
}

// TestStage1DeferredImbalanced checks the imbalanced Stage 1 whose larger
// side's kernel sums Stage 2 supplies (two stages: cost.NewStage1's
// deferSums, Matching.addDeferred) against the same Stage 1 with every sum
// in its terms (one stage): the same pairs and the same cost to rounding,
// source and target larger, with either Stage 2 model, on both paths.
func TestStage1DeferredImbalanced(t *testing.T) {
	defer func(old int) { cost.FactorMin = old }(cost.FactorMin)
	for _, sh := range [][3]int{{150, 40, 8}, {37, 120, 5}, {90, 61, 16}, {3, 31, 2}} {
		for _, solver := range []string{Dense, Sparse} {
			for _, factorMin := range []int{2, math.MaxInt} {
				t.Run(fmt.Sprintf("%dx%d/d=%d/%s/FactorMin=%d", sh[0], sh[1], sh[2], solver, factorMin), func(t *testing.T) {
					cost.FactorMin = factorMin
					src, tgt := testref.BenchFeatures(sh[0], sh[2], 3), gaussFeatures(sh[1], sh[2], 4)
					cfg := Config{BatchSize: 2, Stages: 1, Discrepancy: MMD, Kernel: RBF, Solver: solver}
					one, err := Match(src, tgt, cfg)
					if err != nil {
						t.Fatal(err)
					}
					cfg.Stages = 2
					two, err := Match(src, tgt, cfg)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(one.Pairs, two.Pairs) || testref.Rel(one.Stage1Cost, two.Stage1Cost) > 1e-12 {
						t.Fatalf("two stages: stage 1 cost %.17g; one stage: %.17g (pairs equal: %v)",
							two.Stage1Cost, one.Stage1Cost, slices.Equal(one.Pairs, two.Pairs))
					}
				})
			}
		}
	}
}
