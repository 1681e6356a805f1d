//go:build !noasm

package scan

import "github.com/psda-dev/psda/psda/internal/gram"

// useAVX2: the CPU and OS support the AVX2 instructions the block scans
// use (gram.UseFMA also asks for FMA3, which every AVX2 CPU psda meets
// has; the scans use no FMA).
var useAVX2 = gram.UseFMA

// sumBelowBlocks returns the start of the first block of eight entries of
// row holding one with !(row[j]+p[j] >= t), or len(row) rounded down to
// eight when none does (0 without AVX2): SumBelow's scalar loop takes
// over there.
func sumBelowBlocks(row, p []float64, t float64) int {
	n := len(row) &^ 7
	if !useAVX2 || n == 0 {
		return 0
	}
	_ = p[n-1]
	return sumBelowAVX2(&row[0], &p[0], n, t)
}

// sumAtMostBlocks is sumBelowBlocks against !(row[j]+p[j] > t).
func sumAtMostBlocks(row, p []float64, t float64) int {
	n := len(row) &^ 7
	if !useAVX2 || n == 0 {
		return 0
	}
	_ = p[n-1]
	return sumAtMostAVX2(&row[0], &p[0], n, t)
}

// diffBelowBlocks is sumBelowBlocks for (row[j]−a)−p[j] against
// !(h >= t), or !(h > t) with atMost.
func diffBelowBlocks(row, p []float64, a, t float64, atMost bool) int {
	n := len(row) &^ 7
	if !useAVX2 || n == 0 {
		return 0
	}
	_ = p[n-1]
	if atMost {
		return diffAtMostAVX2(&row[0], &p[0], n, a, t)
	}
	return diffBelowAVX2(&row[0], &p[0], n, a, t)
}

// extremeBlocks is sumBelowBlocks for Extreme's test.
func extremeBlocks(row, lo []float64, m float64) int {
	n := len(row) &^ 7
	if !useAVX2 || n == 0 {
		return 0
	}
	_ = lo[n-1]
	return extremeAVX2(&row[0], &lo[0], n, m)
}

//go:noescape
func sumBelowAVX2(row, p *float64, n int, t float64) int

//go:noescape
func sumAtMostAVX2(row, p *float64, n int, t float64) int

//go:noescape
func diffBelowAVX2(row, p *float64, n int, a, t float64) int

//go:noescape
func diffAtMostAVX2(row, p *float64, n int, a, t float64) int

//go:noescape
func extremeAVX2(row, lo *float64, n int, m float64) int
