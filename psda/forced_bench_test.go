package psda

import (
	"fmt"
	"testing"

	"github.com/psda-dev/psda/psda/internal/testref"
)

// BenchmarkMatchForced times a whole one-stage Match on forced shapes (one
// source against 10,000 targets: every target goes to it) and the 100 ×
// 10,000 shape beside it, on both solver paths, d = 32.
func BenchmarkMatchForced(b *testing.B) {
	for _, ns := range []int{1, 100} {
		for _, solver := range []string{Dense, Sparse} {
			b.Run(fmt.Sprintf("%dx10000/%s", ns, solver), func(b *testing.B) {
				src, tgt := testref.BenchFeatures(ns, 32, 1), testref.BenchFeatures(10000, 32, 2)
				cfg := Config{BatchSize: 64, Stages: 1, Discrepancy: MMD, Kernel: RBF, Solver: solver}
				testref.LoopCPU(b, func() {
					if _, err := Match(src, tgt, cfg); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}
