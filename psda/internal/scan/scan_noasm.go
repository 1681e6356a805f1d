//go:build !amd64 || noasm

package scan

// The block scans find nothing without the assembly: the callers' scalar
// loops then scan every entry.

func sumBelowBlocks(row, p []float64, t float64) int                  { return 0 }
func sumAtMostBlocks(row, p []float64, t float64) int                 { return 0 }
func diffBelowBlocks(row, p []float64, a, t float64, atMost bool) int { return 0 }
func extremeBlocks(row, lo []float64, m float64) int                  { return 0 }
