package assign

import (
	"fmt"
	"math"
)

// bounds returns how many rows each column must receive in an nr×nc problem:
// between lo and hi. With nr <= nc a column takes at most one row (lo = 0,
// hi = 1, or exactly one when square); with nr > nc every column takes
// floor(nr/nc) or ceil(nr/nc) rows (paper, eqs. 4–5).
func bounds(nr, nc int) (lo, hi int) {
	lo = nr / nc
	if nr%nc == 0 {
		return lo, lo
	}
	return lo, lo + 1
}

// Certify checks that s is an optimal solution of the nr×nc problem with
// row-major costs c, using only s and c. It covers both Rectangular (nr <= nc:
// every column used at most once) and Imbalanced (nr > nc: every column used
// floor(nr/nc) or ceil(nr/nc) times). The certificate is the LP duality of
// the assignment polytope with column bounds lo <= count_j <= hi:
//
//   - every row has a column, and every column count lies in [lo, hi];
//   - U[i]+V[j] <= c[i][j]+tol for all i, j (dual feasibility);
//   - |U[i]+V[j]-c[i][j]| <= tol on the assignment (complementary slackness);
//   - when lo < hi, max{V[j] : count_j = hi} <= min{V[k] : count_k = lo}+tol:
//     a column with a spare unit is never dearer than one without
//     (for Rectangular: free columns carry the largest potential);
//   - |Cost - Σ c[i][Col4Row[i]]| <= tol·nr.
//
// Together these imply that no assignment meeting the column bounds costs
// less than s.Cost − 2·tol·nr. Entries of c may be +Inf (forbidden): dual
// feasibility holds there trivially, and an assigned one is never tight. Certify returns nil or an error describing
// the first violation. The time complexity of Certify is O(nr·nc), in one
// pass over c split over the cores.
func Certify(c []float64, nr, nc int, s *Solution, tol float64) error {
	if err := checkShape(c, nr, nc); err != nil {
		return err
	}
	// The checks below that do not read c report an invalid entry of c
	// first, as a check of c before them would.
	fail := func(err error) error {
		if e := checkForbidding(c, nr, nc); e != nil {
			return e
		}
		return err
	}
	if s == nil || len(s.Col4Row) != nr || len(s.U) != nr || len(s.V) != nc {
		return fail(fmt.Errorf("assign: solution does not fit a %d×%d problem: need len(Col4Row) = len(U) = %d and len(V) = %d", nr, nc, nr, nc))
	}
	if !(tol >= 0) {
		return fail(fmt.Errorf("assign: tol = %v: need a non-negative tolerance", tol))
	}
	lo, hi := bounds(nr, nc)
	count := make([]int, nc)
	for i, j := range s.Col4Row {
		if j < 0 || j >= nc {
			return fail(fmt.Errorf("assign: row %d is assigned to column %d, outside [0, %d)", i, j, nc))
		}
		count[j]++
	}
	for j, k := range count {
		if k < lo || k > hi {
			return fail(fmt.Errorf("assign: column %d is used %d times, need between %d and %d", j, k, lo, hi))
		}
	}
	for _, x := range s.U {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fail(fmt.Errorf("assign: row potential %v is not finite", x))
		}
	}
	for _, x := range s.V {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fail(fmt.Errorf("assign: column potential %v is not finite", x))
		}
	}
	// One pass over c on all cores finds the first row with a NaN or −Inf
	// entry, an infeasible entry or a loose assigned one; only then are
	// the entries checked on their own, so that a bad entry is reported
	// before an infeasibility, wherever it lies. The pass's one test,
	// !(U+V <= c+tol), fails at a NaN (c+tol is NaN), and at −Inf (c+tol
	// is −Inf, or NaN when tol = +Inf) unless U+V is −Inf too: only when
	// the potentials' sums can overflow to −Inf is c checked first.
	if minOf(s.U)+minOf(s.V) == -inf {
		if err := checkForbidding(c, nr, nc); err != nil {
			return err
		}
	}
	v := s.V
	i := firstFailing(nr, nc, func(i0, i1 int) int {
		for i := i0; i < i1; i++ {
			row, ui := c[i*nc:i*nc+nc], s.U[i]
			v := v[:len(row)]
			for j, x := range row {
				if !(ui+v[j] <= x+tol) {
					return i
				}
			}
			j := s.Col4Row[i]
			if math.Abs(ui+v[j]-row[j]) > tol {
				return i
			}
		}
		return -1
	})
	if i >= 0 {
		if err := checkForbidding(c, nr, nc); err != nil {
			return err
		}
		row, ui := c[i*nc:i*nc+nc], s.U[i]
		for j, x := range row {
			if ui+s.V[j] > x+tol {
				return fmt.Errorf("assign: dual infeasible at (%d, %d): U+V = %v > c = %v", i, j, ui+s.V[j], x)
			}
		}
		j := s.Col4Row[i]
		return fmt.Errorf("assign: assigned entry (%d, %d) is not tight: U+V-c = %v", i, j, ui+s.V[j]-row[j])
	}
	sum := 0.0
	for i, j := range s.Col4Row {
		sum += c[i*nc+j]
	}
	if lo < hi {
		vmaxHi, vminLo := -inf, inf
		for j, k := range count {
			if k == hi {
				vmaxHi = math.Max(vmaxHi, s.V[j])
			} else {
				vminLo = math.Min(vminLo, s.V[j])
			}
		}
		if vmaxHi > vminLo+tol {
			return fmt.Errorf("assign: a column used %d times has potential %v above %v of a column used %d times: moving a row would lower the cost", hi, vmaxHi, vminLo, lo)
		}
	}
	if math.Abs(sum-s.Cost) > tol*float64(nr) {
		return fmt.Errorf("assign: Cost = %v but the assigned entries sum to %v", s.Cost, sum)
	}
	return nil
}

// minOf returns the least of the finite values x (+Inf when x is empty).
func minOf(x []float64) float64 {
	m := inf
	for _, a := range x {
		m = min(m, a)
	}
	return m
}
