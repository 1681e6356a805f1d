package psda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/testref"
)

type costCase struct {
	name string
	cfg  Config
}

var costCases = []costCase{
	{"mmd-linear-k1", Config{BatchSize: 1, Discrepancy: MMD, Kernel: Linear}},
	{"mmd-linear-k4", Config{BatchSize: 4, Discrepancy: MMD, Kernel: Linear}},
	{"mmd-rbf-default-k2", Config{BatchSize: 2, Discrepancy: MMD, Kernel: RBF}},
	{"mmd-rbf-nonint-k4", Config{BatchSize: 4, Discrepancy: MMD, Kernel: RBF, Gammas: []float64{0.7, 0.03, 3}}},
	{"mmd-rbf-pow2-k2", Config{BatchSize: 2, Discrepancy: MMD, Kernel: RBF, Gammas: []float64{0.25, 0.5, 1, 2, 4, 8, 16}}},
	{"coral-k2", Config{BatchSize: 2, Discrepancy: CORAL}},
	{"coral-k3", Config{BatchSize: 3, Discrepancy: CORAL}},
	{"coral-k6", Config{BatchSize: 6, Discrepancy: CORAL}},
}

// checkCosts compares both stages with the references on one input.
func checkCosts(t *testing.T, cfg Config, src, tgt Matrix, pairs []Pair, tol float64) {
	t.Helper()
	s, tg := testref.RowsF64(src), testref.RowsF64(tgt)
	w1, w2, wm := testref.References(refCost(cfg), s, tg, pairs)
	floor := testref.TermScale(refCost(cfg), src, tgt)
	testref.CloseTo(t, "stage 1", stage1Costs(src, tgt, cfg), w1, tol, floor)
	if w2 == nil {
		return
	}
	c2, m := stage2Costs(src, tgt, cfg, pairs)
	if m != wm {
		t.Fatalf("stage 2: m = %d, want %d", m, wm)
	}
	for r := 0; r < m; r++ {
		for q := 0; q < m; q++ {
			if c2[r*m+q] != c2[q*m+r] {
				t.Fatalf("stage 2: not symmetric at (%d, %d): %v vs %v", r, q, c2[r*m+q], c2[q*m+r])
			}
		}
	}
	testref.CloseTo(t, "stage 2", c2, w2, tol, floor)
}

func TestCostsTiny(t *testing.T) {
	for _, tc := range costCases {
		for _, f32 := range []bool{false, true} {
			for d := 1; d <= 3; d++ {
				for ns := 1; ns <= 6; ns++ {
					for nt := 1; nt <= 6; nt++ {
						name := fmt.Sprintf("%s/f32=%v/d=%d/ns=%d/nt=%d", tc.name, f32, d, ns, nt)
						rng := rand.New(rand.NewPCG(uint64(ns*100+nt*10+d), 7))
						src, tgt := testref.RandMatrix(rng, ns, d, f32), testref.RandMatrix(rng, nt, d, f32)
						pairs := testref.CoveringPairs(rng, ns, nt)
						t.Run(name, func(t *testing.T) { checkCosts(t, tc.cfg, src, tgt, pairs, 1e-12) })
					}
				}
			}
		}
	}
}

// TestCostsTiled shrinks the tiles and covariance slabs and sends every
// distance through the GEMM expansion, so that small inputs exercise the
// multi-tile, edge-tile, partial-sum, slab and micro-kernel paths used at
// scale.
func TestCostsTiled(t *testing.T) {
	defer func(ts, dd, cs int) { gram.TileSize, gram.DirectDim, covSlab = ts, dd, cs }(gram.TileSize, gram.DirectDim, covSlab)
	gram.TileSize, gram.DirectDim, covSlab = 24, 0, 16
	sizes := []struct{ ns, nt, d int }{{50, 31, 3}, {25, 49, 7}, {40, 40, 20}, {13, 61, 1}}
	for _, tc := range costCases {
		for _, f32 := range []bool{false, true} {
			for _, sz := range sizes {
				name := fmt.Sprintf("%s/f32=%v/d=%d/ns=%d/nt=%d", tc.name, f32, sz.d, sz.ns, sz.nt)
				rng := rand.New(rand.NewPCG(uint64(sz.ns*1000+sz.nt), 11))
				src, tgt := testref.RandMatrix(rng, sz.ns, sz.d, f32), testref.RandMatrix(rng, sz.nt, sz.d, f32)
				pairs := testref.CoveringPairs(rng, sz.ns, sz.nt)
				t.Run(name, func(t *testing.T) { checkCosts(t, tc.cfg, src, tgt, pairs, 1e-11) })
			}
		}
	}
}

// TestStage1MeanIsUniformError checks the law of total expectation behind the
// paper's Stage 1 (linear kernel): with k = 1 the minibatch is one source and
// one target drawn uniformly, so the mean of C^st over all (i, j) is the
// expected error E‖D̂ − D‖² of uniform sampling, computed here by brute force.
func TestStage1MeanIsUniformError(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	src, tgt := testref.RandMatrix(rng, 5, 2, false), testref.RandMatrix(rng, 4, 2, false)
	cfg := Config{BatchSize: 1, Discrepancy: MMD, Kernel: Linear}
	c := stage1Costs(src, tgt, cfg)
	ms, mt := colMeans(src), colMeans(tgt)
	want := 0.0
	for i := 0; i < src.N; i++ {
		for j := 0; j < tgt.N; j++ {
			e := 0.0
			for k := 0; k < 2; k++ {
				v := (src.At(i, k) - tgt.At(j, k)) - (ms[k] - mt[k])
				e += v * v
			}
			want += e / float64(src.N*tgt.N)
		}
	}
	if got := sum(c) / float64(len(c)); math.Abs(got-want) > 1e-12*want {
		t.Fatalf("mean C^st = %v, want E‖D̂ − D‖² = %v", got, want)
	}
}
