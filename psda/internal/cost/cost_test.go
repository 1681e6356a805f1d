package cost

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/psda-dev/psda/psda/internal/feat"
	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/testref"
)

// paperGammas is the paper's RBF mixture (psda.DefaultGammas).
var paperGammas = []float64{0.001, 0.01, 0.1, 1, 10}

type costCase struct {
	name string
	spec Spec
}

var costCases = []costCase{
	{"mmd-linear-k1", Spec{Kind: LinearMMD, K: 1}},
	{"mmd-linear-k4", Spec{Kind: LinearMMD, K: 4}},
	{"mmd-rbf-default-k2", Spec{Kind: RBFMMD, K: 2, Gammas: paperGammas}},
	{"mmd-rbf-nonint-k4", Spec{Kind: RBFMMD, K: 4, Gammas: []float64{0.7, 0.03, 3}}},
	{"mmd-rbf-pow2-k2", Spec{Kind: RBFMMD, K: 2, Gammas: []float64{0.25, 0.5, 1, 2, 4, 8, 16}}},
	{"coral-k2", Spec{Kind: CORAL, K: 2}},
	{"coral-k3", Spec{Kind: CORAL, K: 3}},
	{"coral-k6", Spec{Kind: CORAL, K: 6}},
}

// stage1Costs is Stage 1's dense matrix.
func stage1Costs(src, tgt feat.Matrix, s Spec) []float64 {
	return NewStage1(src, tgt, s, false, nil).Dense()
}

// stage2Costs is Stage 2's dense matrix and its size, factored where the
// RBF mixture allows it (as on the dense path).
func stage2Costs(src, tgt feat.Matrix, s Spec, pairs []feat.Pair) ([]float64, int) {
	return NewStage2(src, tgt, s, pairs, math.MaxInt64, nil).Dense()
}

// refCost names s for the references of internal/testref.
func refCost(s Spec) testref.Cost {
	c := testref.Cost{K: s.K, CORAL: s.Kind == CORAL}
	if s.Kind == RBFMMD {
		c.Gammas = s.Gammas
	}
	return c
}

// checkCosts compares both stages with the references on one input.
func checkCosts(t *testing.T, spec Spec, src, tgt feat.Matrix, pairs []feat.Pair, tol float64) {
	t.Helper()
	s, tg := testref.RowsF64(src), testref.RowsF64(tgt)
	w1, w2, wm := testref.References(refCost(spec), s, tg, pairs)
	floor := testref.TermScale(refCost(spec), src, tgt)
	testref.CloseTo(t, "stage 1", stage1Costs(src, tgt, spec), w1, tol, floor)
	if w2 == nil {
		return
	}
	c2, m := stage2Costs(src, tgt, spec, pairs)
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
						t.Run(name, func(t *testing.T) { checkCosts(t, tc.spec, src, tgt, pairs, 1e-12) })
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
				t.Run(name, func(t *testing.T) { checkCosts(t, tc.spec, src, tgt, pairs, 1e-11) })
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
	c := stage1Costs(src, tgt, Spec{Kind: LinearMMD, K: 1})
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
