package cost

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/psda-dev/psda/psda/internal/feat"
	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/testref"
)

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
		spec Spec
	}{
		{"rbf", Spec{Kind: RBFMMD, K: 4, Gammas: paperGammas}},
		{"linear", Spec{Kind: LinearMMD, K: 4}},
		{"coral", Spec{Kind: CORAL, K: 4}},
	}
	for _, sh := range [][2]int{{150, 150}, {151, 120}, {90, 203}} {
		for _, cc := range cfgs {
			t.Run(fmt.Sprintf("%dx%d/%s", sh[0], sh[1], cc.name), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(sh[0]), uint64(sh[1])))
				src, tgt := testref.BenchFeatures(sh[0], 24, 1), testref.BenchFeatures(sh[1], 24, 2)
				ns, nt := src.N, tgt.N
				m1 := NewStage1(src, tgt, cc.spec, false, nil)
				c1 := m1.Dense()
				rt, ct := m1.Terms()
				rows, cols := rng.Perm(ns)[:ns/3], rng.Perm(nt)[:nt/3]
				check1 := func(what string, i, j int, x float64) {
					if got := (rt[i] + ct[j] + x) * m1.Scale; testref.Rel(got, c1[i*nt+j]) > 1e-12 {
						t.Errorf("stage 1 %s (%d, %d): %.15g, dense %.15g", what, i, j, got, c1[i*nt+j])
					}
				}
				m1.Pass(Scope{Rows: rows}, func(i, j0 int, x []float64) {
					for k, v := range x {
						check1("row pass", rows[i], j0+k, v)
					}
				})
				m1.Pass(Scope{Cols: cols}, func(i, j0 int, x []float64) {
					for k, v := range x {
						check1("column pass", i, cols[j0+k], v)
					}
				})
				for range 50 {
					i, j := rng.IntN(ns), rng.IntN(nt)
					check1("entry", i, j, m1.At(i, j))
				}
				pairs := testref.CoveringPairs(rng, ns, nt)
				m2 := NewStage2(src, tgt, cc.spec, pairs, math.MaxInt64, nil)
				c2, m := m2.Dense()
				node, _ := m2.Finish()
				p := len(pairs)
				check2 := func(what string, r, q int, v float64) {
					if r == q {
						return
					}
					if got := (node[r] + node[q] + m2.Coef*v) * m2.Scale; testref.Rel(got, c2[r*m+q]) > 1e-12 {
						t.Errorf("stage 2 %s (%d, %d): %.15g, dense %.15g", what, r, q, got, c2[r*m+q])
					}
				}
				sub := rng.Perm(p)[:p/2]
				var seen atomic.Int64 // emit runs concurrently (hence Errorf above)
				m2.Pass(Scope{Rows: sub}, func(r, q0 int, v []float64) {
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
// within the model's Err32 bound (sums of per-vector terms), for d above
// and below directDim, for features with a large common offset (the
// squared distances then cancel in the Gram expansion) and spread out (the
// RBF bound then rests on the kernel's small slope far from 0); a float32
// full pass leaves the terms alone. CORAL has no float32 pass (not Bounded).
func TestModelPasses32(t *testing.T) {
	defer func(ts int) { gram.TileSize = ts }(gram.TileSize)
	gram.TileSize = 48
	for _, cc := range []struct {
		name string
		spec Spec
	}{
		{"rbf", Spec{Kind: RBFMMD, K: 4, Gammas: paperGammas}},
		{"linear", Spec{Kind: LinearMMD, K: 4}},
	} {
		for _, d := range []int{6, 40} {
			// spread, offset, scale: 1e-21 puts float32 products below
			// its normal range, where rounding is absolute.
			for _, sh := range [][3]float64{{1, 0, 1}, {1, 30, 1}, {3, 0, 1}, {1, 0, 1e-21}} {
				t.Run(fmt.Sprintf("%s/d=%d/spread=%g/offset=%g/scale=%g", cc.name, d, sh[0], sh[1], sh[2]), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(d), 3))
					src, tgt := testref.BenchFeatures(130, d, 1), testref.BenchFeatures(110, d, 2)
					for _, m := range []feat.Matrix{src, tgt} {
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
					m1 := NewStage1(src, tgt, cc.spec, false, nil)
					m1.Dense()
					rt, ct := m1.Terms()
					es, et := m1.Err32()
					m1.Pass(Scope{F32: true}, func(i, j0 int, x []float64) {
						for k, v := range x {
							within(fmt.Sprintf("stage 1 (%d, %d)", i, j0+k), v, m1.At(i, j0+k), es[i]+et[j0+k])
						}
					})
					if rt2, ct2 := m1.Terms(); !slices.Equal(rt, rt2) || !slices.Equal(ct, ct2) {
						t.Errorf("stage 1: a float32 full pass changed the terms")
					}
					pairs := testref.CoveringPairs(rng, src.N, tgt.N)
					m2 := NewStage2(src, tgt, cc.spec, pairs, math.MaxInt64, nil)
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
					m2.Pass(Scope{F32: true}, check)
					m2.Pass(Scope{Rows: rng.Perm(len(pairs))[:40], F32: true}, check)
					if node2, _ := m2.Finish(); !slices.Equal(node, node2) {
						t.Errorf("stage 2: a float32 full pass changed the node terms")
					}
					t.Logf("largest error / bound: %.3g", worst)
				})
			}
		}
	}
	if m := NewStage1(testref.BenchFeatures(5, 3, 1), testref.BenchFeatures(5, 3, 2), Spec{Kind: CORAL, K: 2}, false, nil); m.Bounded {
		t.Errorf("CORAL stage 1 is Bounded but no float32 bound was checked for it")
	}
}

// TestFloat32Guard checks that features beyond float32Safe's range keep
// every pass in float64 (a float32 one would overflow): the models are not
// Bounded then, and are on ordinary features.
func TestFloat32Guard(t *testing.T) {
	for _, spec := range []Spec{{Kind: LinearMMD, K: 4}, {Kind: RBFMMD, K: 4, Gammas: paperGammas}} {
		rng := rand.New(rand.NewPCG(5, 6))
		src, tgt := testref.RandMatrix(rng, 60, 5, false), testref.RandMatrix(rng, 60, 5, false)
		if m1 := NewStage1(src, tgt, spec, false, nil); !m1.Bounded {
			t.Fatalf("kind %d: stage 1 has no float32 passes on ordinary features", spec.Kind)
		}
		src.F64[7] = 1e18 // one huge value is enough
		if m1 := NewStage1(src, tgt, spec, false, nil); m1.Bounded {
			t.Fatalf("kind %d: stage 1 keeps float32 passes with a value of 1e18", spec.Kind)
		}
		pairs := make([]feat.Pair, 60)
		for i := range pairs {
			pairs[i] = feat.Pair{S: i, T: i}
		}
		if m2 := NewStage2(src, tgt, spec, pairs, math.MaxInt64, nil); m2.Bounded {
			t.Fatalf("kind %d: stage 2 keeps float32 passes with a value of 1e18", spec.Kind)
		}
	}
}
