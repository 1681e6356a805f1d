package assign

import (
	"math"
	"math/rand/v2"
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
