package psda

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/psda-dev/psda/psda/assign"
	"github.com/psda-dev/psda/psda/internal/testref"
)

// gaussFeatures returns n standard normal points in R^d: the paper's variance
// experiment (d = 2, linear kernel), where the costs are most degenerate for
// the assignment solvers.
func gaussFeatures(n, d int, seed uint64) Matrix {
	rng := rand.New(rand.NewPCG(seed, 3))
	m := Matrix{N: n, D: d, F64: make([]float64, n*d)}
	for i := range m.F64 {
		m.F64[i] = rng.NormFloat64()
	}
	return m
}

// BenchmarkSolve times only the solvers of Stage 1 (Imbalanced) and Stage 2
// (MinWeightPerfectMatching) on the package's real cost matrices, built once
// outside the timed loop: Gaussian ("gauss", the paper's variance experiment)
// and ReLU-like ("relu", tie-heavy at d = 2) features. Stage 2 uses the
// optimal Stage 1 pairs, as Match does.
func BenchmarkSolve(b *testing.B) {
	data := []struct {
		name string
		feat func(n, d int, seed uint64) Matrix
	}{{"gauss", gaussFeatures}, {"relu", testref.BenchFeatures}}
	for _, dt := range data {
		for _, n := range []int{1000, 4000} {
			for _, d := range []int{2, 512} {
				src, tgt := dt.feat(n, d, 1), dt.feat(n, d, 2)
				for _, bc := range benchConfigs {
					cfg := bc.cfg
					name := fmt.Sprintf("%s/n=%d/d=%d/%s", dt.name, n, d, bc.name)
					var c1 []float64
					b.Run(name+"/stage1", func(b *testing.B) {
						c1 = stage1Costs(src, tgt, cfg)
						testref.LoopCPU(b, func() {
							if _, err := assign.Imbalanced(c1, n, n); err != nil {
								b.Fatal(err)
							}
						})
					})
					b.Run(name+"/stage2", func(b *testing.B) {
						m1 := &Matching{}
						if err := defaultPlan().stage1(src, tgt, cfg, m1); err != nil {
							b.Fatal(err)
						}
						c2, m := stage2Costs(src, tgt, cfg, m1.Pairs)
						testref.LoopCPU(b, func() {
							if _, err := assign.MinWeightPerfectMatching(c2, m); err != nil {
								b.Fatal(err)
							}
						})
					})
				}
			}
		}
	}
}

// BenchmarkMatchGauss times the whole Double-paired matching (costs, Stage 1,
// Stage 2) on the paper's variance experiment: 2-D standard normal source and
// target, linear-kernel MMD, with the dense path and with Auto (which solves
// Stage 2 on the sparse path from 2,000 pairs, lowDimSparse).
func BenchmarkMatchGauss(b *testing.B) {
	for _, n := range []int{1000, 4000} {
		src, tgt := gaussFeatures(n, 2, 1), gaussFeatures(n, 2, 2)
		for _, solver := range []string{Dense, Auto} {
			cfg := Config{BatchSize: 64, Discrepancy: MMD, Kernel: Linear, Stages: 2, Solver: solver}
			b.Run(fmt.Sprintf("n=%d/d=2/linear/%s", n, solver), func(b *testing.B) {
				testref.LoopCPU(b, func() {
					if _, err := Match(src, tgt, cfg); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}
