package psda

import (
	"math/rand/v2"
	"testing"

	"github.com/psda-dev/psda/psda/internal/cost"
	"github.com/psda-dev/psda/psda/internal/testref"
)

// TestMonitorCostEstimate checks that the work Monitor.start expects of each
// dense cost phase is the work its tiles report, so that the progress bar
// fills each phase's share instead of jumping at its end: with Stage 1's
// kernel kept or not, balanced, imbalanced (the factored model) and not,
// on the dense and the sparse path, whose tables over denseLimit give the
// paired vectors' model (plan.factored).
func TestMonitorCostEstimate(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name    string
		ns, nt  int
		cfg     Config
		noCross bool
		// tables over denseLimit: the sparse Stage 2 takes the paired
		// vectors' model (plan.stage2Table), and the estimate follows it.
		overLimit bool
	}{
		{"rbf/balanced", 1500, 1500, Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF}, false, false},
		{"rbf/balanced/no cross", 1500, 1500, Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF}, true, false},
		{"rbf/factored", 4000, 500, Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF}, false, false},
		{"rbf/factored/no cross", 4000, 500, Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF}, true, false},
		{"rbf/factored/tall target", 500, 4000, Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF}, false, false},
		{"rbf/imbalanced", 1500, 1000, Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF}, false, false},
		{"rbf/1 stage", 1500, 1000, Config{BatchSize: 4, Stages: 1, Discrepancy: MMD, Kernel: RBF}, false, false},
		{"linear", 4000, 1000, Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: Linear}, false, false},
		{"coral", 1000, 4000, Config{BatchSize: 4, Stages: 2, Discrepancy: CORAL}, false, false},
		// The sparse path: its candidate passes are the cost phases; Stage
		// 1's self-kernel sums come with its pricing, in the assignment.
		{"sparse/rbf/balanced", 1500, 1500, Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF, Solver: Sparse}, false, false},
		{"sparse/rbf/factored", 4000, 500, Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF, Solver: Sparse}, false, false},
		{"sparse/rbf/tables over the limit", 4000, 500, Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF, Solver: Sparse}, false, true},
		{"sparse/rbf/imbalanced", 1500, 1000, Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF, Solver: Sparse}, false, false},
		{"sparse/rbf/1 stage", 1500, 1000, Config{BatchSize: 4, Stages: 1, Discrepancy: MMD, Kernel: RBF, Solver: Sparse}, false, false},
		{"sparse/linear", 4000, 1000, Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: Linear, Solver: Sparse}, false, false},
		{"sparse/coral", 1000, 4000, Config{BatchSize: 4, Stages: 2, Discrepancy: CORAL, Solver: Sparse}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, tgt := testref.RandMatrix(rng, tc.ns, 6, false), testref.RandMatrix(rng, tc.nt, 6, false)
			mon := &Monitor{}
			cfg := tc.cfg
			cfg.Monitor = mon
			pl := defaultPlan()
			pl.noCross = tc.noCross
			if tc.overLimit {
				pl.denseLimit = cost.FactoredBytes(max(tc.ns, tc.nt), min(tc.ns, tc.nt)) - 1
			}
			sparse1, _ := pl.stages(src, tgt, cfg)
			if _, err := pl.match(src, tgt, cfg); err != nil {
				t.Fatal(err)
			}
			if cfg.Stages == 1 { // the last phase, which no enter closed
				mon.counted[PhaseStage1Assign] = mon.count.Load()
			}
			if sparse1 {
				// Pricing varies with the data (about one pass, docs in
				// start), but the self sums must not overrun the estimate.
				got, want := float64(mon.counted[PhaseStage1Assign]), mon.units[PhaseStage1Assign]
				t.Logf("sparse Stage 1 assignment: tiles %.4g, estimate %.4g, ratio %.3f", got, want, got/want)
				if got > 1.1*want {
					t.Errorf("sparse Stage 1 assignment: the tiles report %.4g units, over the estimate %.4g (ratio %.3f)", got, want, got/want)
				}
			}
			for _, ph := range []int{PhaseStage1Costs, PhaseStage2Costs} {
				if ph == PhaseStage2Costs && cfg.Stages == 1 {
					continue
				}
				got, want := float64(mon.counted[ph]), mon.units[ph]
				t.Logf("phase %d: tiles %.4g, estimate %.4g, ratio %.3f", ph, got, want, got/want)
				if got < 0.9*want || got > 1.1*want {
					t.Errorf("phase %d: the tiles report %.4g units, the estimate was %.4g (ratio %.3f)", ph, got, want, got/want)
				}
			}
		})
	}
}
