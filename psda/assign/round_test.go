package assign

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// relaxation returns an optimal permutation of the symmetric assignment
// relaxation of c (diagonal forbidden), solved on a copy of c.
func relaxation(t *testing.T, c []float64, n int) []int {
	t.Helper()
	s, err := solveLSAP(forbidDiagonal(c, n), n, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s.col4row
}

// countingOracle returns a cost oracle over the dense matrix c that counts
// its calls in *calls and fails the test on a diagonal query.
func countingOracle(t *testing.T, c []float64, n int, calls *int) func(r, q int) float64 {
	return func(r, q int) float64 {
		*calls++
		if r == q {
			t.Errorf("cost(%d, %d) queried on the diagonal", r, q)
		}
		return c[r*n+q]
	}
}

// matchingCost returns the cost of mate on c after checking that it is a
// perfect matching.
func matchingCost(t *testing.T, c []float64, n int, mate []int) float64 {
	t.Helper()
	if len(mate) != n {
		t.Fatalf("len(mate) = %d, want %d", len(mate), n)
	}
	sum := 0.0
	for r, q := range mate {
		if q < 0 || q >= n || q == r || mate[q] != r {
			t.Fatalf("mate is not a perfect matching: %v", mate)
		}
		if r < q {
			sum += c[r*n+q]
		}
	}
	return sum
}

// TestRoundRelaxationSmall compares RoundRelaxation on a dense oracle with the
// dense MinWeightPerfectMatching and with exhaustive enumeration.
func TestRoundRelaxationSmall(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, k := range kinds {
		for _, n := range []int{2, 4, 6, 8, 10, 12} {
			t.Run(fmt.Sprintf("%s/n=%d", k.name, n), func(t *testing.T) {
				oddSeen := 0
				for rep := 0; rep < 30; rep++ {
					c := symmetrize(k.gen(rng, n, n), n)
					if odd := checkAgainstDense(t, c, n, true); odd > 0 {
						oddSeen++
					}
				}
				t.Logf("%d of 30 instances had odd cycles", oddSeen)
			})
		}
	}
}

// checkAgainstDense rounds the relaxation of c through a dense oracle and
// checks the result against MinWeightPerfectMatching: the same mates when
// sigma has no odd cycle (both are then optimal), else a perfect matching no
// dearer than the dense path's; with brute set, also against exhaustive
// enumeration (optimal without odd cycles, never below the optimum). It
// returns the odd count.
func checkAgainstDense(t *testing.T, c []float64, n int, brute bool) int {
	t.Helper()
	calls := 0
	mate, odd, err := RoundRelaxation(relaxation(t, c, n), countingOracle(t, c, n, &calls), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := matchingCost(t, c, n, mate)
	pm, err := MinWeightPerfectMatching(c, n)
	if err != nil {
		t.Fatal(err)
	}
	if odd != pm.OddVertices {
		t.Fatalf("odd = %d, dense OddVertices = %d", odd, pm.OddVertices)
	}
	tol := 1e-9 * (1 + math.Abs(pm.Cost))
	if odd == 0 {
		for r := range mate {
			if mate[r] != pm.Mate[r] {
				t.Fatalf("no odd cycle but mate[%d] = %d, dense %d", r, mate[r], pm.Mate[r])
			}
		}
	} else if got < pm.Cost-tol {
		// The dense path is exact (blossom algorithm); the repair is not.
		t.Fatalf("odd = %d: cost %v below the dense path's optimum %v", odd, got, pm.Cost)
	}
	if brute {
		want := bruteMatching(c, n)
		if got < want-tol || (odd == 0 && got > want+tol) {
			t.Fatalf("odd = %d: cost %v, optimum %v", odd, got, want)
		}
	}
	return odd
}

// TestRoundRelaxationRepair runs the odd-cycle repair through the oracle on
// instances whose relaxation has odd cycles, with the dynamic programme and
// (maxDP lowered) the restricted relaxation and the path-keeping fallback.
func TestRoundRelaxationRepair(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	var grid [][2]float64
	for k := 0; k < 12; k++ {
		grid = append(grid, [2]float64{float64(k%4) * 50, float64(k/4) * 50})
	}
	cases := []struct {
		name    string
		centres [][2]float64
		maxDP   int
	}{
		{"twoTriangles", [][2]float64{{0, 0}, {100, 0}}, 20},
		{"fourTrianglesRecursive", [][2]float64{{0, 0}, {100, 0}, {0, 100}, {100, 100}}, 4},
		{"twelveTrianglesRecursive", grid, 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func(m int) { maxDP = m }(maxDP)
			maxDP = tc.maxDP
			c, n := triangles(rng, tc.centres)
			if odd := checkAgainstDense(t, c, n, n <= 12); odd == 0 {
				t.Fatal("instance meant to produce odd cycles has none")
			}
		})
	}
	t.Run("uniformRecursive", func(t *testing.T) {
		defer func(m int) { maxDP = m }(maxDP)
		maxDP = 2
		oddSeen := 0
		for rep := 0; rep < 200; rep++ {
			n := 2 * (1 + rng.IntN(6))
			if checkAgainstDense(t, symmetrize(fill(n*n, rng.Float64), n), n, true) > 0 {
				oddSeen++
			}
		}
		t.Logf("%d of 200 instances had odd cycles", oddSeen)
	})
}

// TestRoundRelaxationEvenCycles rounds arbitrary (not optimal) permutations
// made of even cycles: the matching must cost at most half the permutation,
// which takes keeping the cheaper alternating half of every cycle (for an
// optimal sigma both halves cost the same).
func TestRoundRelaxationEvenCycles(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	for rep := 0; rep < 200; rep++ {
		n := 2 * (1 + rng.IntN(20))
		c := symmetrize(fill(n*n, rng.Float64), n)
		perm := rng.Perm(n)
		sigma := make([]int, n)
		for start := 0; start < n; {
			L := min(n-start, 2*(1+rng.IntN(4)))
			for k := 0; k < L; k++ {
				sigma[perm[start+k]] = perm[start+(k+1)%L]
			}
			start += L
		}
		half := 0.0
		for r, q := range sigma {
			half += c[r*n+q] / 2
		}
		calls := 0
		mate, odd, err := RoundRelaxation(sigma, countingOracle(t, c, n, &calls), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := matchingCost(t, c, n, mate); odd != 0 || got > half+1e-12*(1+half) {
			t.Fatalf("n=%d: odd = %d, cost %v above half the permutation %v", n, odd, got, half)
		}
		if calls > n {
			t.Fatalf("n=%d: %d oracle calls for even cycles only, want <= n", n, calls)
		}
	}
}

// twoOptAll is the reference 2-opt: it tries every pair of pairs in order of
// their lower vertices, exchanging partners when that lowers the cost by
// more than 1e-12 relative, until a sweep changes nothing.
func twoOptAll(c []float64, n int, mate []int) {
	for changed := true; changed; {
		changed = false
		for x := 0; x < n; x++ {
			for z := x + 1; z < n; z++ {
				y, w := mate[x], mate[z]
				if y < x || w < z || z == y {
					continue
				}
				cur := c[x*n+y] + c[z*n+w]
				if c[x*n+z]+c[y*n+w] < cur-1e-12*math.Abs(cur) {
					mate[x], mate[z], mate[y], mate[w] = z, x, w, y
				} else if c[x*n+w]+c[y*n+z] < cur-1e-12*math.Abs(cur) {
					mate[x], mate[w], mate[y], mate[z] = w, x, z, y
				} else {
					continue
				}
				changed = true
			}
		}
	}
}

// TestPolishMatchesFullTwoOpt checks the claim behind polish: restricted to
// exchanges with a changed pair, it ends where the 2-opt over all pairs ends.
func TestPolishMatchesFullTwoOpt(t *testing.T) {
	rng := rand.New(rand.NewPCG(55, 56))
	withOdd := 0
	for rep := 0; rep < 60; rep++ {
		n := 20 + 2*rng.IntN(60)
		c := symmetrize(fill(n*n, rng.Float64), n)
		cost := denseCost(c, n)
		mate, odd, err := roundCycles(relaxation(t, c, n), cost, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(odd) == 0 {
			continue
		}
		withOdd++
		want := append([]int(nil), mate...)
		twoOptAll(c, n, want)
		if err := polish(cost, mate, odd, -1, nil); err != nil {
			t.Fatal(err)
		}
		for r := range mate {
			if mate[r] != want[r] {
				t.Fatalf("n=%d, %d odd vertices: polish gives mate[%d] = %d, full 2-opt %d", n, len(odd), r, mate[r], want[r])
			}
		}
	}
	if withOdd < 5 {
		t.Fatalf("only %d of 60 instances had odd cycles: the test exercises too little", withOdd)
	}
	t.Logf("%d of 60 instances had odd cycles", withOdd)
}

// TestRoundRelaxationOracleCalls checks on n = 2000 vertices that the oracle
// is called within the documented bound, far below n². The costs are the
// paper's Stage 2 costs ‖w_r + w_q‖² (whose relaxation has no odd cycle here)
// plus two triangles of six extra vertices: cost 1 within a triangle, 1e4
// between them and 1e3 to the others, so that the relaxation has two
// 3-cycles and the polish has exchanges with other pairs to make.
func TestRoundRelaxationOracleCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("solves a 2000×2000 relaxation")
	}
	const n, m = 2000, 1994
	base := stage2Cost(m, 59)
	c := make([]float64, n*n)
	for r := 0; r < n; r++ {
		for q := 0; q < n; q++ {
			switch {
			case r < m && q < m:
				c[r*n+q] = base[r*m+q]
			case r < m || q < m:
				c[r*n+q] = 1e3
			case (r-m)/3 == (q-m)/3:
				c[r*n+q] = 1
			default:
				c[r*n+q] = 1e4
			}
		}
	}
	calls := 0
	mate, odd, err := RoundRelaxation(relaxation(t, c, n), countingOracle(t, c, n, &calls), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := matchingCost(t, c, n, mate)
	if odd != 6 {
		t.Fatalf("odd = %d: the instance should have the two triangles as its only odd cycles", odd)
	}
	// Rounding n, dynamic programme odd², polish n + polishCalls·odd·n plus
	// one pair's scan (2n) past the budget.
	bound := n + odd*odd + n + polishCalls*odd*n + 2*n
	if calls > bound || calls > n*n/10 {
		t.Fatalf("%d oracle calls for n = %d with %d odd vertices: bound %d, n² = %d", calls, n, odd, bound, n*n)
	}
	pm, err := MinWeightPerfectMatching(c, n)
	if err != nil {
		t.Fatal(err)
	}
	if got < pm.Cost-1e-9*(1+pm.Cost) {
		t.Fatalf("cost %v below the dense path's optimum %v", got, pm.Cost)
	}
	t.Logf("%d oracle calls (n² = %d), %d odd vertices, cost %v, dense %v", calls, n*n, odd, got, pm.Cost)
}

func TestRoundRelaxationErrors(t *testing.T) {
	unit := func(r, q int) float64 { return 1 }
	nan := func(r, q int) float64 { return math.NaN() }
	stop := errors.New("stopped")
	cases := []struct {
		name  string
		sigma []int
		cost  func(r, q int) float64
		h     *Hooks
		want  string
	}{
		{"nil", nil, unit, nil, "len(sigma) = 0"},
		{"oddLength", []int{1, 2, 0}, unit, nil, "len(sigma) = 3"},
		{"negative", []int{1, -1}, unit, nil, "sigma[1] = -1 is outside [0, 2)"},
		{"tooLarge", []int{1, 0, 4, 2}, unit, nil, "sigma[2] = 4 is outside [0, 4)"},
		{"fixedPoint", []int{1, 0, 2, 3}, unit, nil, "sigma[2] = 2 is a fixed point"},
		{"notPermutation", []int{1, 0, 1, 2}, unit, nil, "sigma[0] = sigma[2] = 1"},
		{"nilCost", []int{1, 0}, nil, nil, "cost is nil"},
		{"nanInRepair", []int{1, 2, 0, 4, 5, 3}, nan, nil, "cost(0, 1) = NaN"},
		{"stop", []int{1, 0}, unit, &Hooks{Stop: func() error { return stop }}, "stopped"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mate, _, err := RoundRelaxation(tc.sigma, tc.cost, tc.h)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v (mate %v), want one containing %q", err, mate, tc.want)
			}
		})
	}
}

// BenchmarkMatchingOdd times the dense matching and RoundRelaxation alone on
// squared distances of Gaussian points in the plane, whose relaxation has
// many odd cycles (about 570 odd vertices for n = 2000), so that the repair
// and the polish take part of the time.
func BenchmarkMatchingOdd(b *testing.B) {
	for _, n := range []int{1000, 2000} {
		c := sqDist(gaussian(rand.New(rand.NewPCG(63, uint64(n))), n, 2), gaussian(rand.New(rand.NewPCG(63, uint64(n))), n, 2))
		b.Run(fmt.Sprintf("dense/n=%d", n), func(b *testing.B) {
			defer reportCPU(b, cpuNow())
			for range b.N {
				if _, err := MinWeightPerfectMatching(c, n); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("round/n=%d", n), func(b *testing.B) {
			s, err := solveLSAP(forbidDiagonal(c, n), n, n, nil)
			if err != nil {
				b.Fatal(err)
			}
			calls := 0
			cost := func(r, q int) float64 { calls++; return c[r*n+q] }
			b.ResetTimer()
			defer reportCPU(b, cpuNow())
			for range b.N {
				_, odd, err := RoundRelaxation(s.col4row, cost, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(odd), "odd")
			}
			b.ReportMetric(float64(calls)/float64(b.N), "calls/op")
		})
	}
}

// TestRoundRelaxationNear checks the neighbour-restricted polish: a perfect
// matching never below the exhaustive optimum, optimal when sigma has no odd
// cycle, and no dearer than rounding without any polish.
func TestRoundRelaxationNear(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	for _, k := range kinds {
		for _, n := range []int{4, 8, 12} {
			t.Run(fmt.Sprintf("%s/n=%d", k.name, n), func(t *testing.T) {
				for rep := 0; rep < 30; rep++ {
					c := symmetrize(k.gen(rng, n, n), n)
					// near(v): the three cheapest partners of v.
					near := func(v int) []int32 {
						var out []int32
						for len(out) < 3 {
							best := -1
							for q := 0; q < n; q++ {
								if q != v && !containsInt32(out, q) && (best < 0 || c[v*n+q] < c[v*n+best]) {
									best = q
								}
							}
							out = append(out, int32(best))
						}
						return out
					}
					sigma := relaxation(t, c, n)
					calls := 0
					mate, odd, err := RoundRelaxationNear(sigma, countingOracle(t, c, n, &calls), near, nil)
					if err != nil {
						t.Fatal(err)
					}
					got := matchingCost(t, c, n, mate)
					plain, _, err := roundCycles(sigma, func(r, q int) float64 { return c[r*n+q] }, nil)
					if err != nil {
						t.Fatal(err)
					}
					opt := bruteMatching(c, n)
					tol := 1e-9 * (1 + math.Abs(opt))
					if got < opt-tol || (odd == 0 && got > opt+tol) || got > matchingCost(t, c, n, plain)+tol {
						t.Fatalf("cost %v, optimum %v, unpolished %v, odd %d", got, opt, matchingCost(t, c, n, plain), odd)
					}
				}
			})
		}
	}
}

func containsInt32(s []int32, v int) bool {
	for _, x := range s {
		if int(x) == v {
			return true
		}
	}
	return false
}
