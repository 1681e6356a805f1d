package psda

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// A matching must not depend on the thread count: the parallel loops split
// work into pieces fixed by the input, and merge them in a fixed order.
// Sizes above par's 1024-row threshold, so that the dense warm start's
// parts run, with tied (clustered, rectified) features.
func TestThreadsSameResult(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	defer SetNumThreads(0)
	rng := rand.New(rand.NewPCG(26, 1))
	feats := func(n, d int) Matrix {
		v := make([]float64, n*d)
		for i := range v {
			v[i] = max(0, math.Round(4*(rng.NormFloat64()+float64(i/d%5)))/4)
		}
		return Matrix{N: n, D: d, F64: v}
	}
	src, tgt := feats(1300, 8), feats(1100, 8)
	for _, cfg := range []Config{
		{BatchSize: 8, Stages: 2, Solver: Dense, Discrepancy: MMD, Kernel: RBF},
		{BatchSize: 8, Stages: 2, Solver: Sparse, Discrepancy: CORAL},
	} {
		var first *Matching
		for _, threads := range []int{1, 2, 3} {
			if err := SetNumThreads(threads); err != nil {
				t.Fatal(err)
			}
			m, err := Match(src, tgt, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = m
				continue
			}
			if !slices.Equal(m.Pairs, first.Pairs) || !slices.Equal(m.Quads, first.Quads) ||
				math.Float64bits(m.Stage2Cost) != math.Float64bits(first.Stage2Cost) ||
				math.Float64bits(m.Stage2Bound) != math.Float64bits(first.Stage2Bound) {
				t.Fatalf("%s/%s: %d threads give Stage 2 cost %v bound %v, 1 thread %v %v (or other pairs/quads)",
					cfg.Solver, cfg.Discrepancy, threads, m.Stage2Cost, m.Stage2Bound, first.Stage2Cost, first.Stage2Bound)
			}
		}
	}
}
