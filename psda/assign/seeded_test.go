package assign

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// stage2Clustered returns the Stage 2 cost of linear-kernel MMD,
// c[r][q] = ‖w_r + w_q‖² with w_r = s_r − t_σ(r) (docs/method.md, the
// constant 1/k² dropped), for n source points and n/10 target points drawn
// from the same 10 Gaussian clusters in R^16 (centres N(0, I), spread 0.5,
// the target shifted by 0.5 along a fixed ±1/0 pattern), paired by the
// optimal imbalanced Stage 1 (Imbalanced on squared distances): an
// imbalanced, clustered stand-in for the Stage 2 matrices of real features
// (benchmarks/refresh_drift.py): the cold phase's paths are long from the
// first rows, and warmStart gives up at its first check, the auction
// taking over, from n = 2000 in the general mode and at n = 4000 in the
// matching's symmetric one (at n = 2000 it holds). The diagonal is kept.
func stage2Clustered(n int, seed uint64) []float64 {
	return stage2Shifted(n, 0.5, seed)
}

// stage2GiveUp returns stage2Clustered's matrix of order giveUpN, on which
// warmStart (16 candidates at this n) gives up at its first check, for
// seeds 1, 3, 5, and seeds the auction: the seeding's tests run on it.
func stage2GiveUp(seed uint64) []float64 { return stage2Clustered(giveUpN, seed) }

// giveUpN is the order of stage2GiveUp's matrices.
const giveUpN = 500

// stage2Shifted is stage2Clustered with the target shifted by shift along
// its pattern.
func stage2Shifted(n int, shift float64, seed uint64) []float64 {
	const d, classes, spread = 16, 10, 0.5
	rng := rand.New(rand.NewPCG(seed, 5))
	centres := make([][]float64, classes)
	for k := range centres {
		centres[k] = make([]float64, d)
		for l := range centres[k] {
			centres[k][l] = rng.NormFloat64()
		}
	}
	point := func(dom float64) []float64 {
		c, p := centres[rng.IntN(classes)], make([]float64, d)
		for l := range p {
			p[l] = c[l] + spread*rng.NormFloat64() + dom*shift*float64(l%3-1)
		}
		return p
	}
	nt := n / 10
	src, tgt := make([][]float64, n), make([][]float64, nt)
	for i := range src {
		src[i] = point(0)
	}
	for i := range tgt {
		tgt[i] = point(1)
	}
	s1, err := Imbalanced(sqDist(src, tgt), n, nt)
	if err != nil {
		panic(err)
	}
	w := make([][]float64, n)
	for r := range w {
		w[r] = make([]float64, d)
		for l := range w[r] {
			w[r][l] = src[r][l] - tgt[s1.Col4Row[r]][l]
		}
	}
	c := make([]float64, n*n)
	for r := range w {
		for q := range w {
			s := 0.0
			for l := range w[r] {
				x := w[r][l] + w[q][l]
				s += x * x
			}
			c[r*n+q] = s
		}
	}
	return c
}

// TestSeedPrices checks seedPrices against a brute-force reading of its
// contract on matrices where warmStart gives up: the violation is the
// largest of the sparse potentials over every dense entry, the range that
// of the finite entries, and every row's entry in the seed's assignment is
// within that violation of its cheapest entry at the seeded prices
// (ε-complementary slackness).
func TestSeedPrices(t *testing.T) {
	const n = giveUpN
	for _, seed := range []uint64{1, 3, 5} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			c := forbidDiagonal(stage2GiveUp(seed), n)
			s := newLSAP(c, n, n)
			if ok, err := s.warmStart(nil); ok || err != nil || s.seed == nil {
				t.Fatalf("warmStart = %v, %v, seed %v: want a give-up with a seed", ok, err, s.seed != nil)
			}
			sol := s.seed
			delta := math.Inf(-1)
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					delta = math.Max(delta, sol.U[i]+sol.V[j]-c[i*n+j])
				}
			}
			if !(delta > 0) {
				t.Fatalf("largest violation %v: the warm start should not have given up", delta)
			}
			p, viol, lo, hi := s.seedPrices()
			if math.Abs(viol-delta) > 1e-12*delta {
				t.Errorf("violation %v, brute force %v", viol, delta)
			}
			wlo, whi := inf, math.Inf(-1)
			for _, x := range c {
				if x < inf {
					wlo, whi = math.Min(wlo, x), math.Max(whi, x)
				}
			}
			if lo != wlo || hi != whi {
				t.Errorf("range [%v, %v], brute force [%v, %v]", lo, hi, wlo, whi)
			}
			for i := 0; i < n; i++ {
				j := sol.Col4Row[i]
				best := math.Inf(1)
				for k := 0; k < n; k++ {
					best = math.Min(best, c[i*n+k]+p[k])
				}
				if got := c[i*n+j] + p[j]; got > best+delta*(1+1e-9) {
					t.Errorf("row %d: assigned value %v exceeds its best %v by more than δ = %v", i, got, best, delta)
				}
			}
		})
	}
}

// TestSeededAuction checks that the seeded auction ends at the optimum that
// the cold one and SciPy find, with potentials that Certify accepts, and
// that it makes fewer bids than the cold auction.
func TestSeededAuction(t *testing.T) {
	const n = giveUpN
	for _, seed := range []uint64{1, 3, 5} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			c := forbidDiagonal(stage2GiveUp(seed), n)
			var cost [2]float64
			var bids [2]int
			for k, seeded := range []bool{false, true} {
				seedAuction = seeded
				s, err := solveLSAP(c, n, n, nil)
				seedAuction = true
				if err != nil {
					t.Fatal(err)
				}
				sol := s.solution()
				if err := Certify(c, n, n, sol, tolFor(c)); err != nil {
					t.Fatalf("seeded %v: %v", seeded, err)
				}
				cost[k], bids[k] = sol.Cost, s.bids
			}
			if math.Abs(cost[0]-cost[1]) > tolFor(c) {
				t.Errorf("seeded cost %v, cold %v", cost[1], cost[0])
			}
			if bids[1] >= bids[0] {
				t.Errorf("seeded auction made %d bids, the cold one %d: want fewer", bids[1], bids[0])
			}
			if want := scipyCost(t, c, n, n); math.Abs(cost[1]-want) > tolFor(c) {
				t.Errorf("seeded cost %v, SciPy %v", cost[1], want)
			}
		})
	}
}

// BenchmarkSeededAuction times MinWeightPerfectMatching (relaxation and
// blossom) on stage2Clustered's matrices, with the auction seeded by the
// failed warm start (seeded) and cold (cold), alternated in one process.
// Run: go test -run XXX -bench SeededAuction -benchtime 3x ./psda/assign
func BenchmarkSeededAuction(b *testing.B) {
	for _, n := range []int{2000, 4000} {
		c := stage2Clustered(n, 1)
		for _, seeded := range []bool{true, false} {
			name := map[bool]string{true: "seeded", false: "cold"}[seeded]
			b.Run(fmt.Sprintf("n=%d/%s", n, name), func(b *testing.B) {
				seedAuction = seeded
				defer func() { seedAuction = true }()
				b.ResetTimer()
				defer reportCPU(b, cpuNow())
				for range b.N {
					if _, err := MinWeightPerfectMatching(c, n); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestRepeatedLines checks repeatedLines against a brute-force count of the
// rows and columns equal to another, on squared distances between points of
// which the first share are copies of other points.
func TestRepeatedLines(t *testing.T) {
	const n = 300
	for _, share := range []float64{0, 0.1, 0.25} {
		rng := rand.New(rand.NewPCG(9, 9))
		pts := gaussian(rng, n, 2)
		for i := 0; i < int(share*n); i += 2 {
			pts[i+1] = pts[i] // a pair of equal points: two repeated lines
		}
		c := sqDist(pts, pts)
		rep := 0
		for i := 0; i < n; i++ {
			for k := 0; k < n; k++ {
				if k != i && slices.Equal(c[i*n:i*n+n], c[k*n:k*n+n]) {
					rep++
					break
				}
			}
		}
		want := float64(rep) / n // c is symmetric: columns repeat as rows do
		if got := repeatedLines(c, n); got != want {
			t.Errorf("share %v: repeatedLines = %v, brute force %v", share, got, want)
		}
	}
}

// TestNoSeedOnRepeats checks that warmStart leaves no seed when more than
// seedRepeats of the lines repeat: stage2Clustered's matrix with a quarter
// of its pairs duplicated (rows and columns copied).
func TestNoSeedOnRepeats(t *testing.T) {
	const n = giveUpN
	base := stage2GiveUp(1)
	c := withRepeatedPairs(base, n)
	for _, tc := range []struct {
		name string
		c    []float64
		seed bool
	}{{"distinct", base, true}, {"repeated", c, false}} {
		s := newLSAP(forbidDiagonal(tc.c, n), n, n)
		if ok, err := s.warmStart(nil); ok || err != nil {
			t.Fatalf("%s: warmStart = %v, %v: want a give-up", tc.name, ok, err)
		}
		if (s.seed != nil) != tc.seed {
			t.Errorf("%s: seeded %v, want %v (repeatedLines %v)", tc.name, s.seed != nil, tc.seed, repeatedLines(s.c, n))
		}
	}
}

// TestWarmStartSkipsRepeats checks that warmStart gives up before its
// candidate pass (which polls Stop after it) when more than seedRepeats of
// the lines repeat, and runs on the same matrix without the repeats.
func TestWarmStartSkipsRepeats(t *testing.T) {
	const n = 600
	base := stage2Clustered(n, 4)
	c := withRepeatedPairs(base, n)
	for _, tc := range []struct {
		name string
		c    []float64
		runs bool
	}{{"distinct", base, true}, {"repeated", c, false}} {
		polls := 0
		s := newLSAP(forbidDiagonal(tc.c, n), n, n)
		s.sym = true
		ok, err := s.warmStart(&Hooks{Stop: func() error { polls++; return nil }})
		if err != nil {
			t.Fatal(err)
		}
		if runs := polls > 0; runs != tc.runs {
			t.Errorf("%s (repeated lines %.3f): warm start ran %v (%d polls, kept %v), want %v", tc.name, repeatedLines(s.c, n), runs, polls, ok, tc.runs)
		}
	}
}

// withRepeatedPairs returns a copy of the n×n matrix base with a quarter
// of its pairs duplicated: pair r+1 := pair r for even r < n/4, in its row
// and in its column.
func withRepeatedPairs(base []float64, n int) []float64 {
	c := slices.Clone(base)
	for r := 0; r < n/4; r += 2 {
		copy(c[(r+1)*n:(r+2)*n], base[r*n:(r+1)*n])
	}
	for q := 0; q < n/4; q += 2 {
		for r := 0; r < n; r++ {
			c[r*n+q+1] = c[r*n+q]
		}
	}
	return c
}
