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

// TestCrossBitIdentical checks the cross kernel kept from Stage 1 (cross.go)
// on every kernel path: the kept table against κ evaluated directly
// (testref.RBFKappa), Stage 1's matrix unchanged by keeping it, and Stage 2's
// matrix, kernel sums and float32 bound with the table read bit for bit
// those computed without it, and both against the paper's formulas. Sizes
// span one tile and several (a short last one, odd P: the dummy node;
// the paper's formulas on the small ones), the
// direct path (d <= DirectDim), one and two K blocks, and tile widths that
// do and do not fit the micro-kernel (GramHalves then computes more); and d > 64 with
// tiles whose shapes differ between the stages (n = 300: Stage 2's last
// tile is 24 wide), where gonum's Dgemm on the portable path once summed
// an entry's products in a different order.
func TestCrossBitIdentical(t *testing.T) {
	spec := Spec{Kind: RBFMMD, K: 4, Gammas: paperGammas}
	for _, path := range gram.Paths() {
		for _, tc := range []struct{ n, d, tile int }{
			{150, 24, 48}, {151, 5, 48}, {97, 300, 24}, {39, 17, 192}, {40, 40, 12}, {203, 40, 60}, {300, 100, 192},
		} {
			t.Run(fmt.Sprintf("%s/n=%d/d=%d/tile=%d", path, tc.n, tc.d, tc.tile), func(t *testing.T) {
				usePathTile(t, path, tc.tile)
				rng := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.d)))
				src := testref.RandMatrix(rng, tc.n, tc.d, true)
				tgt := testref.BenchFeatures(tc.n, tc.d, 2)
				pairs := make([]feat.Pair, tc.n)
				for r, j := range rng.Perm(tc.n) {
					pairs[r] = feat.Pair{S: r, T: j}
				}

				m1 := NewStage1(src, tgt, spec, true, nil)
				if !m1.KeepCross() {
					t.Fatal("KeepCross refused the RBF mixture")
				}
				c1 := m1.Dense()
				cross := m1.Cross()
				if want := NewStage1(src, tgt, spec, true, nil).Dense(); !sameBits(c1, want) {
					t.Fatal("Stage 1's matrix changed when its cross kernel was kept")
				}
				kappa := testref.RBFKappa(paperGammas)
				s, tg := testref.RowsF64(src), testref.RowsF64(tgt)
				for i := range s {
					for j := range tg {
						if got, want := cross.K[i*tc.n+j], kappa(s[i], tg[j]); !(math.Abs(got-want) <= 1e-13) { // NaN fails
							t.Fatalf("kept κ(s_%d, t_%d) = %.17g, direct %.17g", i, j, got, want)
						}
					}
				}

				plain := NewStage2(src, tgt, spec, pairs, math.MaxInt64, nil)
				want, m := plain.Dense()
				reuse := NewStage2(src, tgt, spec, pairs, math.MaxInt64, nil)
				if !reuse.UseCross(cross) {
					t.Fatal("UseCross refused a balanced Stage 1's pairs")
				}
				got, _ := reuse.Dense()
				if !sameBits(got, want) {
					t.Fatal("Stage 2's matrix differs with the cross kernel read from Stage 1")
				}
				a1, a2, a3 := plain.KernelSums()
				b1, b2, b3 := reuse.KernelSums()
				if !sameBits([]float64{a1, a2, a3}, []float64{b1, b2, b3}) {
					t.Fatalf("kernel sums %v %v %v with the table, %v %v %v without", b1, b2, b3, a1, a2, a3)
				}
				if !sameBits(reuse.Err32(), plain.Err32()) {
					t.Fatal("Stage 2's float32 bound differs with the cross kernel read from Stage 1")
				}
				if tc.n <= 40 { // the reference is O(n³·d)
					c := testref.Cost{K: spec.K, Gammas: paperGammas}
					_, ref, mr := testref.References(c, s, tg, pairs)
					if mr != m {
						t.Fatalf("%d nodes, the reference has %d", m, mr)
					}
					testref.CloseTo(t, "stage 2 with the table", got, ref, 1e-12, testref.TermScale(c, src, tgt))
				}
			})
		}
	}
}

// TestFactoredCrossBitIdentical checks the factored Stage 2 (rbf2Factored)
// with its table K_ab taken from Stage 1's cross kernel (crossTables)
// against the same model computing K_ab by its own Gram pass (abTables):
// every table and sum derived from K_ab, the dense matrix, the split, the
// kernel sums and the float32 bound, bit for bit, on every kernel path,
// with A the source and with A the target, Stage 1's kernel kept in
// either layout (Dense's, sources first, or DenseT's, targets first, as
// stage1 keeps it when the targets are more: K_ab itself, or its
// transpose), over one tile and several in each direction (short last
// tiles; the sums are formed per tile block, so a sum formed in another
// order shows in its last bits).
func TestFactoredCrossBitIdentical(t *testing.T) {
	spec := Spec{Kind: RBFMMD, K: 4, Gammas: paperGammas}
	for _, path := range gram.Paths() {
		for _, tc := range []struct{ na, nb, d, tile int }{
			{160, 40, 24, 48}, {203, 17, 5, 48}, {300, 70, 100, 24}, {97, 24, 300, 192}, {250, 50, 40, 12},
		} {
			for _, lay := range [][2]bool{{true, false}, {true, true}, {false, false}, {false, true}} {
				aIsSrc, trans := lay[0], lay[1]
				t.Run(fmt.Sprintf("%s/%dx%d/d=%d/tile=%d/aIsSrc=%v/T=%v", path, tc.na, tc.nb, tc.d, tc.tile, aIsSrc, trans), func(t *testing.T) {
					usePathTile(t, path, tc.tile)
					rng := rand.New(rand.NewPCG(uint64(tc.na), uint64(tc.d)))
					a := testref.RandMatrix(rng, tc.na, tc.d, true)
					b := testref.BenchFeatures(tc.nb, tc.d, 2)
					pairs := make([]feat.Pair, tc.na) // row r of A in pair r, every row of B used
					for r := range pairs {
						pairs[r] = feat.Pair{S: r, T: (r + rng.IntN(tc.nb)) % tc.nb}
						if r < tc.nb {
							pairs[r].T = r
						}
					}
					src, tgt := a, b
					if !aIsSrc {
						src, tgt = b, a
						for r, pr := range pairs {
							pairs[r] = feat.Pair{S: pr.T, T: pr.S}
						}
					}
					m1 := NewStage1(src, tgt, spec, false, nil)
					m1.KeepCross()
					if trans {
						m1.DenseT()
					} else {
						m1.Dense()
					}
					cross := m1.Cross()
					if cross.T != trans {
						t.Fatalf("the kept kernel's layout: T = %v after a pass with trans = %v", cross.T, trans)
					}

					plain := NewStage2(src, tgt, spec, pairs, math.MaxInt64, nil)
					want, _ := plain.Dense()
					reuse := NewStage2(src, tgt, spec, pairs, math.MaxInt64, nil)
					if !reuse.UseCross(cross) {
						t.Fatal("UseCross refused the factored model's own table")
					}
					got, _ := reuse.Dense()
					f, g := reuse.model.(*rbf2Factored), plain.model.(*rbf2Factored)
					if f.cross != nil {
						t.Fatal("the factored model still holds Stage 1's kernel after its pass")
					}
					for _, c := range []struct {
						name      string
						got, want []float64
					}{
						{"K_ab's row sums", f.rowAB, g.rowAB}, {"K_ab's column sums", f.colAB, g.colAB},
						{"the nearest table values", f.nearTab, g.nearTab}, {"K_ab transposed", f.kba, g.kba},
						{"f transposed", f.fT, g.fT}, {"K_ab[r, b_r]", f.abDiag, g.abDiag}, {"K_aa's row sums", f.rowAA, g.rowAA},
						{"the matrix", got, want}, {"the float32 bound", reuse.Err32(), plain.Err32()},
					} {
						if !sameBits(c.got, c.want) {
							t.Fatalf("%s differ with K_ab from Stage 1's kernel", c.name)
						}
					}
					n1, s1 := reuse.Finish()
					n2, s2 := plain.Finish()
					a1, a2, a3 := plain.KernelSums()
					b1, b2, b3 := reuse.KernelSums()
					if !sameBits(n1, n2) || !sameBits(s1, s2) || !sameBits([]float64{a1, a2, a3}, []float64{b1, b2, b3}) {
						t.Fatal("the split or the kernel sums differ with K_ab from Stage 1's kernel")
					}
				})
			}
		}
	}
}

// TestUseCrossRefuses checks that Stage 2 reads a kept cross kernel only
// where it is its own: pairs whose sources are not in order, an imbalanced
// Stage 1, and the linear kernel leave it untouched.
func TestUseCrossRefuses(t *testing.T) {
	spec := Spec{Kind: RBFMMD, K: 4, Gammas: paperGammas}
	src, tgt := testref.BenchFeatures(30, 8, 1), testref.BenchFeatures(30, 8, 2)
	keep := func(s, t feat.Matrix) *Cross {
		m1 := NewStage1(s, t, spec, true, nil)
		m1.KeepCross()
		m1.Dense()
		return m1.Cross()
	}
	shuffled := testref.CoveringPairs(rand.New(rand.NewPCG(1, 1)), 30, 30)
	small := testref.BenchFeatures(20, 8, 3)
	for _, tc := range []struct {
		name     string
		tgt      feat.Matrix
		spec     Spec
		pairs    []feat.Pair
		crossTgt feat.Matrix
	}{
		{"sources out of order", tgt, spec, shuffled, tgt},
		{"imbalanced", small, spec, testref.CoveringPairs(rand.New(rand.NewPCG(2, 2)), 30, 20), small},
		{"linear", tgt, Spec{Kind: LinearMMD, K: 4}, inOrder(30), tgt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := keep(src, tc.crossTgt)
			before := append([]float64(nil), c.K...)
			if NewStage2(src, tc.tgt, tc.spec, tc.pairs, math.MaxInt64, nil).UseCross(c) {
				t.Fatal("UseCross took a table that is not its own")
			}
			if !sameBits(c.K, before) {
				t.Fatal("UseCross changed a table it refused")
			}
		})
	}
	if m1 := NewStage1(src, tgt, Spec{Kind: LinearMMD, K: 4}, false, nil); m1.KeepCross() || m1.Cross() != nil {
		t.Fatal("the linear kernel kept a cross kernel")
	}
}

// inOrder returns n pairs (r, r).
func inOrder(n int) []feat.Pair {
	p := make([]feat.Pair, n)
	for r := range p {
		p[r] = feat.Pair{S: r, T: r}
	}
	return p
}

// sameBits reports whether a and b hold the same float64 bits.
func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// usePathTile runs the rest of t on the Gram kernel path and with the tile
// size given, both restored when t ends.
func usePathTile(t *testing.T, path string, tile int) {
	t.Helper()
	prev, err := gram.UsePath(path)
	if err != nil {
		t.Fatal(err)
	}
	ts := gram.TileSize
	gram.TileSize = tile
	t.Cleanup(func() { gram.UsePath(prev); gram.TileSize = ts })
}
