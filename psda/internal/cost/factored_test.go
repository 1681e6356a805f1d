package cost

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/psda-dev/psda/psda/internal/feat"
	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/rbf"
	"github.com/psda-dev/psda/psda/internal/testref"
)

// imbalancedPairs returns Stage 1's kind of pairs for n_s ≠ n_t: the larger
// side in order, every row of the smaller side at least once, the rest
// drawn at random (so that uses differ).
func imbalancedPairs(rng *rand.Rand, ns, nt int) []feat.Pair {
	p, small := max(ns, nt), min(ns, nt)
	perm := rng.Perm(small)
	pairs := make([]feat.Pair, p)
	for r := range pairs {
		j := rng.IntN(small)
		if r < small {
			j = perm[r]
		}
		pairs[r] = feat.Pair{S: r, T: j}
		if nt > ns {
			pairs[r] = feat.Pair{S: j, T: r}
		}
	}
	rng.Shuffle(p, func(a, b int) { // the smaller side's rows in any order
		if ns >= nt {
			pairs[a].T, pairs[b].T = pairs[b].T, pairs[a].T
		} else {
			pairs[a].S, pairs[b].S = pairs[b].S, pairs[a].S
		}
	})
	return pairs
}

// duplicateRows copies some rows of src and tgt onto others, within and
// across the domains, so that squared distances of exactly 0 (ties) occur.
func duplicateRows(rng *rand.Rand, src, tgt feat.Matrix) {
	d := src.D
	cp := func(to feat.Matrix, i int, from feat.Matrix, j int) { copy(to.F64[i*d:(i+1)*d], from.F64[j*d:(j+1)*d]) }
	for range max(1, src.N/5) {
		cp(src, rng.IntN(src.N), src, rng.IntN(src.N))
	}
	for range max(1, tgt.N/5) {
		cp(tgt, rng.IntN(tgt.N), tgt, rng.IntN(tgt.N))
	}
	cp(src, 0, tgt, 0)
	cp(tgt, tgt.N-1, src, src.N-1)
}

// upperPass returns the upper triangle V_rq (q > r) of a full pass as a
// P×P row-major matrix and checks that the pass emits each entry once.
func upperPass(t *testing.T, md *Stage2, sc Scope) []float64 {
	t.Helper()
	p := md.P
	v := make([]float64, p*p)
	seen := make([]bool, p*p)
	var mu sync.Mutex
	bad := ""
	md.Pass(sc, func(r, q0 int, x []float64) {
		for k, val := range x {
			q := q0 + k
			mu.Lock()
			if q <= r || seen[r*p+q] {
				bad = fmt.Sprintf("entry (%d, %d) emitted twice or below the diagonal", r, q)
			}
			seen[r*p+q] = true
			mu.Unlock()
			v[r*p+q] = val
		}
	})
	if bad != "" {
		t.Fatal(bad)
	}
	for r := 0; r < p; r++ {
		for q := r + 1; q < p; q++ {
			if !seen[r*p+q] {
				t.Fatalf("full pass missed (%d, %d)", r, q)
			}
		}
	}
	return v
}

// rowsPass returns the entries V_rq of a pass over rows (every q) as a map
// r → row, and checks that each row comes whole.
func rowsPass(t *testing.T, md *Stage2, sc Scope) map[int][]float64 {
	t.Helper()
	p := md.P
	out := make(map[int][]float64)
	var mu sync.Mutex
	count := 0
	md.Pass(sc, func(r, q0 int, x []float64) {
		mu.Lock()
		defer mu.Unlock()
		if out[r] == nil {
			out[r] = make([]float64, p)
		}
		copy(out[r][q0:], x)
		count += len(x)
	})
	if count != len(sc.Rows)*p || len(out) != len(sc.Rows) {
		t.Fatalf("row pass emitted %d entries in %d rows, want %d in %d", count, len(out), len(sc.Rows)*p, len(sc.Rows))
	}
	return out
}

// bruteKernelSums returns ΣSS, ΣST and ΣTT over every pair of rows,
// straight from the kernel's definition (testref.RBFKappa).
func bruteKernelSums(src, tgt feat.Matrix, gammas []float64) (ss, st, tt float64) {
	kappa := testref.RBFKappa(gammas)
	s, tg := testref.RowsF64(src), testref.RowsF64(tgt)
	all := func(x, y [][]float64) float64 {
		acc := 0.0
		for _, a := range x {
			for _, b := range y {
				acc += kappa(a, b)
			}
		}
		return acc
	}
	return all(s, s), all(s, tg), all(tg, tg)
}

// TestStage2Factored checks the factored RBF Stage 2 (rbf2Factored: the
// kernel against the smaller side stored, only the larger side's Gram
// matrix in each pass) against rbf2 (the Gram matrix of the 2P paired
// vectors) and against single entries from the features (pairKernel), on
// the pairs of imbalanced Stage 1s: source and target larger, P/n_small
// from 1.5 to 50, tiny and moderate sizes, several tiles, duplicated rows.
// Every kind of pass the paths run is compared: the full float64 pass
// (and its terms and kernel sums, also against their definitions), passes
// over rows, and float32 passes within the Err32 bound, one of them run
// before any float64 pass (the tables then come first).
func TestStage2Factored(t *testing.T) {
	defer func(old int) { gram.TileSize = old }(gram.TileSize)
	gram.TileSize = 24 // several tiles, diagonal and off-diagonal
	defer func(old int) { FactorMin = old }(FactorMin)
	for _, tc := range []struct {
		name      string
		ns, nt, d int
		dup, f32  bool
	}{
		{"source 1.5x", 30, 20, 5, false, false},
		{"target 1.5x", 20, 31, 5, false, true},
		{"source 2x odd", 41, 20, 7, false, false},
		{"target 5x", 9, 45, 3, false, false},
		{"source 50x", 150, 3, 6, false, false},
		{"target 50x", 2, 100, 4, false, true},
		{"tiny", 5, 2, 2, false, false},
		{"one row", 1, 7, 3, false, false},
		{"moderate source 8x", 400, 50, 40, false, false},
		{"moderate target 3x", 90, 270, 20, false, false},
		{"duplicates source 5x", 60, 12, 4, true, false},
		{"duplicates target 4x", 11, 45, 4, true, false},
	} {
		for _, spec := range []Spec{
			{Kind: RBFMMD, K: 2, Gammas: paperGammas},
			{Kind: RBFMMD, K: 4, Gammas: []float64{0.7, 0.03, 3}},
		} {
			t.Run(fmt.Sprintf("%s/%v", tc.name, spec.Gammas), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(tc.ns), uint64(tc.nt)))
				src, tgt := testref.RandMatrix(rng, tc.ns, tc.d, tc.f32), testref.RandMatrix(rng, tc.nt, tc.d, tc.f32)
				if tc.dup {
					duplicateRows(rng, src, tgt)
				}
				pairs := imbalancedPairs(rng, tc.ns, tc.nt)
				p := len(pairs)
				FactorMin = 1
				nw := NewStage2(src, tgt, spec, pairs, math.MaxInt64, nil)
				FactorMin = math.MaxInt
				old := NewStage2(src, tgt, spec, pairs, math.MaxInt64, nil)
				if _, ok := nw.model.(*rbf2Factored); !ok {
					t.Fatalf("FactorMin = 1: model %T, want *rbf2Factored", nw.model)
				}
				if _, ok := old.model.(*rbf2); !ok {
					t.Fatalf("FactorMin = MaxInt: model %T, want *rbf2", old.model)
				}
				if !nw.Bounded || nw.P != old.P || nw.M != old.M || nw.Scale != old.Scale || nw.Coef != old.Coef {
					t.Fatalf("split differs: %+v vs %+v", *nw, *old)
				}
				kern := rbf.New(spec.Gammas)
				floor := kern.NTerms
				near := func(what string, got, want float64) {
					if math.Abs(got-want) > 1e-12*floor {
						t.Fatalf("%s: %.17g, want %.17g", what, got, want)
					}
				}

				// A float32 pass over rows first: the tables are computed
				// in float64 on demand; the bound holds without the
				// nearest partners (err32 then assumes the steepest slope).
				rows := rng.Perm(p)[:max(1, p/3)]
				e0 := nw.Err32()
				for r, v := range rowsPass(t, nw, Scope{Rows: rows, F32: true}) {
					for q, x := range v {
						if q != r && math.Abs(x-nw.At(r, q)) > e0[r]+e0[q] {
							t.Fatalf("first float32 row pass (%d, %d): %.17g, exact %.17g, bound %.3g", r, q, x, nw.At(r, q), e0[r]+e0[q])
						}
					}
				}

				vn, vo := upperPass(t, nw, Scope{}), upperPass(t, old, Scope{})
				for r := 0; r < p; r++ {
					for q := r + 1; q < p; q++ {
						near(fmt.Sprintf("V(%d, %d) vs rbf2", r, q), vn[r*p+q], vo[r*p+q])
						near(fmt.Sprintf("V(%d, %d) vs pairKernel", r, q), vn[r*p+q], old.At(r, q))
						near(fmt.Sprintf("At(%d, %d) vs rbf2's", r, q), nw.At(r, q), old.At(r, q))
					}
				}
				// The nearest other paired vector of each a and b, which
				// Err32's slopes rely on, against its definition.
				fm := nw.model.(*rbf2Factored)
				for i, got := range fm.near.K {
					near(fmt.Sprintf("nearest partner of paired vector %d", i), got, bruteNear(fm, kern, i))
				}
				nodeN, singleN := nw.Finish()
				nodeO, singleO := old.Finish()
				testref.CloseTo(t, "node", nodeN, nodeO, 1e-12, floor)
				testref.CloseTo(t, "single", singleN, singleO, 1e-12, floor)
				sn, tn, un := nw.KernelSums()
				so, to, uo := old.KernelSums()
				bs, bt, bu := bruteKernelSums(src, tgt, spec.Gammas)
				testref.CloseTo(t, "kernel sums vs rbf2", []float64{sn, tn, un}, []float64{so, to, uo}, 1e-12, floor)
				testref.CloseTo(t, "kernel sums vs definition", []float64{sn, tn, un}, []float64{bs, bt, bu}, 1e-11, floor)
				// Dense: the whole matrix, dummy row and diagonal included.
				dn, _ := NewStage2(src, tgt, spec, pairs, math.MaxInt64, nil).Dense()
				FactorMin = 1
				dw, _ := NewStage2(src, tgt, spec, pairs, math.MaxInt64, nil).Dense()
				testref.CloseTo(t, "dense", dw, dn, 1e-12, testref.TermScale(refCost(spec), src, tgt))

				rn, ro := rowsPass(t, nw, Scope{Rows: rows}), rowsPass(t, old, Scope{Rows: rows})
				for _, r := range rows {
					for q := 0; q < p; q++ {
						near(fmt.Sprintf("row pass (%d, %d) vs rbf2's", r, q), rn[r][q], ro[r][q])
						if q != r {
							a, b := min(r, q), max(r, q)
							near(fmt.Sprintf("row pass (%d, %d) vs full pass", r, q), rn[r][q], vn[a*p+b])
						}
					}
				}

				e := nw.Err32()
				within := func(what string, r, q int, x float64) {
					if q != r && math.Abs(x-nw.At(r, q)) > e[r]+e[q] {
						t.Fatalf("%s (%d, %d): %.17g, exact %.17g, bound %.3g", what, r, q, x, nw.At(r, q), e[r]+e[q])
					}
				}
				v32 := upperPass(t, nw, Scope{F32: true})
				for r := 0; r < p; r++ {
					for q := r + 1; q < p; q++ {
						within("float32 full pass", r, q, v32[r*p+q])
					}
				}
				for r, v := range rowsPass(t, nw, Scope{Rows: rows, F32: true}) {
					for q, x := range v {
						within("float32 row pass", r, q, x)
					}
				}
				if node2, _ := nw.Finish(); !slices.Equal(node2, nodeN) {
					t.Fatal("a float32 pass changed the node terms")
				}
				if s2, t2, u2 := nw.KernelSums(); s2 != sn || t2 != tn || u2 != un {
					t.Fatal("a float32 pass changed the kernel sums")
				}
			})
		}
	}
}

// bruteNear returns the largest kernel value between paired vector i of m
// (a_i for i < P, b_{i−P} after) and another paired vector: every a and b
// but itself, and b_j itself when two pairs share it (rbf2's z then holds
// it twice).
func bruteNear(m *rbf2Factored, kern *rbf.Mixture, i int) float64 {
	x, xi := m.a, i
	if i >= m.p {
		x, xi = m.b, i-m.p
	}
	mx := 0.0
	for q := 0; q < m.p; q++ {
		if i >= m.p || q != i {
			mx = max(mx, kern.Eval(sqDist(x, xi, nil, m.a, q)))
		}
	}
	for j := 0; j < m.nb; j++ {
		if i < m.p || j != xi || m.uses[j] > 1 {
			mx = max(mx, kern.Eval(sqDist(x, xi, nil, m.b, j)))
		}
	}
	return mx
}

// TestFactorable checks which pairs take the factored model: those of an
// imbalanced Stage 1 (larger side in order) at P >= FactorMin·n_small and
// whose table fits in maxTable bytes, and no others.
func TestFactorable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	spec := Spec{Kind: RBFMMD, K: 2, Gammas: paperGammas}
	src, tgt := testref.RandMatrix(rng, 40, 3, false), testref.RandMatrix(rng, 10, 3, false)
	pairs := imbalancedPairs(rng, 40, 10)
	shuffled := slices.Clone(pairs)
	shuffled[0], shuffled[1] = shuffled[1], shuffled[0]
	for _, tc := range []struct {
		name     string
		src, tgt feat.Matrix
		pairs    []feat.Pair
		maxTable int64
		want     bool
	}{
		{"source 4x", src, tgt, pairs, math.MaxInt64, true},
		{"target 4x", tgt, src, swapped(pairs), math.MaxInt64, true},
		{"tables just fit", src, tgt, pairs, 16*40*10 + 8*10*10, true}, // f, K_abᵀ and K_bb
		{"tables too large", src, tgt, pairs, 16*40*10 + 8*10*10 - 1, false},
		{"larger side out of order", src, tgt, shuffled, math.MaxInt64, false},
		{"balanced", src, src, imbalancedPairs(rng, 40, 40), math.MaxInt64, false},
		{"ratio below FactorMin", src, testref.RandMatrix(rng, 11, 3, false), imbalancedPairs(rng, 40, 11), math.MaxInt64, false},
	} {
		md := NewStage2(tc.src, tc.tgt, spec, tc.pairs, tc.maxTable, nil)
		if _, got := md.model.(*rbf2Factored); got != tc.want {
			t.Errorf("%s: factored %v, want %v", tc.name, got, tc.want)
		}
	}
}

// swapped returns the pairs with source and target exchanged.
func swapped(pairs []feat.Pair) []feat.Pair {
	out := make([]feat.Pair, len(pairs))
	for r, pr := range pairs {
		out[r] = feat.Pair{S: pr.T, T: pr.S}
	}
	return out
}

// TestStage2FactoredConcurrent runs the passes of two factored models of
// different sizes (P = 203 and 97, so that their tiles of f values differ
// in shape, and neither is a multiple of the tile size or of 4) at the
// same time, as the background refresher runs a matching beside the
// caller's, and checks that each returns exactly the values it returns
// alone: the symmetric passes share a sync.Pool of tile buffers, which
// must not hand one tile's buffer to another while it is read.
func TestStage2FactoredConcurrent(t *testing.T) {
	defer func(old int) { gram.TileSize = old }(gram.TileSize)
	gram.TileSize = 24
	defer func(old int) { FactorMin = old }(FactorMin)
	FactorMin = 4
	spec := Spec{Kind: RBFMMD, K: 2, Gammas: paperGammas}
	var models []*Stage2
	for _, sh := range [][3]int{{203, 11, 5}, {7, 97, 3}} {
		rng := rand.New(rand.NewPCG(uint64(sh[0]), uint64(sh[1])))
		src, tgt := testref.RandMatrix(rng, sh[0], sh[2], false), testref.RandMatrix(rng, sh[1], sh[2], false)
		md := NewStage2(src, tgt, spec, imbalancedPairs(rng, sh[0], sh[1]), math.MaxInt64, nil)
		if _, ok := md.model.(*rbf2Factored); !ok {
			t.Fatalf("shape %v: model %T, want *rbf2Factored", sh, md.model)
		}
		models = append(models, md)
	}
	// all runs a full float64 pass, a float32 one and one over odd rows,
	// each emitted entry at its place in one slice (no two calls share r).
	all := func(md *Stage2) []float64 {
		p := md.P
		out := make([]float64, 3*p*p)
		var rows []int
		for r := 1; r < p; r += 2 {
			rows = append(rows, r)
		}
		for s, sc := range []Scope{{}, {F32: true}, {Rows: rows}} {
			md.Pass(sc, func(r, q0 int, v []float64) { copy(out[s*p*p+r*p+q0:], v) })
		}
		return out
	}
	want := [][]float64{all(models[0]), all(models[1])}
	for round := range 8 {
		got := make([][]float64, len(models))
		var wg sync.WaitGroup
		for i, md := range models {
			wg.Add(1)
			go func() { defer wg.Done(); got[i] = all(md) }()
		}
		wg.Wait()
		for i := range models {
			for k := range want[i] {
				if math.Float64bits(got[i][k]) != math.Float64bits(want[i][k]) {
					t.Fatalf("round %d, model %d, entry %d: %v concurrently, %v alone", round, i, k, got[i][k], want[i][k])
				}
			}
		}
	}
}
