package cost

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/psda-dev/psda/psda/internal/feat"
	"github.com/psda-dev/psda/psda/internal/testref"
)

var benchConfigs = []struct {
	name string
	spec Spec
}{
	{"rbf", Spec{Kind: RBFMMD, K: 64, Gammas: paperGammas}},
	{"linear", Spec{Kind: LinearMMD, K: 64}},
	{"coral", Spec{Kind: CORAL, K: 64}},
}

// BenchmarkStage1Costs times Stage 1's dense cost matrix (the model and
// its Dense) for each discrepancy at k = 64 on testref.BenchSizes.
func BenchmarkStage1Costs(b *testing.B) {
	testref.BenchSizes(func(size string, src, tgt feat.Matrix) {
		for _, bc := range benchConfigs {
			b.Run(bc.name+"/"+size, func(b *testing.B) {
				testref.LoopCPU(b, func() { stage1Costs(src, tgt, bc.spec) })
			})
		}
	})
}

// BenchmarkStage2Costs times Stage 2's dense cost matrix over covering
// pairs, as BenchmarkStage1Costs.
func BenchmarkStage2Costs(b *testing.B) {
	testref.BenchSizes(func(size string, src, tgt feat.Matrix) {
		pairs := testref.CoveringPairs(rand.New(rand.NewPCG(9, 9)), src.N, tgt.N)
		for _, bc := range benchConfigs {
			b.Run(bc.name+"/"+size, func(b *testing.B) {
				testref.LoopCPU(b, func() { stage2Costs(src, tgt, bc.spec, pairs) })
			})
		}
	})
}

// BenchmarkStage2Imbalanced times the RBF Stage 2 model's passes on the
// pairs of an imbalanced Stage 1, with each model forced (FactorMin; the
// 6000 × 4000 and 6000 × 3000 shapes, P/n_small = 1.5 and 2, time the
// choice of FactorMin): "pass", a
// full float64 pass whose entries are dropped (the model's own work);
// "rows32", a float32 pass over 5% of the rows (a sparse pricing pass);
// "dense", the dense matrix (pass, terms, finishing and mirroring).
func BenchmarkStage2Imbalanced(b *testing.B) {
	defer func(old int) { FactorMin = old }(FactorMin)
	spec := Spec{Kind: RBFMMD, K: 32, Gammas: paperGammas}
	for _, sh := range [][3]int{{4000, 160, 64}, {4000, 160, 256}, {12000, 480, 256}, {20000, 1000, 256}, {6000, 4000, 256}, {6000, 3000, 256}} {
		src, tgt := testref.BenchFeatures(sh[0], sh[2], 1), testref.BenchFeatures(sh[1], sh[2], 2)
		rng := rand.New(rand.NewPCG(1, 2))
		pairs := imbalancedPairs(rng, src.N, tgt.N)
		rows := rng.Perm(len(pairs))[:len(pairs)/20]
		for _, md := range []struct {
			name      string
			factorMin int
		}{{"rbf2", math.MaxInt}, {"factored", 1}} {
			for _, what := range []string{"pass", "rows32", "dense"} {
				b.Run(fmt.Sprintf("%dx%d/d=%d/%s/%s", sh[0], sh[1], sh[2], what, md.name), func(b *testing.B) {
					FactorMin = md.factorMin
					testref.LoopCPU(b, func() {
						m := NewStage2(src, tgt, spec, pairs, math.MaxInt64, nil)
						switch what {
						case "pass":
							m.Pass(Scope{}, func(int, int, []float64) {})
						case "rows32":
							m.Pass(Scope{}, func(int, int, []float64) {})
							m.Pass(Scope{Rows: rows, F32: true}, func(int, int, []float64) {})
						case "dense":
							m.Dense()
						}
					})
				})
			}
		}
	}
}
