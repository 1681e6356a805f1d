package cost

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/testref"
)

// TestDenseTransposed checks that Stage 1's matrix written with the
// targets as rows (DenseT, DenseTIn into a used buffer) is Dense's
// transposed bit for bit, for every discrepancy (the RBF mixture with and
// without deferred sums, the linear MMD, CORAL), with more targets than
// sources and fewer, over one tile and several in each direction (short
// last tiles: the sums are formed per tile block), d on the direct path
// and on the GEMM one, on every kernel path; and that everything else a
// pass leaves behind is the same bits too: the row and column terms (the
// cross sums behind them), the float32 bound (the nearest partners) and
// the kept cross kernel, transposed (Cross.T).
func TestDenseTransposed(t *testing.T) {
	specs := denseSpecs
	for _, path := range gram.Paths() {
		for _, sh := range []struct{ ns, nt, d, tile int }{
			{37, 161, 24, 48}, {161, 37, 24, 48}, {50, 203, 5, 48}, {96, 96, 40, 48}, {70, 300, 100, 24}, {23, 71, 300, 192},
		} {
			for _, sc := range specs {
				t.Run(fmt.Sprintf("%s/%dx%d/d=%d/tile=%d/%s", path, sh.ns, sh.nt, sh.d, sh.tile, sc.name), func(t *testing.T) {
					usePathTile(t, path, sh.tile)
					rng := rand.New(rand.NewPCG(uint64(sh.ns), uint64(sh.d)))
					src, tgt := testref.BenchFeatures(sh.ns, sh.d, 1), testref.RandMatrix(rng, sh.nt, sh.d, true)
					ns, nt := src.N, tgt.N

					plain := NewStage1(src, tgt, sc.spec, sc.deferSums, nil)
					kept := plain.KeepCross()
					want := plain.Dense()
					cross := plain.Cross()
					wantT := make([]float64, ns*nt)
					for i := 0; i < ns; i++ {
						for j := 0; j < nt; j++ {
							wantT[j*ns+i] = want[i*nt+j]
						}
					}
					trans := NewStage1(src, tgt, sc.spec, sc.deferSums, nil)
					trans.KeepCross()
					got := trans.DenseT()
					if !sameBits(got, wantT) {
						t.Fatal("DenseT is not Dense transposed bit for bit")
					}
					if got := NewStage1(src, tgt, sc.spec, sc.deferSums, nil).DenseTIn(nanBuf(ns*nt + 10)); !sameBits(got, wantT) {
						t.Fatal("DenseTIn into a used buffer is not Dense transposed bit for bit")
					}
					r1, c1 := plain.Terms()
					r2, c2 := trans.Terms()
					if !sameBits(r1, r2) || !sameBits(c1, c2) {
						t.Fatal("the row or column terms differ after a transposed pass")
					}
					if plain.Bounded {
						e1, f1 := plain.Err32()
						e2, f2 := trans.Err32()
						if !sameBits(e1, e2) || !sameBits(f1, f2) {
							t.Fatal("the float32 bound differs after a transposed pass")
						}
					}
					crossT := trans.Cross()
					if !kept {
						if crossT != nil {
							t.Fatal("a model without a cross kernel kept one")
						}
						return
					}
					if cross.T || !crossT.T || crossT.NS != ns || crossT.NT != nt {
						t.Fatalf("kept kernels' layouts: Dense's T = %v, DenseT's T = %v, %d×%d", cross.T, crossT.T, crossT.NS, crossT.NT)
					}
					for i := 0; i < ns; i++ {
						for j := 0; j < nt; j++ {
							if a, b := cross.K[i*nt+j], crossT.K[j*ns+i]; math.Float64bits(a) != math.Float64bits(b) {
								t.Fatalf("kept κ(s_%d, t_%d): %v by Dense, %v by DenseT", i, j, a, b)
							}
						}
					}
				})
			}
		}
	}
}
