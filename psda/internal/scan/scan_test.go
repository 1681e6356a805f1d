package scan

import (
	"math"
	"math/rand/v2"
	"testing"
)

// special values that the scans' bounds must treat as the scalar tests do.
var special = []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1, -1, 0.5, 2}

// randomRow returns n values, mostly in [0, 1) and above the bounds the
// tests use, with a few special values and values equal to the bound t.
func randomRow(rng *rand.Rand, n int, t float64) []float64 {
	row := make([]float64, n)
	for j := range row {
		switch r := rng.Float64(); {
		case r < 0.03:
			row[j] = special[rng.IntN(len(special))]
		case r < 0.05:
			row[j] = t
		default:
			row[j] = 4 + rng.Float64()
		}
	}
	return row
}

// TestScansAgainstLoops checks every scan against the plain loop of its
// definition, on rows of every length up to 70 (the eight-entry blocks
// and their scalar tails) holding NaN, ±Inf, ±0 and values tying the
// bound, at every start offset of a few rows.
func TestScansAgainstLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	first := func(n int, fails func(j int) bool) int {
		for j := 0; j < n; j++ {
			if fails(j) {
				return j
			}
		}
		return n
	}
	for n := 0; n <= 70; n++ {
		for rep := 0; rep < 40; rep++ {
			bound := []float64{1, 0, math.Copysign(0, -1), -1, math.Inf(1), math.Inf(-1), math.NaN()}[rep%7]
			a := []float64{0, 0.25, -3, math.Copysign(0, -1)}[rep%4]
			row, p := randomRow(rng, n, bound), randomRow(rng, n+3, 0)
			for j := range p {
				if rep%5 == 0 {
					p[j] = -p[j] // values below the bound too
				}
			}
			for off := 0; off <= min(n, 9); off++ {
				r, q := row[off:], p[off:]
				if got, want := SumBelow(r, q, bound), first(len(r), func(j int) bool { return !(r[j]+q[j] >= bound) }); got != want {
					t.Fatalf("SumBelow n=%d off=%d t=%v: %d, want %d", n, off, bound, got, want)
				}
				if got, want := SumAtMost(r, q, bound), first(len(r), func(j int) bool { return !(r[j]+q[j] > bound) }); got != want {
					t.Fatalf("SumAtMost n=%d off=%d t=%v: %d, want %d", n, off, bound, got, want)
				}
				if got, want := DiffBelow(r, q, a, bound), first(len(r), func(j int) bool { return !(r[j]-a-q[j] >= bound) }); got != want {
					t.Fatalf("DiffBelow n=%d off=%d a=%v t=%v: %d, want %d", n, off, a, bound, got, want)
				}
				if got, want := DiffAtMost(r, q, a, bound), first(len(r), func(j int) bool { return !(r[j]-a-q[j] > bound) }); got != want {
					t.Fatalf("DiffAtMost n=%d off=%d a=%v t=%v: %d, want %d", n, off, a, bound, got, want)
				}
				m := math.Abs(bound) + 4.5
				if rep%3 == 0 {
					m = math.Inf(1)
				}
				if got, want := Extreme(r, q, m), first(len(r), func(j int) bool {
					x := r[j]
					return x-x != 0 || math.Abs(x) > m || x < q[j]
				}); got != want {
					t.Fatalf("Extreme n=%d off=%d m=%v: %d, want %d", n, off, m, got, want)
				}
			}
		}
	}
}

// TestScanEachEntry checks that each scan stops at an entry that fails
// alone in a long row, at every position, and runs to the end of a row
// where none fails: a block scan that skipped a lane or a block would
// miss it.
func TestScanEachEntry(t *testing.T) {
	const n = 77
	for k := 0; k <= n; k++ {
		for _, bad := range []float64{-1, math.NaN(), math.Inf(-1)} {
			row, p := make([]float64, n), make([]float64, n)
			for j := range row {
				row[j], p[j] = 2, 1
			}
			if k < n {
				row[k] = bad
			}
			if got := SumBelow(row, p, 2.5); got != k {
				t.Fatalf("SumBelow: entry %d (%v) failing alone, got %d", k, bad, got)
			}
			if got := SumAtMost(row, p, 2.5); got != k {
				t.Fatalf("SumAtMost: entry %d (%v) failing alone, got %d", k, bad, got)
			}
			if got := DiffBelow(row, p, 0.5, 0); got != k {
				t.Fatalf("DiffBelow: entry %d (%v) failing alone, got %d", k, bad, got)
			}
			if got := DiffAtMost(row, p, 0.5, 0); got != k {
				t.Fatalf("DiffAtMost: entry %d (%v) failing alone, got %d", k, bad, got)
			}
			lo := make([]float64, n)
			for j := range lo {
				lo[j] = -2
			}
			if bad == -1 {
				row[min(k, n-1)] = 3 // |x| > m
				if k == n {
					row[n-1] = 2
				}
			}
			if got := Extreme(row, lo, 2.5); got != k {
				t.Fatalf("Extreme: entry %d failing alone, got %d", k, got)
			}
		}
	}
	// The tie: entries equal to the bound pass DiffBelow and SumBelow and
	// fail DiffAtMost.
	row, p := []float64{3, 3, 3, 3, 3, 3, 3, 3, 3}, make([]float64, 9)
	if SumBelow(row, p, 3) != 9 || SumAtMost(row, p, 3) != 0 || DiffBelow(row, p, 0, 3) != 9 || DiffAtMost(row, p, 0, 3) != 0 {
		t.Fatal("ties with the bound")
	}
}
