package psda

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// The sparse path collects violating edges on several goroutines; the
// matching and the last bits of its bound must not depend on their
// schedule (same input, same output: docs/design.md). Clustered ReLU
// features and CORAL make many equal-cost choices and several pricing
// rounds, where the order of the collected edges used to show.
func TestSparseDeterministic(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	feats := func(n, d int, seed uint64) Matrix {
		rng := rand.New(rand.NewPCG(seed, 7))
		v := make([]float64, n*d)
		for i := range v {
			x := rng.NormFloat64() + float64(i%d)*0.1
			if i/d%3 == 0 {
				x += 2
			}
			v[i] = max(x, 0)
		}
		return Matrix{N: n, D: d, F64: v}
	}
	src, tgt := feats(400, 30, 1), feats(120, 30, 2)
	for _, cfg := range []Config{
		{BatchSize: 4, Stages: 2, Solver: Sparse, Discrepancy: CORAL},
		{BatchSize: 4, Stages: 2, Solver: Sparse, Discrepancy: MMD, Kernel: RBF},
	} {
		first, err := Match(src, tgt, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for run := 1; run < 12; run++ {
			m, err := Match(src, tgt, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(m.Pairs, first.Pairs) || !slices.Equal(m.Quads, first.Quads) ||
				math.Float64bits(m.Stage2Bound) != math.Float64bits(first.Stage2Bound) ||
				math.Float64bits(m.Stage2Cost) != math.Float64bits(first.Stage2Cost) {
				t.Fatalf("%s run %d: Stage 2 cost %v bound %v, first run %v %v (or other pairs/quads)",
					cfg.Discrepancy, run, m.Stage2Cost, m.Stage2Bound, first.Stage2Cost, first.Stage2Bound)
			}
		}
	}
}
