package psda

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/psda-dev/psda/psda/internal/cost"
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

// TestSparseStage2SameUnderLessMemory checks that the sparse Stage 2 of
// imbalanced RBF pairs gives the same bits whatever memory is free: the
// factored model and the paired vectors' model agree only to rounding,
// so the choice between them must not follow the memory available
// (plan.stage2Table). The smaller reading leaves room for the factored
// tables with checkMemory's margin, but less than twice their bytes.
func TestSparseStage2SameUnderLessMemory(t *testing.T) {
	src, tgt := gaussFeatures(400, 8, 1), gaussFeatures(40, 8, 2)
	cfg := Config{BatchSize: 4, Stages: 2, Solver: Auto, Discrepancy: MMD, Kernel: RBF}
	tables := cost.FactoredBytes(400, 40)
	_, s2 := stageBytes(400, 40)
	var got [2]*Matching
	for k, avail := range []int64{1 << 40, tables + tables/4} {
		pl := defaultPlan()
		pl.denseLimit = s2 - 1 // Stage 1 dense, Stage 2 sparse
		pl.available = func() (int64, memLimit) { return avail, limitMachine }
		m, err := pl.match(src, tgt, cfg)
		if err != nil {
			t.Fatalf("available %d bytes: %v", avail, err)
		}
		got[k] = m
	}
	a, b := got[0], got[1]
	if !slices.Equal(a.Pairs, b.Pairs) || !slices.Equal(a.Quads, b.Quads) ||
		math.Float64bits(a.Stage2Cost) != math.Float64bits(b.Stage2Cost) ||
		math.Float64bits(a.Stage2Bound) != math.Float64bits(b.Stage2Bound) {
		t.Fatalf("Stage 2 cost %v bound %v with plenty of memory, %v %v with %d bytes (or other pairs/quads)",
			a.Stage2Cost, a.Stage2Bound, b.Stage2Cost, b.Stage2Bound, tables+tables/4)
	}
}
