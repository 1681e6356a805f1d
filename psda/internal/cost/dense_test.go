package cost

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/psda-dev/psda/psda/assign"
	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/testref"
)

// TestDenseAssembly checks the dense matrices of both stages, finished in
// the pass (Stage 1 when its terms come first) or in one pass that also
// mirrors (Stage 2), bit for bit against the split assembled entry by entry
// from a full pass (the unfused reference: c_ij = (row_i + col_j + X_ij)·
// Scale; c_rq = (node_r + node_q + Coef·V_rq)·Scale, symmetric, the dummy
// node single_r·Scale, a zero diagonal), also when written into a used
// buffer (DenseIn), for every discrepancy, odd and even P and several tiles;
// and Stage 2's DenseMax against assign.PriceTol of the matrix.
func TestDenseAssembly(t *testing.T) {
	defer func(ts int) { gram.TileSize = ts }(gram.TileSize)
	gram.TileSize = 48
	specs := denseSpecs
	for _, sh := range [][3]int{{131, 131, 20}, {130, 130, 7}, {151, 70, 24}} {
		for _, sc := range specs {
			t.Run(fmt.Sprintf("%dx%d/d=%d/%s", sh[0], sh[1], sh[2], sc.name), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(sh[0]), uint64(sh[2])))
				src, tgt := testref.BenchFeatures(sh[0], sh[2], 1), testref.RandMatrix(rng, sh[1], sh[2], false)
				ns, nt := src.N, tgt.N

				m1 := NewStage1(src, tgt, sc.spec, sc.deferSums, nil)
				x := make([]float64, ns*nt)
				m1.Pass(Scope{}, func(i, j0 int, v []float64) { copy(x[i*nt+j0:], v) })
				row, col := m1.Terms()
				want1 := make([]float64, ns*nt)
				for i := 0; i < ns; i++ {
					for j := 0; j < nt; j++ {
						want1[i*nt+j] = (row[i] + col[j] + x[i*nt+j]) * m1.Scale
					}
				}
				dirty := nanBuf(ns*nt + 10)
				for _, c1 := range [][]float64{NewStage1(src, tgt, sc.spec, sc.deferSums, nil).Dense(),
					NewStage1(src, tgt, sc.spec, sc.deferSums, nil).DenseIn(dirty)} {
					if !sameBits(c1, want1) {
						t.Fatal("Stage 1's dense matrix differs from its split assembled entry by entry")
					}
				}

				pairs := testref.CoveringPairs(rng, ns, nt)
				m2 := NewStage2(src, tgt, sc.spec, pairs, math.MaxInt64, nil)
				p, m := m2.P, m2.M
				v := make([]float64, m*m)
				m2.Pass(Scope{}, func(r, q0 int, vr []float64) { copy(v[r*m+q0:], vr) })
				node, single := m2.Finish()
				want2 := make([]float64, m*m)
				for r := 0; r < m; r++ {
					for q := r + 1; q < m; q++ {
						e := 0.0
						if q < p {
							e = (node[r] + node[q] + m2.Coef*v[r*m+q]) * m2.Scale
						} else {
							e = single[r] * m2.Scale
						}
						want2[r*m+q], want2[q*m+r] = e, e
					}
				}
				dirty = nanBuf(m*m + 3)
				for _, md := range []*Stage2{NewStage2(src, tgt, sc.spec, pairs, math.MaxInt64, nil),
					NewStage2(src, tgt, sc.spec, pairs, math.MaxInt64, nil)} {
					c2, m2n := md.DenseIn(dirty)
					if m2n != m || !sameBits(c2, want2) {
						t.Fatal("Stage 2's dense matrix differs from its split assembled entry by entry")
					}
					if tol := assign.PriceTol(c2); assign.PriceTol([]float64{md.DenseMax}) != tol {
						t.Fatalf("DenseMax %v gives the tolerance %v, PriceTol of the matrix %v", md.DenseMax, assign.PriceTol([]float64{md.DenseMax}), tol)
					}
					dirty = nil
				}
			})
		}
	}
}

// nanBuf returns n NaNs: a used buffer that DenseIn must overwrite.
func nanBuf(n int) []float64 {
	b := make([]float64, n)
	for i := range b {
		b[i] = math.NaN()
	}
	return b
}

// TestFinishStage2Max checks the largest |entry| that finishStage2 returns
// (Stage2.DenseMax) bit for bit against one taken over the finished matrix
// as assign.PriceTol takes it (NaN and +Inf skipped, −Inf counted), where
// the largest entry sits in the dummy node's column, is negative, or the
// matrix holds NaN, ±Inf or only zeros, over several blocks of rows.
func TestFinishStage2Max(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, p := range []int{150, 151} {
		for _, tc := range []struct {
			name string
			set  func(v, node, single []float64, m int)
		}{
			{"plain", func(v, node, single []float64, m int) {}},
			{"dummy-largest", func(v, node, single []float64, m int) { single[70] = 1e6 }},
			{"negative-largest", func(v, node, single []float64, m int) { v[3*m+140] = -1e6 }},
			{"nan-node", func(v, node, single []float64, m int) { node[65] = nan }},
			{"nan-entry", func(v, node, single []float64, m int) { v[2*m+130] = nan; single[5] = nan }},
			{"inf-entry", func(v, node, single []float64, m int) { v[100*m+101] = inf; single[9] = inf }},
			{"minus-inf-entry", func(v, node, single []float64, m int) { v[1*m+2] = -inf }},
			{"zero", func(v, node, single []float64, m int) { clear(v); clear(node); clear(single) }},
		} {
			t.Run(fmt.Sprintf("p=%d/%s", p, tc.name), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(p), 7))
				m := stage2Size(p)
				c, node, single := make([]float64, m*m), make([]float64, p), make([]float64, p)
				for i := range c {
					c[i] = 2*rng.Float64() - 1
				}
				for r := range node {
					node[r], single[r] = rng.Float64(), rng.Float64()
				}
				tc.set(c, node, single, m)
				got := finishStage2(c, m, p, 0.25, 2, node, single, noProgress{})
				want := 0.0
				for _, x := range c {
					if !math.IsNaN(x) && x != inf {
						want = max(want, math.Abs(x))
					}
				}
				if math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("finishStage2 returned %v, the largest |entry| other than NaN and +Inf is %v", got, want)
				}
				if tol := assign.PriceTol(c); math.Float64bits(tol) != math.Float64bits(1e-9*want) {
					t.Fatalf("assign.PriceTol of the matrix is %v, want 1e-9 × %v: it no longer takes the maximum this way", tol, want)
				}
			})
		}
	}
}

// stopAfter is a Progress that reports cancelled once stop is set.
type stopAfter struct{ stop bool }

func (s *stopAfter) Err() error {
	if s.stop {
		return errors.New("cancelled")
	}
	return nil
}
func (s *stopAfter) AddTile(_, _, _ int) {}

// TestDenseMaxCancelled checks that DenseMax is 0 after a cancelled
// DenseIn, also when an earlier DenseIn of the same model finished (its
// maximum would otherwise stand for a matrix nobody finished).
func TestDenseMaxCancelled(t *testing.T) {
	for name, sp := range map[string]Spec{"rbf": {Kind: RBFMMD, K: 4, Gammas: paperGammas},
		"linear": {Kind: LinearMMD, K: 4}, "coral": {Kind: CORAL, K: 4}} {
		rng := rand.New(rand.NewPCG(3, 4))
		src, tgt := testref.BenchFeatures(61, 9, 1), testref.RandMatrix(rng, 61, 9, false)
		mon := &stopAfter{}
		md := NewStage2(src, tgt, sp, testref.CoveringPairs(rng, src.N, tgt.N), math.MaxInt64, mon)
		if md.DenseIn(nil); md.DenseMax <= 0 {
			t.Fatalf("%s: DenseMax = %v after a finished DenseIn, want > 0", name, md.DenseMax)
		}
		mon.stop = true
		if md.DenseIn(nil); md.DenseMax != 0 {
			t.Fatalf("%s: DenseMax = %v after a cancelled DenseIn, want 0", name, md.DenseMax)
		}
	}
}

// denseSpecs are the discrepancies the dense-matrix tests run: the RBF
// mixture with the kernel sums deferred (a two-stage Match's Stage 1)
// and not, the linear MMD and CORAL.
var denseSpecs = []struct {
	name      string
	spec      Spec
	deferSums bool
}{
	{"rbf-deferred", Spec{Kind: RBFMMD, K: 4, Gammas: paperGammas}, true},
	{"rbf", Spec{Kind: RBFMMD, K: 4, Gammas: paperGammas}, false},
	{"linear", Spec{Kind: LinearMMD, K: 4}, false},
	{"coral", Spec{Kind: CORAL, K: 4}, false},
}
