package cost

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/psda-dev/psda/psda/internal/feat"
	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/testref"
)

// The low-rank CORAL form gives the dense form's costs: both routes of
// covForm through both stages' matrices, on shapes where either would be
// chosen.
func TestCoralLowRankEqualsDense(t *testing.T) {
	saved := coralLowRank
	defer func() { coralLowRank = saved }()
	for _, tc := range []struct {
		name           string
		ns, nt, d, k   int
		stages         int
		useF32, oneRow bool
	}{
		{"wide", 7, 5, 40, 2, 2, false, false},
		{"narrow", 30, 25, 3, 4, 2, false, false},
		{"wide float32 stage 1", 6, 9, 25, 3, 1, true, false},
		{"one target row", 6, 1, 12, 2, 2, false, true},
		{"several tiles", 9, 8, 2*gram.TileSize + 7, 2, 2, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.ns), uint64(tc.d)))
			mk := func(n int, shift float64) feat.Matrix {
				m := feat.Matrix{N: n, D: tc.d}
				if tc.useF32 {
					m.F32 = make([]float32, n*tc.d)
					for i := range m.F32 {
						m.F32[i] = float32(rng.NormFloat64() + shift)
					}
				} else {
					m.F64 = make([]float64, n*tc.d)
					for i := range m.F64 {
						m.F64[i] = rng.NormFloat64()*1.5 + shift
					}
				}
				return m
			}
			src, tgt := mk(tc.ns, 0), mk(tc.nt, 0.4)
			spec := Spec{Kind: CORAL, K: tc.k}
			pairs := testref.CoveringPairs(rng, tc.ns, tc.nt)
			var c1, c2 [2][]float64
			for i, low := range []bool{false, true} {
				coralLowRank = func(int, int) bool { return low }
				c1[i] = stage1Costs(src, tgt, spec)
				if tc.stages == 2 {
					c2[i], _ = stage2Costs(src, tgt, spec, pairs)
				}
			}
			testref.CloseTo(t, "stage 1", c1[1], c1[0], 1e-9, 1)
			testref.CloseTo(t, "stage 2", c2[1], c2[0], 1e-9, 1)
		})
	}
}

// The low-rank form's three operations against the dense matrix directly.
func TestCovFormOperations(t *testing.T) {
	saved := coralLowRank
	defer func() { coralLowRank = saved }()
	rng := rand.New(rand.NewPCG(3, 4))
	const ns, nt, d = 5, 4, 11
	src, tgt := feat.Matrix{N: ns, D: d, F64: make([]float64, ns*d)}, feat.Matrix{N: nt, D: d, F64: make([]float64, nt*d)}
	for i := range src.F64 {
		src.F64[i] = rng.NormFloat64()
	}
	for i := range tgt.F64 {
		tgt.F64[i] = rng.NormFloat64() + 1
	}
	ms, mt := colMeans(src), colMeans(tgt)
	coralLowRank = func(int, int) bool { return false }
	dense := newCovForm(src, tgt, ms, mt, 0.7, -1.3, nil)
	coralLowRank = func(int, int) bool { return true }
	low := newCovForm(src, tgt, ms, mt, 0.7, -1.3, nil)
	if low.dense != nil || dense.dense == nil {
		t.Fatal("the forms were not forced")
	}
	x := rowsOf(src, nil, nil)
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-10*math.Max(1, math.Abs(a)) }
	if a, b := dense.frob2(nil), low.frob2(nil); !near(a, b) {
		t.Fatalf("frob2: dense %v, low rank %v", a, b)
	}
	qd, ql := dense.quad(x, nil), low.quad(x, nil)
	td, tl := dense.times(x, nil), low.times(x, nil)
	for i := range qd {
		if !near(qd[i], ql[i]) {
			t.Fatalf("quad[%d]: dense %v, low rank %v", i, qd[i], ql[i])
		}
	}
	for i := range td {
		if !near(td[i], tl[i]) {
			t.Fatalf("times[%d]: dense %v, low rank %v", i, td[i], tl[i])
		}
	}
}
