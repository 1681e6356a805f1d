package assign

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// bruteMatching returns the minimum cost of a perfect matching of the n
// vertices by enumerating all (n−1)!! matchings.
func bruteMatching(c []float64, n int) float64 {
	used := make([]bool, n)
	best := inf
	var rec func(sum float64)
	rec = func(sum float64) {
		i := 0
		for i < n && used[i] {
			i++
		}
		if i == n {
			best = math.Min(best, sum)
			return
		}
		used[i] = true
		for j := i + 1; j < n; j++ {
			if !used[j] {
				used[j] = true
				rec(sum + c[i*n+j])
				used[j] = false
			}
		}
		used[i] = false
	}
	rec(0)
	return best
}

// symmetrize makes c symmetric and gives it a garbage diagonal, which the
// solver must ignore.
func symmetrize(c []float64, n int) []float64 {
	for i := 0; i < n; i++ {
		for j := 0; j < i; j++ {
			c[i*n+j] = c[j*n+i]
		}
		c[i*n+i] = -1e6
	}
	return c
}

// triangles returns the squared-distance costs of near-equilateral triangles
// of side about 1 around the given centres; far-apart triangles make the
// symmetric assignment choose 3-cycles, which must be repaired.
func triangles(rng *rand.Rand, centres [][2]float64) ([]float64, int) {
	var p [][]float64
	for _, ctr := range centres {
		for k := 0; k < 3; k++ {
			a := 2*math.Pi*float64(k)/3 + rng.Float64()*0.1
			p = append(p, []float64{ctr[0] + math.Cos(a)/math.Sqrt(3), ctr[1] + math.Sin(a)/math.Sqrt(3)})
		}
	}
	return sqDist(p, p), len(p)
}

// checkPerfect fails unless Mate is a perfect matching whose edges sum to
// Cost and Bound <= Cost.
func checkPerfect(t *testing.T, c []float64, n int, pm *PerfectMatching) {
	t.Helper()
	sum := 0.0
	for r, q := range pm.Mate {
		if q < 0 || q >= n || q == r || pm.Mate[q] != r {
			t.Fatalf("Mate is not a perfect matching: %v", pm.Mate)
		}
		if r < q {
			sum += c[r*n+q]
		}
	}
	if math.Abs(sum-pm.Cost) > 1e-9*(1+math.Abs(sum)) {
		t.Fatalf("Cost = %v but matched edges sum to %v", pm.Cost, sum)
	}
	if pm.Bound > pm.Cost {
		t.Fatalf("Bound %v > Cost %v", pm.Bound, pm.Cost)
	}
}

func TestMatchingExhaustive(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, k := range kinds {
		for _, n := range []int{2, 4, 6, 8} {
			t.Run(fmt.Sprintf("%s/n=%d", k.name, n), func(t *testing.T) {
				odd := 0
				for rep := 0; rep < 40; rep++ {
					c := symmetrize(k.gen(rng, n, n), n)
					pm, err := MinWeightPerfectMatching(c, n)
					if err != nil {
						t.Fatal(err)
					}
					checkPerfect(t, c, n, pm)
					want := bruteMatching(c, n)
					tol := 1e-9 * (1 + math.Abs(want))
					if math.Abs(pm.Cost-want) > tol {
						t.Fatalf("cost %v, brute force %v (odd vertices %d)", pm.Cost, want, pm.OddVertices)
					}
					if pm.Bound > want+tol {
						t.Fatalf("Bound %v exceeds the optimum %v", pm.Bound, want)
					}
					if pm.Cost-pm.Bound > tol || pm.Bound > pm.Cost {
						t.Fatalf("gap %v: the dual objective must equal the cost up to rounding", pm.Cost-pm.Bound)
					}
					if err := CertifyMatching(c, n, &ExactMatching{Mate: pm.Mate, Cost: pm.Cost, Duals: pm.Duals}, tol); err != nil {
						t.Fatal(err)
					}
					if pm.OddVertices > 0 {
						odd++
					}
				}
				t.Logf("%d of 40 instances had odd cycles", odd)
			})
		}
	}
}

func TestMatchingOddCycles(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	cases := []struct {
		name    string
		centres [][2]float64
	}{
		{"twoTriangles", [][2]float64{{0, 0}, {100, 0}}},
		{"fourTriangles", [][2]float64{{0, 0}, {100, 0}, {0, 100}, {100, 100}}},
		{"twoCloseTriangles", [][2]float64{{0, 0}, {30, 0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, n := triangles(rng, tc.centres)
			pm, err := MinWeightPerfectMatching(c, n)
			if err != nil {
				t.Fatal(err)
			}
			checkPerfect(t, c, n, pm)
			if pm.OddVertices == 0 {
				t.Fatal("instance meant to produce odd cycles has none")
			}
			want := bruteMatching(c, n)
			if math.Abs(pm.Cost-want) > 1e-9*(1+want) {
				t.Fatalf("cost %v, optimum %v (odd vertices %d)", pm.Cost, want, pm.OddVertices)
			}
			if pm.Bound > want+1e-9*(1+want) {
				t.Fatalf("Bound %v exceeds the optimum %v", pm.Bound, want)
			}
		})
	}
}

// TestMatchingRandomBrute checks small random instances against
// enumeration: the matching is optimal and Bound <= optimum <= Cost.
func TestMatchingRandomBrute(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for rep := 0; rep < 300; rep++ {
		n := 2 * (1 + rng.IntN(5))
		c := symmetrize(fill(n*n, rng.Float64), n)
		pm, err := MinWeightPerfectMatching(c, n)
		if err != nil {
			t.Fatal(err)
		}
		checkPerfect(t, c, n, pm)
		want := bruteMatching(c, n)
		if math.Abs(pm.Cost-want) > 1e-12*(1+want) || pm.Bound > want+1e-12 {
			t.Fatalf("n=%d: bound %v, optimum %v, cost %v", n, pm.Bound, want, pm.Cost)
		}
	}
}

func TestMatchingErrors(t *testing.T) {
	cases := []struct {
		name string
		c    []float64
		n    int
		want string
	}{
		{"zero", nil, 0, "even n >= 2"},
		{"odd", make([]float64, 9), 3, "even n >= 2"},
		{"shortSlice", make([]float64, 3), 2, "len(c) = 3"},
		{"nan", []float64{0, math.NaN(), math.NaN(), 0}, 2, "c[0][1] = NaN"},
		{"asymmetric", []float64{0, 1, 2, 0}, 2, "symmetric"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := MinWeightPerfectMatching(tc.c, tc.n)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// BenchmarkMatchingOdd times the dense matching on squared distances of
// Gaussian points in the plane, whose relaxation has many odd cycles (about
// 570 odd vertices for n = 2000) for the blossom algorithm to augment.
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
	}
}
