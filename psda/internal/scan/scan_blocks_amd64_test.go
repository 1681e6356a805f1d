//go:build !noasm

package scan

import (
	"math"
	"testing"
)

// TestBlocksExact checks that each assembly block scan stops at the block
// of the first entry that fails its bound, and not before: a scan that
// stopped early (a predicate that also fails the ties the bound passes, or
// one ulp beyond them) would still give the scalar loop's results, since
// the loop goes on from where the scan stops, but would lose the speed the
// scans are for, and no other test would see it. Every passing entry sits
// on its bound's edge (a tie where the bound passes ties, one ulp beyond
// where it does not); one failing entry, just past the edge or NaN or
// ±Inf, sits at each position of rows of every length up to 40.
func TestBlocksExact(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2: the block scans find nothing")
	}
	up, down := func(x float64) float64 { return math.Nextafter(x, math.Inf(1)) }, func(x float64) float64 { return math.Nextafter(x, math.Inf(-1)) }
	nan, inf := math.NaN(), math.Inf(1)
	type scanCase struct {
		name   string
		pass   func(j int) float64 // the row's passing entries
		fail   []float64           // failing entries, one at a time
		lo     float64             // p's entries (Extreme: lo's)
		blocks func(row, p []float64) int
	}
	cases := []scanCase{
		// row + 0 against !(h >= 1): 1 passes.
		{"sumBelow", func(int) float64 { return 1 }, []float64{down(1), nan, -inf}, 0,
			func(row, p []float64) int { return sumBelowBlocks(row, p, 1) }},
		// row + 0 against !(h > 1): one ulp above 1 passes.
		{"sumAtMost", func(int) float64 { return up(1) }, []float64{1, nan, -inf}, 0,
			func(row, p []float64) int { return sumAtMostBlocks(row, p, 1) }},
		// (row − 0.5) − 0 against !(h >= 1): 1.5 passes.
		{"diffBelow", func(int) float64 { return 1.5 }, []float64{down(1.5), nan, -inf}, 0,
			func(row, p []float64) int { return diffBelowBlocks(row, p, 0.5, 1, false) }},
		// (row − 0.5) − 0 against !(h > 1): one ulp above 1.5 passes.
		{"diffAtMost", func(int) float64 { return up(1.5) }, []float64{1.5, nan, -inf}, 0,
			func(row, p []float64) int { return diffBelowBlocks(row, p, 0.5, 1, true) }},
		// |x| > 2, x < lo = −2, not finite: ±2 pass.
		{"extreme", func(j int) float64 { return float64(2 - 4*(j%2)) }, []float64{up(2), down(-2), nan, inf, -inf}, -2,
			func(row, lo []float64) int { return extremeBlocks(row, lo, 2) }},
	}
	for _, c := range cases {
		for n := 0; n <= 40; n++ {
			for k := 0; k <= n; k++ {
				for _, bad := range c.fail {
					row, p := make([]float64, n), make([]float64, n)
					for j := range row {
						row[j], p[j] = c.pass(j), c.lo
					}
					want := n &^ 7
					if k < n {
						row[k] = bad
						want = min(k&^7, want)
					}
					if got := c.blocks(row, p); got != want {
						t.Fatalf("%s n=%d: entry %d = %v failing, the block scan stops at %d, want %d", c.name, n, k, bad, got, want)
					}
				}
			}
		}
	}
}
