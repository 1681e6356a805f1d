package psda

import (
	"fmt"
	"testing"

	"github.com/psda-dev/psda/psda/assign"
	"github.com/psda-dev/psda/psda/internal/testref"
)

// imbalancedShapes are the Stage 1 shapes of BenchmarkStage1Imbalanced: nr/nc
// close to 1 (q = 1: every target used once or twice) and large multiples.
var imbalancedShapes = [][2]int{{4000, 3000}, {3000, 2500}, {4000, 2100}, {4000, 1300}, {15000, 2000}}

// BenchmarkStage1Imbalanced times the imbalanced Stage 1 solve alone on the
// MMD-RBF costs of the cost benchmarks' features, computed outside the loop.
func BenchmarkStage1Imbalanced(b *testing.B) {
	cfg := Config{BatchSize: 64, Discrepancy: MMD, Kernel: RBF}
	for _, sh := range imbalancedShapes {
		for _, d := range []int{16, 512} {
			b.Run(fmt.Sprintf("%dx%d/d=%d", sh[0], sh[1], d), func(b *testing.B) {
				c := stage1Costs(testref.BenchFeatures(sh[0], d, 1), testref.BenchFeatures(sh[1], d, 2), cfg)
				testref.LoopCPU(b, func() {
					if _, err := assign.Imbalanced(c, sh[0], sh[1]); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}
