package psda

import (
	"fmt"
	"testing"

	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/testref"
)

// TestSparseEqualsDense checks that the sparse path returns the dense path's
// optimum (Stage 1 cost, Stage 2 cost and certified bound, both exact) on
// balanced, imbalanced both ways and odd pair counts, with few candidates
// so that several pricing rounds run.
func TestSparseEqualsDense(t *testing.T) {
	shapes := [][2]int{{120, 120}, {121, 121}, {200, 70}, {70, 200}, {97, 31}}
	data := []struct {
		name string
		feat func(n, d int, seed uint64) Matrix
		d    int
	}{{"relu8", testref.BenchFeatures, 8}, {"gauss2", gaussFeatures, 2}, {"relu40", testref.BenchFeatures, 40}, {"tiny2", tinyFeatures, 2}}
	cfgs := []struct {
		name string
		cfg  Config
	}{
		{"rbf", Config{BatchSize: 4, Discrepancy: MMD, Kernel: RBF, Stages: 2}},
		{"linear", Config{BatchSize: 4, Discrepancy: MMD, Kernel: Linear, Stages: 2}},
		{"coral", Config{BatchSize: 4, Discrepancy: CORAL, Stages: 2}},
	}
	// Small tiles: CORAL's Stage 2 passes take the pairs in blocks of two
	// tiles, so that several blocks and partial blocks run.
	defer func(ts int) { gram.TileSize = ts }(gram.TileSize)
	gram.TileSize = 48
	for _, kc := range [][2]int{{32, 32}, {2, 1}} {
		pl := defaultPlan()
		pl.sparseK, pl.sparseAdd = kc[0], kc[1]
		for _, sh := range shapes {
			for _, dt := range data {
				for _, cc := range cfgs {
					name := fmt.Sprintf("K=%d/%dx%d/%s/%s", kc[0], sh[0], sh[1], dt.name, cc.name)
					t.Run(name, func(t *testing.T) {
						src, tgt := dt.feat(sh[0], dt.d, 1), dt.feat(sh[1], dt.d, 2)
						cfg := cc.cfg
						cfg.Solver = Dense
						want, err := pl.match(src, tgt, cfg)
						if err != nil {
							t.Fatal(err)
						}
						cfg.Solver = Sparse
						got, err := pl.match(src, tgt, cfg)
						if err != nil {
							t.Fatal(err)
						}
						if testref.Rel(got.Stage1Cost, want.Stage1Cost) > 1e-9 {
							t.Fatalf("stage 1 cost %.15g, dense %.15g", got.Stage1Cost, want.Stage1Cost)
						}
						checkPairs(t, got, src.N, tgt.N)
						if cfg.Stages == 1 {
							return
						}
						// Stage 1 may have tied optima: compare Stage 2 on the dense pairs.
						sp := &Matching{Pairs: want.Pairs}
						if err := pl.stage2Sparse(src, tgt, cfg, sp); err != nil {
							t.Fatal(err)
						}
						// Both paths are exact (blossom algorithm, certified):
						// equal costs, and bounds equal to them up to rounding.
						if want.Stage2Gap() > 1e-9 || sp.Stage2Gap() > 1e-9 {
							t.Fatalf("stage 2 gaps %g (dense) and %g (sparse): both must be 0 up to rounding", want.Stage2Gap(), sp.Stage2Gap())
						}
						if testref.Rel(sp.Stage2Bound, want.Stage2Bound) > 1e-9 {
							t.Fatalf("stage 2 bound %.15g, dense %.15g", sp.Stage2Bound, want.Stage2Bound)
						}
						if testref.Rel(sp.Stage2Cost, want.Stage2Cost) > 1e-9 {
							t.Fatalf("stage 2 cost %.15g, dense optimum %.15g", sp.Stage2Cost, want.Stage2Cost)
						}
						checkQuads(t, sp, len(want.Pairs))
						// Sparse Match's Stage 2 (candidates from Stage 1's lists)
						// against the dense Stage 2 on the same pairs.
						dm := &Matching{Pairs: got.Pairs}
						if err := pl.stage2(src, tgt, cfg, dm); err != nil {
							t.Fatal(err)
						}
						if testref.Rel(got.Stage2Bound, dm.Stage2Bound) > 1e-9 || testref.Rel(got.Stage2Cost, dm.Stage2Cost) > 1e-9 {
							t.Fatalf("sparse Match: stage 2 cost %.15g, bound %.15g; dense %.15g, %.15g", got.Stage2Cost, got.Stage2Bound, dm.Stage2Cost, dm.Stage2Bound)
						}
						checkQuads(t, got, len(got.Pairs))
					})
				}
			}
		}
	}
}

// tinyFeatures are gaussFeatures times 1e-3: costs of order 1e-12, so that
// a tolerance with an absolute part would accept suboptimal duals.
func tinyFeatures(n, d int, seed uint64) Matrix {
	m := gaussFeatures(n, d, seed)
	for i := range m.F64 {
		m.F64[i] *= 1e-3
	}
	return m
}

// checkPairs checks the Stage 1 constraints: every example used, the larger
// side exactly once, the smaller side's counts differing by at most one.
func checkPairs(t *testing.T, m *Matching, ns, nt int) {
	t.Helper()
	cs, ct := make([]int, ns), make([]int, nt)
	for _, p := range m.Pairs {
		cs[p.S]++
		ct[p.T]++
	}
	for _, c := range [][]int{cs, ct} {
		lo, hi := c[0], c[0]
		for _, x := range c {
			lo, hi = min(lo, x), max(hi, x)
		}
		if lo < 1 || hi-lo > 1 {
			t.Fatalf("use counts range over [%d, %d]", lo, hi)
		}
	}
}

// checkQuads checks that the quadruplets and singles cover every pair once.
func checkQuads(t *testing.T, m *Matching, p int) {
	t.Helper()
	seen := make([]int, p)
	for _, q := range m.Quads {
		seen[q[0]]++
		seen[q[1]]++
	}
	for _, r := range m.Singles {
		seen[r]++
	}
	for r, c := range seen {
		if c != 1 {
			t.Fatalf("pair %d used %d times", r, c)
		}
	}
	if len(m.Singles) != p%2 {
		t.Fatalf("%d singles for %d pairs", len(m.Singles), p)
	}
}

// TestFloat32Guard checks that the sparse path still equals the dense one
// on features beyond the range of float32 passes, where the cost models
// keep every pass in float64 (internal/cost's TestFloat32Guard).
func TestFloat32Guard(t *testing.T) {
	for _, cfg := range []Config{
		{BatchSize: 4, Discrepancy: MMD, Kernel: Linear, Stages: 2},
		{BatchSize: 4, Discrepancy: MMD, Kernel: RBF, Stages: 2},
	} {
		t.Run(string(cfg.Kernel), func(t *testing.T) {
			src, tgt := tinyFeatures(60, 5, 1), tinyFeatures(60, 5, 2)
			src.F64[7] = 1e18 // one huge value is enough
			dense, sparse := cfg, cfg
			dense.Solver, sparse.Solver = Dense, Sparse
			want, err := Match(src, tgt, dense)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Match(src, tgt, sparse)
			if err != nil {
				t.Fatal(err)
			}
			if testref.Rel(got.Stage1Cost, want.Stage1Cost) > 1e-9 || testref.Rel(got.Stage2Bound, want.Stage2Bound) > 1e-9 {
				t.Fatalf("sparse costs %.15g, %.15g; dense %.15g, %.15g", got.Stage1Cost, got.Stage2Bound, want.Stage1Cost, want.Stage2Bound)
			}
		})
	}
}
