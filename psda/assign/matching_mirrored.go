package assign

import (
	"fmt"
	"math"

	"github.com/psda-dev/psda/psda/internal/par"
	"github.com/psda-dev/psda/psda/internal/scan"
)

// MinWeightPerfectMatchingMirrored is MinWeightPerfectMatchingWith for a c
// that its caller wrote by mirroring, each value stored at (i, j) and
// (j, i), so exactly symmetric (psda's dense Stage 2, whose finishing pass
// writes both). Its input check reads c by rows, for the finite entries,
// the scale and the column minima, instead of comparing every (i, j) with
// (j, i): that sweep reads c in transposed blocks, at twice a row pass's
// cost (1.5 of 5 CPU seconds at n = 20,000, docs/performance.md), and the
// relaxation's warm start then reads c again for the minima. On a
// symmetric c its result is MinWeightPerfectMatchingWith's, bit for bit.
//
// A c that is not symmetric is the caller's error, and it is caught where
// it is gross: n pairs (i, j) spread over c (one per row, 7919 columns
// apart) are compared as MinWeightPerfectMatchingWith compares every pair,
// and an error names the first that differs (use
// MinWeightPerfectMatchingWith, which checks every pair, when c is not
// built by mirroring). The other errors are MinWeightPerfectMatching's.
//
// Example:
//
//	c := []float64{0, 1, 5, 2, 1, 0, 2, 5, 5, 2, 0, 1, 2, 5, 1, 0}
//	pm, err := MinWeightPerfectMatchingMirrored(c, 4, nil)
//	// pm.Mate = [1 0 3 2], pm.Cost = 2, err = nil
func MinWeightPerfectMatchingMirrored(c []float64, n int, h *Hooks) (*PerfectMatching, error) {
	if err := checkMatchingShape(c, n); err != nil {
		return nil, err
	}
	scale, colMin := rowPass(c, n)
	if scale == inf {
		return nil, nonFinite(c, n)
	}
	for i := 0; i < n; i++ {
		if j := (i + 7919) % n; j != i && !(math.Abs(c[i*n+j]-c[j*n+i]) <= 1e-9*scale) {
			return nil, fmt.Errorf("assign: c[%d][%d] = %v but c[%d][%d] = %v: MinWeightPerfectMatchingMirrored needs a c written by mirroring (exactly symmetric); use MinWeightPerfectMatchingWith for other symmetric costs", i, j, c[i*n+j], j, i, c[j*n+i])
		}
	}
	return minWeightPerfectMatching(c, n, h, scale, colMin)
}

// rowPass returns the largest off-diagonal |c[i][j]| of the n×n matrix c
// (+Inf if one is NaN or ±Inf) and the minimum of each column's
// off-diagonal entries, in one pass by rows split into par.Parts (the
// scale of symmetryPass and the minima that the relaxation's warm start
// would otherwise read c again for, denseCandidates). Each part keeps its
// own minima, merged at the end: a minimum does not depend on the order
// (up to the sign of a zero, which only ever meets comparisons and sums
// with other entries, where it changes nothing).
func rowPass(c []float64, n int) (scale float64, colMin []float64) {
	parts := par.NParts(n)
	mins, top := make([][]float64, parts), make([]float64, parts)
	par.Parts(n, func(part, i0, i1 int) {
		cm := make([]float64, n)
		for j := range cm {
			cm[j] = inf
		}
		m := 0.0
		for i := i0; i < i1; i++ {
			row := c[i*n : i*n+n]
			for _, seg := range [2][2]int{{0, i}, {i + 1, n}} {
				cms, xs := cm[seg[0]:seg[1]], row[seg[0]:seg[1]]
				for j := 0; j < len(xs); j++ {
					// The scan skips the entries that change nothing.
					if j += scan.Extreme(xs[j:], cms[j:], m); j == len(xs) {
						break
					}
					x := xs[j]
					if x-x != 0 {
						m = inf
						continue
					}
					if ax := math.Abs(x); ax > m {
						m = ax
					}
					if x < cms[j] {
						cms[j] = x
					}
				}
			}
		}
		mins[part], top[part] = cm, m
	})
	colMin = mins[0]
	for part, w := range mins[1:] {
		for j, x := range w {
			if x < colMin[j] {
				colMin[j] = x
			}
		}
		scale = max(scale, top[part+1])
	}
	return max(scale, top[0]), colMin
}
