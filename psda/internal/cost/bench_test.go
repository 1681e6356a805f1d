package cost

import (
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
