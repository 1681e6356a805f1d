package assign

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// auctionCases are imbalanced shapes for the copy model's auction: an
// exact multiple (q = 20 copies a column, no dummies), one with dummies
// (q = 20, r = 100), and q = 3 with dummies; squared distances between
// Gaussian points (Stage 1's kind of cost) and uniform entries.
func auctionCases() []struct {
	name   string
	nr, nc int
	c      []float64
} {
	rng := rand.New(rand.NewPCG(26, 9))
	gauss := func(nr, nc int) []float64 { return sqDist(gaussian(rng, nr, 8), gaussian(rng, nc, 8)) }
	return []struct {
		name   string
		nr, nc int
		c      []float64
	}{
		{"sqdist3000x150", 3000, 150, gauss(3000, 150)},
		{"sqdist3100x150", 3100, 150, gauss(3100, 150)},
		{"uniform3000x150", 3000, 150, fill(3000*150, rng.Float64)},
		{"uniform1300x400", 1300, 400, fill(1300*400, rng.Float64)},
	}
}

// TestImbalancedAuctionBids bounds the auction's bids per row. Bidding
// against the next copy of the same column (the auction before
// levelRegular) made 67–79 bids a row on these shapes, chains of rows
// displacing each other within one column ε by ε; with the increment from
// the next column and the copies levelled between phases it makes 9–11
// where nr is a multiple of nc and 35–40 with dummies. The work counter
// is the auction's, not a timing. The solution must still be certified.
func TestImbalancedAuctionBids(t *testing.T) {
	for _, tc := range auctionCases() {
		t.Run(tc.name, func(t *testing.T) {
			s := newCopySAP(tc.c, tc.nr, tc.nc)
			if err := s.auction(nil); err != nil {
				t.Fatal(err)
			}
			perRow := float64(s.bids) / float64(tc.nr)
			limit := 20.0
			if tc.nr%tc.nc != 0 {
				limit = 50
			}
			if perRow > limit {
				t.Errorf("%.1f bids per row, want at most %v", perRow, limit)
			}
			sol, err := Imbalanced(tc.c, tc.nr, tc.nc)
			if err != nil {
				t.Fatal(err)
			}
			if err := Certify(tc.c, tc.nr, tc.nc, sol, tolFor(tc.c)); err != nil {
				t.Fatalf("certificate: %v", err)
			}
		})
	}
}

// TestImbalancedAuctionSlackness checks what the auction hands the exact
// finish without dummies (nr a multiple of nc): every row on a copy of
// column j satisfies ε-complementary slackness at the last ε, c_ij − v_k <=
// min_m (c_im − V_m) + ε with V_m the largest copy potential of m, so
// that tighten keeps every row whose column is its exact best. Without the
// final levelling the copies keep the prices the rows bid, apart by far
// more than ε.
func TestImbalancedAuctionSlackness(t *testing.T) {
	for _, tc := range auctionCases() {
		if tc.nr%tc.nc != 0 {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			s := newCopySAP(tc.c, tc.nr, tc.nc)
			if err := s.auction(nil); err != nil {
				t.Fatal(err)
			}
			eps := costScale(tc.c) * 1e-9
			colMax := make([]float64, tc.nc)
			for j := range colMax {
				colMax[j] = -inf
				for _, x := range s.vc[j*s.h : j*s.h+s.h] {
					colMax[j] = math.Max(colMax[j], x)
				}
			}
			worst := 0.0
			for i := 0; i < tc.nr; i++ {
				k := s.copyOf[i]
				if k < 0 {
					t.Fatalf("row %d left free by the auction", i)
				}
				row := tc.c[i*tc.nc : i*tc.nc+tc.nc]
				best := inf
				for j, x := range row {
					best = math.Min(best, x-colMax[j])
				}
				worst = math.Max(worst, row[k/s.h]-s.vc[k]-best)
			}
			if worst > 2*eps {
				t.Errorf("a row's copy is %.3g above its best value, ε = %.3g", worst, eps)
			}
		})
	}
}

// TestBidCacheBest2 checks the bid cache against a scan while prices
// rise: w1 and its column exact, c1 the column's cost, and w2 between w1
// and the true second best.
func TestBidCacheBest2(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 10))
	for _, nc := range []int{1, 2, cacheK, cacheK + 1, 50} {
		t.Run(fmt.Sprint(nc), func(t *testing.T) {
			const nr = 3
			c := fill(nr*nc, func() float64 { return float64(rng.IntN(20)) })
			p := make([]float64, nc)
			b := newBidCache(nr, nc)
			for step := 0; step < 3000; step++ {
				i := rng.IntN(nr)
				row := c[i*nc : i*nc+nc]
				w1, w2, j1, c1 := b.best2(i, row, p)
				t1, t2 := inf, inf
				for j, x := range row {
					if v := x + p[j]; v < t1 {
						t1, t2 = v, t1
					} else if v < t2 {
						t2 = v
					}
				}
				if w1 != t1 || row[j1]+p[j1] != w1 || c1 != row[j1] {
					t.Fatalf("step %d: best2 = (%v, column %d, cost %v), scan %v, cost %v", step, w1, j1, c1, t1, row[j1])
				}
				if w2 < w1 || w2 > t2 {
					t.Fatalf("step %d: w2 = %v outside [%v, %v]", step, w2, w1, t2)
				}
				// A bid: the best column's price rises.
				p[j1] += float64(rng.IntN(3))
			}
		})
	}
}
