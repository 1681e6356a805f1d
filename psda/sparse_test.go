package psda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/psda-dev/psda/psda/internal/cost"
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
		defer func(k, a int) { sparseK, sparseAdd = k, a }(sparseK, sparseAdd)
		sparseK, sparseAdd = kc[0], kc[1]
		for _, sh := range shapes {
			for _, dt := range data {
				for _, cc := range cfgs {
					name := fmt.Sprintf("K=%d/%dx%d/%s/%s", kc[0], sh[0], sh[1], dt.name, cc.name)
					t.Run(name, func(t *testing.T) {
						src, tgt := dt.feat(sh[0], dt.d, 1), dt.feat(sh[1], dt.d, 2)
						cfg := cc.cfg
						cfg.Solver = Dense
						want, err := Match(src, tgt, cfg)
						if err != nil {
							t.Fatal(err)
						}
						cfg.Solver = Sparse
						got, err := Match(src, tgt, cfg)
						if err != nil {
							t.Fatal(err)
						}
						if rel(got.Stage1Cost, want.Stage1Cost) > 1e-9 {
							t.Fatalf("stage 1 cost %.15g, dense %.15g", got.Stage1Cost, want.Stage1Cost)
						}
						checkPairs(t, got, src.N, tgt.N)
						if cfg.Stages == 1 {
							return
						}
						// Stage 1 may have tied optima: compare Stage 2 on the dense pairs.
						sp := &Matching{Pairs: want.Pairs}
						if err := stage2Sparse(src, tgt, cfg, sp); err != nil {
							t.Fatal(err)
						}
						// Both paths are exact (blossom algorithm, certified):
						// equal costs, and bounds equal to them up to rounding.
						if want.Stage2Gap() > 1e-9 || sp.Stage2Gap() > 1e-9 {
							t.Fatalf("stage 2 gaps %g (dense) and %g (sparse): both must be 0 up to rounding", want.Stage2Gap(), sp.Stage2Gap())
						}
						if rel(sp.Stage2Bound, want.Stage2Bound) > 1e-9 {
							t.Fatalf("stage 2 bound %.15g, dense %.15g", sp.Stage2Bound, want.Stage2Bound)
						}
						if rel(sp.Stage2Cost, want.Stage2Cost) > 1e-9 {
							t.Fatalf("stage 2 cost %.15g, dense optimum %.15g", sp.Stage2Cost, want.Stage2Cost)
						}
						checkQuads(t, sp, len(want.Pairs))
						// Sparse Match's Stage 2 (candidates from Stage 1's lists)
						// against the dense Stage 2 on the same pairs.
						dm := &Matching{Pairs: got.Pairs}
						if err := stage2(src, tgt, cfg, dm); err != nil {
							t.Fatal(err)
						}
						if rel(got.Stage2Bound, dm.Stage2Bound) > 1e-9 || rel(got.Stage2Cost, dm.Stage2Cost) > 1e-9 {
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

// rel returns |a − b|/|b| (|a − b| when b = 0): relative, whatever the
// scale of the costs.
func rel(a, b float64) float64 {
	if b == 0 {
		return math.Abs(a)
	}
	return math.Abs(a-b) / math.Abs(b)
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

// TestModelPasses checks the cost models' contract that the sparse path
// rests on, against their dense matrices (themselves checked against the
// paper's formulas in cost_test.go): a pass over some rows (Stage 1: or some
// columns) and single entries give the same costs as the full pass. Small
// tiles, so that passes span several tiles and CORAL's several blocks.
func TestModelPasses(t *testing.T) {
	defer func(ts int) { gram.TileSize = ts }(gram.TileSize)
	gram.TileSize = 48
	cfgs := []struct {
		name string
		cfg  Config
	}{
		{"rbf", Config{BatchSize: 4, Discrepancy: MMD, Kernel: RBF}},
		{"linear", Config{BatchSize: 4, Discrepancy: MMD, Kernel: Linear}},
		{"coral", Config{BatchSize: 4, Discrepancy: CORAL}},
	}
	for _, sh := range [][2]int{{150, 150}, {151, 120}, {90, 203}} {
		for _, cc := range cfgs {
			t.Run(fmt.Sprintf("%dx%d/%s", sh[0], sh[1], cc.name), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(sh[0]), uint64(sh[1])))
				src, tgt := testref.BenchFeatures(sh[0], 24, 1), testref.BenchFeatures(sh[1], 24, 2)
				ns, nt := src.N, tgt.N
				m1 := newStage1Model(src, tgt, cc.cfg, false)
				c1 := m1.Dense()
				rt, ct := m1.Terms()
				rows, cols := rng.Perm(ns)[:ns/3], rng.Perm(nt)[:nt/3]
				check1 := func(what string, i, j int, x float64) {
					if got := (rt[i] + ct[j] + x) * m1.Scale; rel(got, c1[i*nt+j]) > 1e-12 {
						t.Errorf("stage 1 %s (%d, %d): %.15g, dense %.15g", what, i, j, got, c1[i*nt+j])
					}
				}
				m1.Pass(cost.Scope{Rows: rows}, func(i, j0 int, x []float64) {
					for k, v := range x {
						check1("row pass", rows[i], j0+k, v)
					}
				})
				m1.Pass(cost.Scope{Cols: cols}, func(i, j0 int, x []float64) {
					for k, v := range x {
						check1("column pass", i, cols[j0+k], v)
					}
				})
				for range 50 {
					i, j := rng.IntN(ns), rng.IntN(nt)
					check1("entry", i, j, m1.At(i, j))
				}
				pairs := testref.CoveringPairs(rng, ns, nt)
				m2 := newStage2Model(src, tgt, cc.cfg, pairs, false)
				c2, m := m2.Dense()
				node, _ := m2.Finish()
				p := len(pairs)
				check2 := func(what string, r, q int, v float64) {
					if r == q {
						return
					}
					if got := (node[r] + node[q] + m2.Coef*v) * m2.Scale; rel(got, c2[r*m+q]) > 1e-12 {
						t.Errorf("stage 2 %s (%d, %d): %.15g, dense %.15g", what, r, q, got, c2[r*m+q])
					}
				}
				sub := rng.Perm(p)[:p/2]
				var seen atomic.Int64 // emit runs concurrently (hence Errorf above)
				m2.Pass(cost.Scope{Rows: sub}, func(r, q0 int, v []float64) {
					for k, x := range v {
						check2("row pass", r, q0+k, x)
					}
					seen.Add(int64(len(v)))
				})
				if int(seen.Load()) != len(sub)*p {
					t.Fatalf("stage 2 row pass emitted %d entries, want %d", seen.Load(), len(sub)*p)
				}
				for range 50 {
					r, q := rng.IntN(p), rng.IntN(p)
					check2("entry", r, q, m2.At(r, q))
				}
			})
		}
	}
}

// TestModelPasses32 checks the float32 passes of the MMD models against
// their exact single entries: every entry of a full and of a row pass is
// within the model's err32 bound (sums of per-vector terms), for d above
// and below directDim, for features with a large common offset (the
// squared distances then cancel in the Gram expansion) and spread out (the
// RBF bound then rests on the kernel's small slope far from 0); a float32
// full pass leaves the terms alone. CORAL has no float32 pass (err32 nil).
func TestModelPasses32(t *testing.T) {
	defer func(ts int) { gram.TileSize = ts }(gram.TileSize)
	gram.TileSize = 48
	for _, cc := range []struct {
		name string
		cfg  Config
	}{
		{"rbf", Config{BatchSize: 4, Discrepancy: MMD, Kernel: RBF}},
		{"linear", Config{BatchSize: 4, Discrepancy: MMD, Kernel: Linear}},
	} {
		for _, d := range []int{6, 40} {
			// spread, offset, scale: 1e-21 puts float32 products below
			// its normal range, where rounding is absolute.
			for _, sh := range [][3]float64{{1, 0, 1}, {1, 30, 1}, {3, 0, 1}, {1, 0, 1e-21}} {
				t.Run(fmt.Sprintf("%s/d=%d/spread=%g/offset=%g/scale=%g", cc.name, d, sh[0], sh[1], sh[2]), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(d), 3))
					src, tgt := testref.BenchFeatures(130, d, 1), testref.BenchFeatures(110, d, 2)
					for _, m := range []Matrix{src, tgt} {
						for k := range m.F64 {
							m.F64[k] = (m.F64[k]*sh[0] + sh[1] + 0.1*rng.NormFloat64()) * sh[2]
						}
					}
					var mu sync.Mutex
					worst := 0.0 // largest error relative to its bound
					within := func(what string, got, want, bound float64) {
						mu.Lock()
						defer mu.Unlock()
						if math.Abs(got-want) > bound {
							t.Errorf("%s: float32 %.15g, exact %.15g, error %.3g above the bound %.3g", what, got, want, math.Abs(got-want), bound)
						}
						if bound > 0 {
							worst = max(worst, math.Abs(got-want)/bound)
						}
					}
					m1 := newStage1Model(src, tgt, cc.cfg, false)
					m1.Dense()
					rt, ct := m1.Terms()
					es, et := m1.Err32()
					m1.Pass(cost.Scope{F32: true}, func(i, j0 int, x []float64) {
						for k, v := range x {
							within(fmt.Sprintf("stage 1 (%d, %d)", i, j0+k), v, m1.At(i, j0+k), es[i]+et[j0+k])
						}
					})
					if rt2, ct2 := m1.Terms(); !slices.Equal(rt, rt2) || !slices.Equal(ct, ct2) {
						t.Errorf("stage 1: a float32 full pass changed the terms")
					}
					pairs := testref.CoveringPairs(rng, src.N, tgt.N)
					m2 := newStage2Model(src, tgt, cc.cfg, pairs, false)
					m2.Dense()
					node, _ := m2.Finish()
					e := m2.Err32()
					check := func(r, q0 int, v []float64) {
						for k, x := range v {
							if q := q0 + k; q != r {
								within(fmt.Sprintf("stage 2 (%d, %d)", r, q), x, m2.At(r, q), e[r]+e[q])
							}
						}
					}
					m2.Pass(cost.Scope{F32: true}, check)
					m2.Pass(cost.Scope{Rows: rng.Perm(len(pairs))[:40], F32: true}, check)
					if node2, _ := m2.Finish(); !slices.Equal(node, node2) {
						t.Errorf("stage 2: a float32 full pass changed the node terms")
					}
					t.Logf("largest error / bound: %.3g", worst)
				})
			}
		}
	}
	if m := newStage1Model(testref.BenchFeatures(5, 3, 1), testref.BenchFeatures(5, 3, 2), Config{BatchSize: 2, Discrepancy: CORAL}, false); m.Bounded {
		t.Errorf("CORAL stage 1 has err32 but no float32 bound was checked for it")
	}
}

// TestFloat32Guard checks that features beyond float32Safe's range keep
// every pass in float64 (a float32 one would overflow) and that the sparse
// path then still equals the dense one.
func TestFloat32Guard(t *testing.T) {
	for _, cfg := range []Config{
		{BatchSize: 4, Discrepancy: MMD, Kernel: Linear, Stages: 2},
		{BatchSize: 4, Discrepancy: MMD, Kernel: RBF, Stages: 2},
	} {
		t.Run(string(cfg.Kernel), func(t *testing.T) {
			src, tgt := tinyFeatures(60, 5, 1), tinyFeatures(60, 5, 2)
			src.F64[7] = 1e18 // one huge value is enough
			if m1 := newStage1Model(src, tgt, cfg, false); m1.Bounded {
				t.Fatal("stage 1 keeps float32 passes with a value of 1e18")
			}
			pairs := make([]Pair, 60)
			for i := range pairs {
				pairs[i] = Pair{S: i, T: i}
			}
			if m2 := newStage2Model(src, tgt, cfg, pairs, false); m2.Bounded {
				t.Fatal("stage 2 keeps float32 passes with a value of 1e18")
			}
			if m1 := newStage1Model(tinyFeatures(60, 5, 1), tgt, cfg, false); !m1.Bounded {
				t.Fatal("stage 1 has no float32 passes on ordinary features")
			}
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
			if rel(got.Stage1Cost, want.Stage1Cost) > 1e-9 || rel(got.Stage2Bound, want.Stage2Bound) > 1e-9 {
				t.Fatalf("sparse costs %.15g, %.15g; dense %.15g, %.15g", got.Stage1Cost, got.Stage2Bound, want.Stage1Cost, want.Stage2Bound)
			}
		})
	}
}
