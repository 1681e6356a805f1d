package assign

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/psda-dev/psda/psda/internal/par"
)

// forWorkers runs f with the parallel loops limited to 1, 2 and 5
// goroutines, the passes' results having to agree across them.
func forWorkers(t *testing.T, f func(workers int)) {
	t.Helper()
	defer par.SetWorkers(0)
	for _, w := range []int{1, 2, 5} {
		if err := par.SetWorkers(w); err != nil {
			t.Fatal(err)
		}
		f(w)
	}
}

// TestFirstFailingLeast checks that firstFailing returns the least failing
// row, not the first one some worker found, with failures in many chunks
// (the first check of each chunk is slowed down, so that later chunks
// tend to report first).
func TestFirstFailingLeast(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 1))
	const nr, nc = 5000, 100 // chunks of 655 rows: 8 chunks
	for trial := 0; trial < 20; trial++ {
		fails := make([]bool, nr)
		want := -1
		for k := 0; k < 1+rng.IntN(6); k++ {
			i := rng.IntN(nr)
			fails[i] = true
		}
		for i, f := range fails {
			if f {
				want = i
				break
			}
		}
		forWorkers(t, func(w int) {
			got := firstFailing(nr, nc, func(i0, i1 int) int {
				if i0 == 0 {
					spin := 0.0
					for k := 0; k < 200000; k++ {
						spin += math.Sqrt(float64(k))
					}
					_ = spin
				}
				for i := i0; i < i1; i++ {
					if fails[i] {
						return i
					}
				}
				return -1
			})
			if got != want {
				t.Fatalf("trial %d, %d workers: firstFailing = %d, want the least failing row %d", trial, w, got, want)
			}
		})
	}
	if got := firstFailing(nr, nc, func(i0, i1 int) int { return -1 }); got != -1 {
		t.Fatalf("no failing row: firstFailing = %d, want -1", got)
	}
}

// TestPriceTolParallel checks PriceTol against its serial definition on
// matrices with +Inf, −Inf and a largest entry anywhere, tails included.
func TestPriceTolParallel(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 2))
	for _, n := range []int{1, 7, 1023, 1025, 300000} {
		c := fill(n, func() float64 { return rng.NormFloat64() })
		c[rng.IntN(n)] = inf
		c[rng.IntN(n)] = -7 - rng.Float64() // the largest |c|, negative
		want := 0.0
		for _, x := range c {
			if !math.IsInf(x, 1) {
				want = max(want, math.Abs(x))
			}
		}
		forWorkers(t, func(w int) {
			if got := PriceTol(c); got != 1e-9*want {
				t.Fatalf("n = %d, %d workers: PriceTol = %v, want %v", n, w, got, 1e-9*want)
			}
		})
	}
	c := []float64{1, inf, math.Inf(-1)}
	if got := PriceTol(c); !math.IsInf(got, 1) {
		t.Fatalf("PriceTol with a −Inf entry = %v, want +Inf (as before)", got)
	}
}

// TestCertifyNamesFirstViolation checks that Certify's parallel pass
// reports what the serial loop met first: of two infeasible entries the
// one in the earlier row, and a NaN anywhere before an infeasibility.
func TestCertifyNamesFirstViolation(t *testing.T) {
	const n = 2000 // 61 chunks of 32 rows
	c := make([]float64, n*n)
	for i := range c {
		c[i] = 1
	}
	sol := &Solution{Col4Row: make([]int, n), U: make([]float64, n), V: make([]float64, n)}
	for i := range sol.Col4Row {
		sol.Col4Row[i] = i
		sol.U[i] = 1
		sol.Cost++
	}
	if err := Certify(c, n, n, sol, 1e-9); err != nil {
		t.Fatalf("a valid certificate fails: %v", err)
	}
	c[1900*n+5], c[300*n+1700] = 0.5, 0.25 // infeasible at rows 1900 and 300
	forWorkers(t, func(w int) {
		err := Certify(c, n, n, sol, 1e-9)
		if err == nil || !strings.Contains(err.Error(), "(300, 1700)") {
			t.Fatalf("%d workers: Certify = %v, want the infeasibility at (300, 1700)", w, err)
		}
	})
	c[1999*n+3] = math.NaN()
	forWorkers(t, func(w int) {
		err := Certify(c, n, n, sol, 1e-9)
		if err == nil || !strings.Contains(err.Error(), "c[1999][3] = NaN") {
			t.Fatalf("%d workers: Certify = %v, want the NaN at c[1999][3] first", w, err)
		}
	})
	c[1999*n+3], c[300*n+1700], c[1900*n+5] = 1, 1, 1
	sol.U[1500] = 0.5 // row 1500's entry loose, still feasible
	forWorkers(t, func(w int) {
		err := Certify(c, n, n, sol, 1e-9)
		if err == nil || !strings.Contains(err.Error(), "(1500, 1500) is not tight") {
			t.Fatalf("%d workers: Certify = %v, want the loose entry (1500, 1500)", w, err)
		}
	})
}

// TestCheckMatchingNamesFirst checks the parallel input check of
// MinWeightPerfectMatching: the first non-finite entry in row-major order
// (the diagonal ignored) and the first asymmetric pair in the serial
// sweep's order (by strips of 64 rows).
func TestCheckMatchingNamesFirst(t *testing.T) {
	const n = 1000
	rng := rand.New(rand.NewPCG(26, 3))
	c := stage2Cost(n, 5)
	c[3*n+3] = math.NaN() // the diagonal: ignored
	want := 0.0
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j {
				want = max(want, math.Abs(c[i*n+j]))
			}
		}
	}
	forWorkers(t, func(w int) {
		scale, err := checkMatching(c, n)
		if err != nil || scale != want {
			t.Fatalf("%d workers: checkMatching = %v, %v, want %v, nil", w, scale, err, want)
		}
	})
	c[900*n+10], c[500*n+20] = math.Inf(1), math.NaN()
	forWorkers(t, func(w int) {
		_, err := checkMatching(c, n)
		if err == nil || !strings.Contains(err.Error(), "c[500][20] = NaN") {
			t.Fatalf("%d workers: checkMatching = %v, want the NaN at c[500][20]", w, err)
		}
	})
	c[900*n+10], c[500*n+20] = c[10*n+900], c[20*n+500]
	// Asymmetric in strip 1 (rows 64–127) and strip 10, whose sweep is
	// shorter and ends first: strip 1's pair is the one to name.
	c[700*n+710] += 1
	c[100*n+990] += 1 + rng.Float64()
	forWorkers(t, func(w int) {
		_, err := checkMatching(c, n)
		if err == nil || !strings.Contains(err.Error(), "c[100][990]") {
			t.Fatalf("%d workers: checkMatching = %v, want the pair (100, 990)", w, err)
		}
	})
}

// TestBlossomLoweringSerial checks newBlossom's repair of an infeasible
// start against the serial loop it replaced (each vertex in order lowered
// by its most negative slack under the y of the moment), bit for bit.
func TestBlossomLoweringSerial(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 4))
	const n = 600
	c := stage2Cost(n, 6)
	y := make([]float64, n)
	for v := range y {
		y[v] = inf
		for w := 0; w < n; w++ {
			if w != v {
				y[v] = min(y[v], c[v*n+w]/2)
			}
		}
		if rng.IntN(10) == 0 {
			y[v] += rng.Float64() // infeasible at some edges
		}
	}
	want := append([]float64(nil), y...)
	for v := 0; v < n; v++ {
		low := 0.0
		for w := 0; w < n; w++ {
			if r := c[v*n+w] - want[v] - want[w]; r < low && w != v {
				low = r
			}
		}
		want[v] += low
	}
	forWorkers(t, func(w int) {
		s := newBlossom(n, c, nil, y, nil)
		for v := range want {
			if math.Float64bits(s.y[v]) != math.Float64bits(want[v]) {
				t.Fatalf("%d workers: y[%d] = %v, the serial repair gives %v", w, v, s.y[v], want[v])
			}
		}
	})
}

// TestHasForbidden checks the parallel search for a +Inf entry, which
// decides whether an auction first checks for a perfect matching: one
// +Inf in any row is found, −Inf and NaN are not +Inf.
func TestHasForbidden(t *testing.T) {
	const nr, nc = 3000, 700
	c := make([]float64, nr*nc)
	c[5], c[17*nc+3] = math.Inf(-1), math.NaN()
	forWorkers(t, func(w int) {
		if hasForbidden(c, nr, nc) {
			t.Fatalf("%d workers: hasForbidden without a +Inf entry", w)
		}
	})
	for _, k := range []int{0, nr*nc/2 + 11, nr*nc - 1} {
		c[k] = inf
		forWorkers(t, func(w int) {
			if !hasForbidden(c, nr, nc) {
				t.Fatalf("%d workers: hasForbidden misses the +Inf at c[%d][%d]", w, k/nc, k%nc)
			}
		})
		c[k] = 0
	}
}
