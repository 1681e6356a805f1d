package assign

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestWarmStart checks that solveLSAP with warmStart returns the optimum the
// cold auction path returns, with a valid certificate, on matrix kinds where
// the warm start succeeds and where it gives up (then s must be back in its
// cold state), at sizes that run its dense passes on one part and on
// several; and so does the cold path that switches to auctionDeep after its
// first augmenting path (plateauScans = 0).
func TestWarmStart(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	cases := []struct {
		name     string
		n        int
		c        func(n int) []float64
		mustWarm bool
	}{
		{"uniform", 400, func(n int) []float64 { return kinds[0].gen(rng, n, n) }, true},
		{"uniform/parts", 1100, func(n int) []float64 { return kinds[0].gen(rng, n, n) }, true},
		{"euclid", 500, func(n int) []float64 { return stage1Cost(n, n, 2, 9) }, false},
		{"stage2/diagInf", 500, func(n int) []float64 { return forbidDiagonal(stage2Cost(n, 10), n) }, false},
		{"int0to3", 400, func(n int) []float64 { return kinds[1].gen(rng, n, n) }, false},
		{"signedWide", 400, func(n int) []float64 { return kinds[3].gen(rng, n, n) }, false},
		{"constant", 300, func(n int) []float64 { return kinds[2].gen(rng, n, n) }, false},
	}
	defer func(m, p int) { warmMin, plateauScans = m, p }(warmMin, plateauScans)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.n
			c := tc.c(n)
			scale := 0.0
			for _, x := range c {
				if x < inf {
					scale = math.Max(scale, math.Abs(x))
				}
			}
			solve := func(min, scans int) *Solution {
				warmMin, plateauScans = min, scans
				s, err := solveLSAP(c, n, n, nil)
				if err != nil {
					t.Fatal(err)
				}
				sol := s.solution()
				// The certificate by hand (Certify takes finite matrices
				// only): feasible on every allowed entry, tight on the
				// assignment, which is a permutation.
				tol := 1e-9 * (1 + scale)
				seen := make([]bool, n)
				for i, j := range sol.Col4Row {
					if seen[j] || math.Abs(c[i*n+j]-sol.U[i]-sol.V[j]) > tol {
						t.Fatalf("warmMin = %d: row %d's column %d is taken twice or not tight", min, i, j)
					}
					seen[j] = true
					for j, x := range c[i*n : i*n+n] {
						if x < inf && x-sol.U[i]-sol.V[j] < -tol {
							t.Fatalf("warmMin = %d: reduced cost of (%d, %d) is %v", min, i, j, x-sol.U[i]-sol.V[j])
						}
					}
				}
				return sol
			}
			deep, cold, warm := solve(1<<30, 0), solve(1<<30, 1<<30), solve(256, 1<<30)
			if math.Abs(cold.Cost-warm.Cost) > 1e-9*(1+scale) {
				t.Fatalf("cost with warm start %v, cold %v", warm.Cost, cold.Cost)
			}
			if math.Abs(cold.Cost-deep.Cost) > 1e-9*(1+scale) {
				t.Fatalf("cost with auctionDeep %v, cold %v", deep.Cost, cold.Cost)
			}
			s := newLSAP(c, n, n)
			ok, err := s.warmStart(nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.mustWarm && !ok {
				t.Fatal("warmStart gave up on a matrix it should solve")
			}
			if !ok {
				for i := 0; i < n; i++ {
					if s.col4row[i] != -1 || s.row4col[i] != -1 || s.u[i] != 0 || s.v[i] != 0 {
						t.Fatalf("after giving up, row/column %d: col4row %d row4col %d u %v v %v: want the cold state", i, s.col4row[i], s.row4col[i], s.u[i], s.v[i])
					}
				}
			}
			t.Logf("warm start used: %v", ok)
		})
	}
}

// BenchmarkWarmStart times solveLSAP with and without warmStart on the same
// matrices in one process and reports the ratio (warm/cold, below 1 when the
// warm start pays): uniform entries, squared distances of Gaussian points in
// 2 and in 64 dimensions (the shape of PSDA's Stage 1 costs), n = 2000.
func BenchmarkWarmStart(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n = 2000
	cases := []struct {
		name string
		c    []float64
	}{{"uniform", kinds[0].gen(rng, n, n)}, {"euclid2", stage1Cost(n, n, 2, 3)}, {"euclid64", stage1Cost(n, n, 64, 4)}}
	defer func(m int) { warmMin = m }(warmMin)
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var cold, warm time.Duration
			for i := 0; i < b.N; i++ {
				for _, on := range []bool{false, true} {
					warmMin = 1 << 30
					if on {
						warmMin = 256
					}
					t0 := time.Now()
					if _, err := solveLSAP(tc.c, n, n, nil); err != nil {
						b.Fatal(err)
					}
					if on {
						warm += time.Since(t0)
					} else {
						cold += time.Since(t0)
					}
				}
			}
			b.ReportMetric(cold.Seconds()/float64(b.N), "cold-s/op")
			b.ReportMetric(warm.Seconds()/float64(b.N), "warm-s/op")
			b.ReportMetric(warm.Seconds()/cold.Seconds(), "warm/cold")
		})
	}
}

// TestDenseCandidatesSymmetric checks denseCandidates' symmetric mode,
// which reads column j's candidates from row j and joins every edge's
// reverse, against the general mode, which collects them column by column,
// with the reverses joined by brute force, on symmetric matrices with a
// forbidden diagonal (the matching's relaxation).
func TestDenseCandidatesSymmetric(t *testing.T) {
	for _, tc := range []struct{ n, k int }{{7, 3}, {60, 5}, {300, 16}, {300, 48}} {
		rng := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.k)))
		c := make([]float64, tc.n*tc.n)
		for i := 0; i < tc.n; i++ {
			c[i*tc.n+i] = inf
			for j := i + 1; j < tc.n; j++ {
				x := rng.Float64() * float64(1+i%3) // uneven row scales
				c[i*tc.n+j], c[j*tc.n+i] = x, x
			}
		}
		want, got := symmetriseBrute(denseCandidates(c, tc.n, tc.k, false, nil)), denseCandidates(c, tc.n, tc.k, true, nil)
		for i := range want {
			if !slices.Equal(want[i], got[i]) {
				t.Fatalf("n=%d k=%d row %d: symmetric mode %v, general %v", tc.n, tc.k, i, got[i], want[i])
			}
		}
	}
}

// symmetriseBrute returns adj with every reverse edge joined: row i holds
// the columns j with (i, j) or (j, i) in adj, in order, each with the cost
// of the first of them found, (i, j) before (j, i).
func symmetriseBrute(adj Edges) Edges {
	n := len(adj)
	out := make(Edges, n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			k, ok := slices.BinarySearchFunc(adj[i], int32(j), func(e Edge, b int32) int { return int(e.B - b) })
			if ok {
				out[i] = append(out[i], adj[i][k])
				continue
			}
			if k, ok := slices.BinarySearchFunc(adj[j], int32(i), func(e Edge, b int32) int { return int(e.B - b) }); ok {
				out[i] = append(out[i], Edge{int32(j), adj[j][k].X})
			}
		}
	}
	return out
}

// TestSymmetricWarmStart checks solveLSAP's symmetric mode (lsap.sym: the
// candidates read from rows, symmetrised, and a symmetric pricing loop)
// against its general mode on the matching's relaxations: a matrix where
// the warm start succeeds and one where it gives up and seeds the auction.
// Both must reach the same optimum with potentials that Certify accepts.
func TestSymmetricWarmStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		c    []float64
	}{{"kept", 600, stage2Clustered(600, 9)}, {"gave-up", 1000, stage2Shifted(1000, 4, 3)}} {
		t.Run(tc.name, func(t *testing.T) {
			c := forbidDiagonal(tc.c, tc.n)
			var cost [2]float64
			for k, sym := range []bool{false, true} {
				s := newLSAP(c, tc.n, tc.n)
				s.sym = sym
				ok, err := s.warmStart(nil)
				if err != nil {
					t.Fatal(err)
				}
				if want := tc.name == "kept"; ok != want {
					t.Errorf("sym %v: warm start kept %v, want %v", sym, ok, want)
				}
				s = newLSAP(c, tc.n, tc.n)
				s.sym = sym
				if _, err := s.solve(nil); err != nil {
					t.Fatal(err)
				}
				sol := s.solution()
				if err := Certify(c, tc.n, tc.n, sol, tolFor(c)); err != nil {
					t.Fatalf("sym %v: %v", sym, err)
				}
				cost[k] = sol.Cost
			}
			if math.Abs(cost[0]-cost[1]) > tolFor(c) {
				t.Errorf("symmetric mode cost %v, general %v", cost[1], cost[0])
			}
		})
	}
}

// TestDenseCandidatesBrute checks denseCandidates against its definition
// by full sorts: row i keeps the k smallest c[i][j] − colMin[j] (ties to
// the smaller j) and the edge to i+1; column j the k smallest of its
// entries less their rows' reduced minima u_i (general mode: (c[i][j] −
// colMin[j]) − u_i; symmetric mode: c[j][i] − u_i, read from row j), each
// edge (i, j) at cost c[i][j], symmetrised in symmetric mode; on
// tie-heavy symmetric matrices with a forbidden diagonal.
func TestDenseCandidatesBrute(t *testing.T) {
	type hv struct {
		h float64
		j int
	}
	smallest := func(hs []hv, k int) []hv {
		hs = slices.DeleteFunc(hs, func(e hv) bool { return !(e.h < inf) })
		slices.SortStableFunc(hs, func(a, b hv) int { return cmp.Compare(a.h, b.h) })
		return hs[:min(k, len(hs))]
	}
	for _, tc := range []struct{ n, k int }{{9, 3}, {41, 5}, {130, 16}} {
		rng := rand.New(rand.NewPCG(uint64(tc.n), 26))
		n, k := tc.n, tc.k
		c := make([]float64, n*n)
		for i := 0; i < n; i++ {
			c[i*n+i] = inf
			for j := i + 1; j < n; j++ {
				x := float64(rng.IntN(6)) / 4 // ties
				c[i*n+j], c[j*n+i] = x, x
			}
		}
		v := make([]float64, n) // −colMin
		for j := range v {
			m := inf
			for i := 0; i < n; i++ {
				m = min(m, c[i*n+j])
			}
			v[j] = -m
		}
		rowTop := make([][]hv, n)
		u := make([]float64, n)
		for i := range rowTop {
			hs := make([]hv, n)
			for j := range hs {
				hs[j] = hv{c[i*n+j] + v[j], j}
			}
			rowTop[i] = smallest(hs, k)
			u[i] = rowTop[i][0].h
		}
		for _, sym := range []bool{false, true} {
			want := make([][]int32, n)
			for i := range rowTop {
				for _, e := range rowTop[i] {
					want[i] = append(want[i], int32(e.j))
				}
				want[i] = append(want[i], int32((i+1)%n))
			}
			for j := 0; j < n; j++ {
				hs := make([]hv, n)
				for i := range hs {
					if sym {
						hs[i] = hv{c[j*n+i] + -u[i], i}
					} else {
						hs[i] = hv{c[i*n+j] + v[j] - u[i], i}
					}
				}
				for _, e := range smallest(hs, k) {
					want[e.j] = append(want[e.j], int32(j))
				}
			}
			if sym {
				for i := range want {
					for _, j := range want[i] {
						want[j] = append(want[j], int32(i))
					}
				}
			}
			got := denseCandidates(c, n, k, sym, nil)
			for i := range want {
				slices.Sort(want[i])
				want[i] = slices.Compact(want[i])
				if len(got[i]) != len(want[i]) {
					t.Fatalf("n=%d sym=%v row %d: %v, want columns %v", n, sym, i, got[i], want[i])
				}
				for t2, e := range got[i] {
					if e.B != want[i][t2] || math.Float64bits(e.X) != math.Float64bits(c[i*n+int(e.B)]) {
						t.Fatalf("n=%d sym=%v row %d: %v, want columns %v at costs c[%d][·]", n, sym, i, got[i], want[i], i)
					}
				}
			}
		}
	}
}

// TestWarmStartFusedMinima checks that warmStart's tightenWithin, fed the
// row minima of the pricing loop's last full pass (fuseTighten), leaves
// the potentials and the assignment that its own pass over c gives, bit
// for bit, on relaxations whose loop ends at its first pass (the minima
// used) and one where it goes on (solved again after violators: the
// minima are of other potentials and must be refused).
func TestWarmStartFusedMinima(t *testing.T) {
	defer func(f bool) { fuseTighten = f }(fuseTighten)
	used := map[bool]int{}
	sq := func(d int) []float64 { // squared distances: the first pass finds no violator
		x := gaussian(rand.New(rand.NewPCG(uint64(d), 1)), 600, d)
		return sqDist(x, x)
	}
	for _, tc := range []struct {
		name string
		n    int
		c    []float64
	}{
		{"squared distances, d = 2", 600, sq(2)},
		{"squared distances, d = 8", 600, sq(8)},
		{"clustered", 600, stage2Clustered(600, 9)}, // violators: solved again
		{"stage2", 1000, stage2Cost(1000, 2)},
	} {
		c := forbidDiagonal(tc.c, tc.n)
		var got [2]*lsap
		for k, fuse := range []bool{false, true} {
			fuseTighten = fuse
			s := newLSAP(c, tc.n, tc.n)
			s.sym = true
			if _, err := s.warmStart(nil); err != nil {
				t.Fatal(err)
			}
			got[k] = s
		}
		a, b := got[0], got[1]
		if a.tightFused {
			t.Fatalf("%s: minima used with fuseTighten off", tc.name)
		}
		used[b.tightFused]++
		for i := 0; i < tc.n; i++ {
			if math.Float64bits(a.u[i]) != math.Float64bits(b.u[i]) || math.Float64bits(a.v[i]) != math.Float64bits(b.v[i]) ||
				a.col4row[i] != b.col4row[i] || a.row4col[i] != b.row4col[i] {
				t.Fatalf("%s (minima used %v) row %d: u %v v %v col %d, want u %v v %v col %d", tc.name, b.tightFused, i,
					b.u[i], b.v[i], b.col4row[i], a.u[i], a.v[i], a.col4row[i])
			}
		}
	}
	if used[true] == 0 || used[false] == 0 {
		t.Fatalf("minima used in %d cases, refused in %d: the test needs both", used[true], used[false])
	}
	t.Logf("minima used in %d cases, refused in %d", used[true], used[false])
}

// TestBlossomStartPredicted checks the blossom start's rows to rescan that
// the warm start's pricing pass predicts (denseModel, newBlossomLows):
// where the start's y is the predicted one they are exactly the rows of
// negative lowSlack under it, and MinWeightPerfectMatching's result is
// the same, bit for bit, with the prediction and without (fuseTighten
// off), on relaxations where it holds and where it does not.
func TestBlossomStartPredicted(t *testing.T) {
	defer func(f bool) { fuseTighten = f }(fuseTighten)
	sq := func(d int) []float64 {
		x := gaussian(rand.New(rand.NewPCG(uint64(d), 3)), 600, d)
		return sqDist(x, x)
	}
	used := map[bool]int{}
	for _, tc := range []struct {
		name string
		n    int
		c    []float64
	}{
		{"squared distances, d = 2", 600, sq(2)},
		{"squared distances, d = 8", 600, sq(8)},
		{"clustered", 600, stage2Clustered(600, 9)},
		{"stage2", 1000, stage2Cost(1000, 2)},
	} {
		n := tc.n
		if a, b := matchingsFused(t, tc.c, n); !samePerfect(a, b) {
			t.Fatalf("%s: the matching differs with the predicted rows", tc.name)
		}
		// The steps of minWeightPerfectMatching, to see the prediction.
		c := forbidDiagonal(tc.c, n)
		s := newLSAP(c, n, n)
		s.sym = true
		if _, err := s.solve(nil); err != nil {
			t.Fatal(err)
		}
		start := RelaxationStart(s.col4row, s.u, s.v, denseCost(tc.c, n))
		ok := s.startLows != nil && sameBits(start.Y, s.startY)
		used[ok]++
		if !ok {
			continue
		}
		for v := 0; v < n; v++ {
			if want := lowSlackDense(tc.c[v*n:v*n+n], v, start.Y) < 0; s.startLows[v] != want {
				t.Fatalf("%s: row %d predicted to need lowering %v, lowSlack says %v", tc.name, v, s.startLows[v], want)
			}
		}
	}
	if used[true] == 0 || used[false] == 0 {
		t.Fatalf("prediction used in %d cases, not in %d: the test needs both", used[true], used[false])
	}
}

// reluRBF returns the RBF Stage 2 cost 2 − 2·exp(−γ‖x_r − x_q‖²/mean) of n
// rectified standard normal points in R^d (mean: the mean squared
// distance), like psda's relu features: on some of these the warm start's
// tightenWithin frees rows, whose paths then move the potentials away from
// the blossom start that the pricing pass predicted.
func reluRBF(n, d int, seed uint64, gamma float64) []float64 {
	x := gaussian(rand.New(rand.NewPCG(seed, 9)), n, d)
	for _, r := range x {
		for k := range r {
			r[k] = max(r[k], 0)
		}
	}
	c := sqDist(x, x)
	mean := 0.0
	for _, e := range c {
		mean += e
	}
	mean /= float64(len(c))
	for k := range c {
		c[k] = 2 - 2*math.Exp(-gamma*c[k]/mean)
	}
	return c
}

// TestBlossomStartPredictionRefused checks that a predicted blossom start
// is refused when the real start's y differs from it: on relaxations where
// tightenWithin frees rows after the minima were taken from the pricing
// pass, the rows predicted to need lowering can miss rows that do under
// the real y (so taking them would start the blossom from infeasible
// duals); MinWeightPerfectMatching's result must be the one without the
// prediction (fuseTighten off), bit for bit. Which instances show this
// depends on rounding (GOAMD64=v3 fuses sqDist's products), so the test
// runs several and needs one.
func TestBlossomStartPredictionRefused(t *testing.T) {
	defer func(f bool) { fuseTighten = f }(fuseTighten)
	const n = 1000
	stale := 0
	for _, d := range []int{16, 128} {
		for seed := range uint64(3) {
			for _, gamma := range []float64{1, 2} {
				c := reluRBF(n, d, seed, gamma)
				name := fmt.Sprintf("d=%d seed=%d γ=%v", d, seed, gamma)
				// The steps of minWeightPerfectMatching, to see the prediction.
				fuseTighten = true
				s := newLSAP(forbidDiagonal(c, n), n, n)
				s.sym = true
				if _, err := s.solve(nil); err != nil {
					t.Fatal(err)
				}
				start := RelaxationStart(s.col4row, s.u, s.v, denseCost(c, n))
				missed := 0
				if s.startLows != nil && !sameBits(start.Y, s.startY) {
					for v := 0; v < n; v++ {
						if lowSlackDense(c[v*n:v*n+n], v, start.Y) < 0 && !s.startLows[v] {
							missed++
						}
					}
				}
				if missed == 0 {
					continue
				}
				stale++
				if a, b := matchingsFused(t, c, n); !samePerfect(a, b) {
					t.Fatalf("%s (%d rows missed by the stale prediction): the matching differs with fuseTighten on: cost %v bound %v, want %v, %v",
						name, missed, b.Cost, b.Bound, a.Cost, a.Bound)
				}
			}
		}
	}
	if stale == 0 {
		t.Fatal("no instance's prediction was stale and missed a row: the test needs one")
	}
	t.Logf("%d of 12 instances with a stale prediction that misses rows", stale)
}

// TestDenseModelMinima checks denseModel's row minima against the plain
// loop min_j c[i][j] − v[j], bit for bit, and when it must refuse them: a
// full pass finds them under the potentials it was asked about; a pass
// over some rows leaves them those of the last full pass (they are not of
// its own potentials, whatever it saw); a full pass asked about but never
// run (its pricing stopped before it) leaves none, and so does a pass over
// some rows after it.
func TestDenseModelMinima(t *testing.T) {
	const n = 37
	rng := rand.New(rand.NewPCG(26, 11))
	c := tieMatrix(rng, n)
	pots := func() *Solution {
		v := make([]float64, n)
		for j := range v {
			v[j] = float64(rng.IntN(9)-4) / 8
		}
		return &Solution{Col4Row: rng.Perm(n), V: v}
	}
	plain := func(v []float64) []float64 {
		m := make([]float64, n)
		for i := range m {
			m[i] = inf
			for j := 0; j < n; j++ {
				if h := c[i*n+j] - v[j]; h < m[i] {
					m[i] = h
				}
			}
		}
		return m
	}
	noop := func(int, int, []float64) {}
	md := &denseModel{c: c, n: n}
	s1, s2, s3 := pots(), pots(), pots()
	if md.minima(s1.V) != nil {
		t.Fatal("minima before any pass")
	}
	md.minimaUnder(nil, s1)
	md.Pass(nil, false, noop, nil)
	if got := md.minima(s1.V); got == nil || !sameBits(got, plain(s1.V)) {
		t.Fatalf("after a full pass: %v, want %v", got, plain(s1.V))
	}
	if md.minima(s2.V) != nil {
		t.Fatal("minima given for other potentials")
	}
	sub := []int{2, 3, 30}
	md.minimaUnder(sub, s2)
	md.Pass(sub, false, noop, nil)
	if md.minima(s2.V) != nil {
		t.Fatal("minima given for the potentials of a pass over some rows")
	}
	if got := md.minima(s1.V); got == nil || !sameBits(got, plain(s1.V)) {
		t.Fatalf("the full pass's minima after a pass over some rows: %v, want %v", got, plain(s1.V))
	}
	md.minimaUnder(nil, s3) // its pass never runs
	if md.minima(s3.V) != nil || md.minima(s1.V) != nil {
		t.Fatal("minima given after a full pass was asked for and did not run")
	}
	md.minimaUnder(sub, s3)
	md.Pass(sub, false, noop, nil)
	if md.minima(s3.V) != nil {
		t.Fatal("minima given for the potentials of a pass over some rows after a full pass did not run")
	}
}

// matchingsFused returns MinWeightPerfectMatching of c (n×n) with
// fuseTighten off, then on (the pricing pass's row minima and predicted
// blossom start refused, then taken where they apply), leaving it on.
func matchingsFused(t *testing.T, c []float64, n int) (off, on *PerfectMatching) {
	t.Helper()
	var pms [2]*PerfectMatching
	for k, fuse := range []bool{false, true} {
		fuseTighten = fuse
		pm, err := MinWeightPerfectMatching(slices.Clone(c), n)
		if err != nil {
			t.Fatal(err)
		}
		pms[k] = pm
	}
	return pms[0], pms[1]
}

// samePerfect reports whether two perfect matchings agree bit for bit:
// mates, cost, bound and both kinds of duals.
func samePerfect(a, b *PerfectMatching) bool {
	return slices.Equal(a.Mate, b.Mate) && math.Float64bits(a.Cost) == math.Float64bits(b.Cost) &&
		math.Float64bits(a.Bound) == math.Float64bits(b.Bound) && sameBits(a.Duals.Y, b.Duals.Y) && sameBits(a.Duals.Z, b.Duals.Z)
}
