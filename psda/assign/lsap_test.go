package assign

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestRectangularExhaustive(t *testing.T) {
	shapes := [][2]int{{1, 1}, {1, 4}, {2, 2}, {3, 3}, {3, 5}, {4, 4}, {4, 7}, {5, 5}, {6, 6}, {6, 7}, {7, 7}}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range kinds {
		for _, sh := range shapes {
			nr, nc := sh[0], sh[1]
			t.Run(fmt.Sprintf("%s/%dx%d", k.name, nr, nc), func(t *testing.T) {
				for rep := 0; rep < 20; rep++ {
					c := k.gen(rng, nr, nc)
					s, err := Rectangular(c, nr, nc)
					if err != nil {
						t.Fatal(err)
					}
					want := bruteAssign(c, nr, nc, 0, 1)
					if math.Abs(s.Cost-want) > 1e-9*(1+math.Abs(want)) {
						t.Fatalf("cost %v, brute force %v\nc = %v", s.Cost, want, c)
					}
					if err := Certify(c, nr, nc, s, tolFor(c)); err != nil {
						t.Fatalf("certificate: %v", err)
					}
				}
			})
		}
	}
}

func TestRectangularConstantIsIdentity(t *testing.T) {
	for _, n := range []int{1, 5, 40} {
		s, err := Rectangular(fill(n*n, func() float64 { return 1 }), n, n)
		if err != nil {
			t.Fatal(err)
		}
		seen := make([]bool, n)
		for _, j := range s.Col4Row {
			if seen[j] {
				t.Fatalf("n=%d: column %d used twice: %v", n, j, s.Col4Row)
			}
			seen[j] = true
		}
	}
}

func TestCertifyLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []struct {
		name   string
		nr, nc int
		c      func() []float64
	}{
		{"uniform500x500", 500, 500, func() []float64 { return fill(500*500, rng.Float64) }},
		{"uniform500x1300", 500, 1300, func() []float64 { return fill(500*1300, rng.Float64) }},
		{"int500x500", 500, 500, func() []float64 { return fill(500*500, func() float64 { return float64(rng.IntN(10)) }) }},
		{"sqdist2d500x1300", 500, 1300, func() []float64 { return sqDist(gaussian(rng, 500, 2), gaussian(rng, 1300, 2)) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c()
			s, err := Rectangular(c, tc.nr, tc.nc)
			if err != nil {
				t.Fatal(err)
			}
			certifyAndBreak(t, c, tc.nr, tc.nc, s, []perturbation{
				{"swapRows", func(s *Solution) { s.Col4Row[0], s.Col4Row[1] = s.Col4Row[1], s.Col4Row[0] }},
				{"raiseU", func(s *Solution) { s.U[7] += 1e-3 }},
				{"lowerV", func(s *Solution) { s.V[s.Col4Row[3]] -= 1e-3 }},
				{"duplicateColumn", func(s *Solution) { s.Col4Row[5] = s.Col4Row[6] }},
				{"wrongCost", func(s *Solution) { s.Cost += 1 }},
			})
		})
	}
}

func TestRectangularErrors(t *testing.T) {
	cases := []struct {
		name   string
		c      []float64
		nr, nc int
		want   string
	}{
		{"empty", nil, 0, 0, "at least 1"},
		{"tall", make([]float64, 6), 3, 2, "nr <= nc"},
		{"shortSlice", make([]float64, 5), 2, 3, "len(c) = 5"},
		{"nan", []float64{0, math.NaN(), 1, 2}, 2, 2, "c[0][1] = NaN"},
		{"inf", []float64{0, 1, math.Inf(-1), 2}, 2, 2, "c[1][0] = -Inf"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Rectangular(tc.c, tc.nr, tc.nc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestColdPhaseSettlesFew checks the work that solveLSAP's cold phase
// throws away on costs whose paths are long from the first rows (the
// clustered Stage 2 costs of BenchmarkSeededAuction, like the relaxations
// of real features): within a few coldProbe rows' worth of settled columns.
// Checked only at n/16 rows, as it was, the cold phase settled 514 columns
// here (35,000–40,000 on real features at n = 5,000). TestColdPhaseLeavesEarly
// counts its rows.
func TestColdPhaseSettlesFew(t *testing.T) {
	const n = 2000
	c := forbidDiagonal(stage2Clustered(n, 1), n)
	s, err := solveLSAP(c, n, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.coldSettled == 0 || s.coldSettled > 3*coldProbe {
		t.Fatalf("the cold phase settled %d columns before it gave up: want 1 to %d", s.coldSettled, 3*coldProbe)
	}
	if err := Certify(c, n, n, s.solution(), tolFor(c)); err != nil {
		t.Fatal(err)
	}
}
