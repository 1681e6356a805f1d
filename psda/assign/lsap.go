package assign

import (
	"errors"
	"fmt"
	"math"

	"github.com/psda-dev/psda/psda/internal/par"
	"github.com/psda-dev/psda/psda/internal/scan"
)

// Solution is an assignment with the dual potentials that certify it.
//
// For an nr×nc problem, Col4Row[i] is the column of row i, U[i] the potential
// of row i and V[j] the potential of column j. The potentials satisfy
// U[i]+V[j] <= c[i][j] for every entry with equality on the assignment, and
// the column condition of Certify; Cost is the sum of the assigned costs.
type Solution struct {
	Col4Row []int     // column assigned to each row
	U, V    []float64 // row and column potentials
	Cost    float64   // sum of the assigned costs
}

var inf = math.Inf(1)

// ErrInfeasible is returned, wrapped or as is, when forbidden (+Inf) entries
// leave no assignment of every row to a distinct column; test for it with
// errors.Is. Its message contains SciPy's "cost matrix is infeasible".
var ErrInfeasible = errors.New("assign: cost matrix is infeasible: the +Inf (forbidden) entries leave no assignment of every row to a distinct column")

// checkMatrix validates a row-major nr×nc cost matrix: non-empty, the right
// length, all entries finite. The pass is split over the cores
// (firstFailing) and names the first bad entry in row-major order.
func checkMatrix(c []float64, nr, nc int) error {
	if err := checkShape(c, nr, nc); err != nil {
		return err
	}
	i := firstFailing(nr, nc, func(i0, i1 int) int {
		for i := i0; i < i1; i++ {
			for _, x := range c[i*nc : i*nc+nc] {
				if x-x != 0 { // NaN or ±Inf: one test instead of two, on n² entries
					return i
				}
			}
		}
		return -1
	})
	if i < 0 {
		return nil
	}
	for j, x := range c[i*nc : i*nc+nc] {
		if x-x != 0 {
			return fmt.Errorf("assign: c[%d][%d] = %v: costs must be finite (forbid an entry with a large finite cost instead)", i, j, x)
		}
	}
	panic("unreachable")
}

// checkShape validates the shape of a row-major nr×nc cost matrix.
func checkShape(c []float64, nr, nc int) error {
	if nr < 1 || nc < 1 {
		return fmt.Errorf("assign: cost matrix is %d×%d: both dimensions must be at least 1", nr, nc)
	}
	if len(c) != nr*nc {
		return fmt.Errorf("assign: len(c) = %d but nr×nc = %d×%d = %d: pass the row-major nr×nc matrix", len(c), nr, nc, nr*nc)
	}
	return nil
}

// checkForbidding validates a row-major nr×nc cost matrix whose entries may
// be +Inf (forbidden) but not NaN or −Inf, on all cores, naming the first
// bad entry in row-major order.
func checkForbidding(c []float64, nr, nc int) error {
	if err := checkShape(c, nr, nc); err != nil {
		return err
	}
	if i := firstFailing(nr, nc, func(i0, i1 int) int { return badForbidding(c, i0, i1, nc) }); i >= 0 {
		for j, x := range c[i*nc : i*nc+nc] {
			if x-x != 0 && x != inf {
				return fmt.Errorf("assign: c[%d][%d] = %v: costs must be finite or +Inf (forbidden)", i, j, x)
			}
		}
	}
	return nil
}

// badForbidding returns the first of the rows [i0, i1) of the row-major
// matrix c (rows of nc entries) that holds a NaN or −Inf, or −1.
func badForbidding(c []float64, i0, i1, nc int) int {
	for i := i0; i < i1; i++ {
		for _, x := range c[i*nc : i*nc+nc] {
			if x-x != 0 && x != inf { // NaN or ±Inf, then not +Inf: one test on most entries
				return i
			}
		}
	}
	return -1
}

// Rectangular solves the rectangular linear assignment problem: it returns
// the assignment of every row of the row-major nr×nc cost matrix c to a
// distinct column that minimises the total cost, with dual potentials that
// Certify accepts. Columns left free keep V[j] = 0, the maximum of V.
//
// Rectangular requires 1 <= nr <= nc and len(c) == nr*nc; an entry is a
// finite cost or +Inf, which forbids the pair (as in SciPy). It returns
// ErrInfeasible when the forbidden entries leave no complete assignment, and
// another error for NaN or −Inf entries and bad shapes. Problems are solved
// by shortest augmenting paths (Crouse 2016) on the nr×nc matrix, never
// padded to square; square problems whose paths grow long (see solveLSAP)
// restart from a warm start (warm.go, auction.go).
//
// The time complexity of Rectangular is O(nr²·nc) in the worst case; its
// memory is O(nr+nc) besides c.
func Rectangular(c []float64, nr, nc int) (*Solution, error) {
	return RectangularWith(c, nr, nc, nil)
}

// RectangularWith is Rectangular with hooks that report progress and can
// stop the solve; it returns Stop's error when Stop asks it to.
func RectangularWith(c []float64, nr, nc int, h *Hooks) (*Solution, error) {
	if err := checkForbidding(c, nr, nc); err != nil {
		return nil, err
	}
	if nr > nc {
		return nil, fmt.Errorf("assign: Rectangular needs nr <= nc, got %d rows and %d columns: transpose the matrix or use Imbalanced to spread rows over columns", nr, nc)
	}
	s, err := solveLSAP(c, nr, nc, h)
	if err != nil {
		return nil, err
	}
	return s.solution(), nil
}

// solveLSAP runs the exact solver on a matrix whose entries are finite or
// +Inf (forbidden). It first augments every row cold, in order, as SciPy
// does, while the paths stay short: on tie-heavy costs such as small
// integers nearly every row finds a free column at its first scan, and that
// is the whole solve. On continuous costs the first rows already need
// longer paths (a row's cheapest column is taken with probability about
// i/n), and the last tenth of the rows settles ten times more columns than
// the rest, where a warm start settles far fewer. So a square problem
// leaves the cold phase when, after its first max(n/16, coldProbe) rows and
// before half of them, its paths have settled more than 1/64 columns per
// row beyond the one each must (or, before those rows, more beyond it than
// the probe allows, which the probe would then refuse), or when they have
// settled more than coldScans·n columns in all; it restarts from a warm start (warmStart,
// else warmAuction), and every free row is then augmented. Progress: the
// cold phase reports the first tenth, the auctions up to three quarters,
// the augmentations the rest.
func solveLSAP(c []float64, nr, nc int, h *Hooks) (*lsap, error) {
	return newLSAP(c, nr, nc).solve(h)
}

// solve is solveLSAP on the state s, fresh from newLSAP.
func (s *lsap) solve(h *Hooks) (*lsap, error) {
	nr, nc := s.nr, s.nc
	free := func(i int) bool { return s.col4row[i] < 0 }
	if nr != nc {
		return s, augmentFree(nr, free, s.augment, h)
	}
	budget, probe, rows, cold := coldScans*nr, max(nr/16, coldProbe), 0, true
	err := augmentFree(nr, free, func(i int) bool {
		// Every path settles at least its sink, so settled−rows never
		// falls: once it exceeds the allowance at the probe, the test
		// there is bound to fail, and it is applied at once (paths long
		// from the first rows, as on Stage 2 costs of real features,
		// spent the whole budget before the probe).
		if rows++; 2*max(rows, probe+1) <= nr && s.settled-rows > max(rows, probe+1)/64 {
			cold = false
		}
		if !cold || s.settled > budget {
			cold = false
			return true
		}
		s.coldRows++
		return s.augment(i)
	}, h.sub(0, 0.1))
	if err != nil {
		return nil, err // infeasible or stopped
	}
	s.coldSettled = s.settled
	if cold {
		h.progress(1)
		return s, nil
	}
	s.reset()
	warm, err := s.warmStart(h.stopOnly())
	if err != nil {
		return nil, err
	}
	if !warm {
		if err := s.warmAuction(h); err != nil {
			return nil, err
		}
	}
	return s, augmentFree(nr, free, s.augment, h.sub(0.75, 1))
}

// warmAuction is solveLSAP's warm start by auctions: auctionInit, paths up
// to plateauScans·n settled columns, then auctionDeep if they ran over. It
// first checks that the forbidden entries leave a perfect matching: an
// auction on an infeasible problem bids until its budget runs out. An
// auction over its bid budget leaves s cold for the paths that follow.
func (s *lsap) warmAuction(h *Hooks) error {
	// The matching's relaxation (sym) forbids only the diagonal, its other
	// entries checked finite: the cyclic permutation is perfect.
	if !s.sym && hasForbidden(s.c, s.nr, s.nc) && !hasPerfectMatching(s.c, s.nr) {
		return ErrInfeasible
	}
	err := s.auctionInit(h.sub(0.1, 0.5))
	if errors.Is(err, errAuctionBudget) {
		return nil
	}
	if err != nil {
		return err
	}
	// Augment until the paths have settled plateauScans·n columns in all
	// (each settled column costs a scan of its row); beyond that the matrix
	// is tie-heavy: each further path crosses a plateau of tied columns,
	// while auctionDeep places the rows left by bids that need no path.
	budget := plateauScans * s.nr
	s.settled = 0
	free := func(i int) bool { return s.col4row[i] < 0 }
	if err := augmentFree(s.nr, free, func(i int) bool { return s.settled > budget || s.augment(i) }, h.sub(0.5, 0.75)); err != nil {
		return err
	}
	if s.settled > budget {
		if err := s.auctionDeep(h.sub(0.75, 0.75)); err != nil && !errors.Is(err, errAuctionBudget) {
			return err
		}
	}
	return nil
}

// coldScans bounds the settled columns, per row, of solveLSAP's cold phase
// before it restarts from a warm start; coldProbe is the least number of rows
// after which it checks that the paths are still nearly all one column long.
// Columns settled beyond one per row, after n/16, n/8, n/4, n/2 and n rows
// (n = 2000): Gaussian costs 4, 21, 79, 460, 34124; uniform integers 0–9
// 0, 0, 0, 0, 88; 0–99 0, 0, 0, 0, 3565 (n = 1000: 4282); 0–999 1, 6, 32,
// 148, 38520. On the relaxations of psda's Stage 2 on real features (n =
// 5,000) the paths settle about 120 columns a row from the first row on:
// checked only at the probe's row, the cold phase settled 35,000–40,000
// columns in its first 313 rows, a third of the relaxation, and threw them
// away (BenchmarkRefreshWarm, BenchmarkRealStage2; docs/performance.md,
// "What a refresh costs on real features"). Since the extra columns never
// fall, solve applies the probe's test as soon as it is bound to fail (after
// 5 rows there, 43 on CORAL's), with the same decision on every matrix.
var coldScans, coldProbe = 8, 32

// plateauScans bounds the settled columns, per row, of solveLSAP's exact
// phase after the auction before it switches to auctionDeep: psda's 2-D
// Gaussian costs settle about 2 per row, tie-heavy ReLU ones about 600
// (BenchmarkSolve, n = 4000).
var plateauScans = 25

// augmentFree augments every person p in [0, n) for which free(p) holds, in
// order, polling h between paths; augment reports infeasibility with false.
func augmentFree(n int, free func(p int) bool, augment func(p int) bool, h *Hooks) error {
	todo := 0
	for p := 0; p < n; p++ {
		if free(p) {
			todo++
		}
	}
	done := 0
	for p := 0; p < n; p++ {
		if !free(p) {
			continue
		}
		if err := h.stop(); err != nil {
			return err
		}
		if !augment(p) {
			return ErrInfeasible
		}
		done++
		if done&63 == 0 {
			h.progress(float64(done) / float64(todo))
		}
	}
	h.progress(1)
	return nil
}

// lsap is the state of the shortest augmenting path solver. Names follow
// Crouse, "On implementing 2D rectangular assignment algorithms", IEEE TAES
// 52(4), 2016, Algorithm 4, as SciPy's rectangular_lsap.cpp does.
type lsap struct {
	c       []float64
	nr, nc  int
	u, v    []float64
	col4row []int
	row4col []int

	settled int // columns settled by augment so far (solveLSAP's budget)
	// sym: c is the matching's relaxation, symmetric up to rounding with
	// only its diagonal forbidden, which the warm start's candidates use
	// (denseCandidates) and warmAuction's feasibility check need not test.
	sym bool
	// colMin holds the minimum of each column's entries off the diagonal
	// when the input check already found them (rowPass, for
	// MinWeightPerfectMatchingMirrored), else nil: denseCandidates then
	// reads c for them.
	colMin []float64
	// seed is the solution of a warm start's sparse problem that gave up
	// (warmStart), nil if none: auctionInit starts from its prices.
	seed  *Solution
	bids  int // bids made by auctions so far (tests and benchmarks)
	scans int // full row scans of the auctions' bids so far (benchmarks)
	// coldRows and coldSettled are the rows augmented and the columns
	// settled by solveLSAP's cold phase (tests and benchmarks).
	coldRows, coldSettled int
	// tightFused: warmStart took its row minima from the pricing pass
	// (denseModel.minimaUnder; tests).
	tightFused bool
	// startY and startLows: the blossom start's duals that the pricing
	// pass predicted and the rows to rescan under them (denseModel), nil
	// if none; minWeightPerfectMatching takes them if its y is startY.
	startY    []float64
	startLows []bool

	// scratch of augment
	spc      []float64 // shortestPathCosts
	path     []int
	sr, sc   []int     // rows and columns settled in the current search
	scD, scV []float64 // distance and potential of each settled column
}

func newLSAP(c []float64, nr, nc int) *lsap {
	s := &lsap{
		c: c, nr: nr, nc: nc,
		u: make([]float64, nr), v: make([]float64, nc),
		col4row: make([]int, nr), row4col: make([]int, nc),
		spc: make([]float64, nc), path: make([]int, nc),
	}
	for i := range s.col4row {
		s.col4row[i] = -1
	}
	for j := range s.row4col {
		s.row4col[j] = -1
	}
	return s
}

// augment finds a shortest augmenting path from the free row cur in the
// reduced costs c[i][j]-u[i]-v[j] (non-negative on every row already
// assigned), updates the potentials so that they stay feasible and tight on
// the assignment, and flips the path. It returns false when only forbidden
// entries remain.
//
// Unlike SciPy, which keeps the unsettled columns in a shrinking index list,
// every scan runs over all nc columns in order: a settled column has its
// potential parked at −Inf (so its reduced cost is +Inf and it is neither
// relaxed nor chosen) and its distance set to +Inf. The scans then read c, v
// and the distances sequentially, which on the PSDA costs (tens to hundreds
// of settled rows per path) beats the gathers through the index list,
// although settled columns are still visited (BenchmarkSolve).
func (s *lsap) augment(cur int) bool {
	nc := s.nc
	d, path, v, row4col := s.spc, s.path, s.v, s.row4col
	for j := range d {
		d[j] = inf
	}
	s.sr, s.sc, s.scD, s.scV = s.sr[:0], s.sc[:0], s.scD[:0], s.scV[:0]
	minVal := 0.0
	i, sink := cur, -1
	for sink < 0 {
		s.sr = append(s.sr, i)
		row := s.c[i*nc : i*nc+nc]
		base := minVal - s.u[i]
		index, lowest := -1, inf
		v := v[:len(row)]
		d := d[:len(row)]
		path := path[:len(row)]
		for j, x := range row {
			r, dj := base+x-v[j], d[j]
			if r < dj {
				d[j], path[j], dj = r, i, r
			}
			// Prefer a free column on ties: the search ends sooner.
			if dj < lowest {
				lowest, index = dj, j
			} else if dj == lowest && dj < inf && row4col[j] < 0 && row4col[index] >= 0 {
				index = j
			}
		}
		if lowest == inf {
			for k, j := range s.sc {
				v[j] = s.scV[k]
			}
			return false
		}
		minVal = lowest
		j := index
		if row4col[j] < 0 {
			sink = j
		} else {
			i = row4col[j]
		}
		s.sc, s.scD, s.scV = append(s.sc, j), append(s.scD, lowest), append(s.scV, v[j])
		s.settled++
		v[j], d[j] = -inf, inf // settled: out of every later scan
	}
	for k, j := range s.sc {
		v[j] = s.scV[k] - (minVal - s.scD[k]) // Crouse's update
	}
	s.u[cur] += minVal
	for k, i := range s.sr[1:] {
		s.u[i] += minVal - s.scD[k] // row sr[k+1] was reached through sc[k]
	}
	for j := sink; ; {
		i := path[j]
		row4col[j] = i
		j, s.col4row[i] = s.col4row[i], j
		if i == cur {
			break
		}
	}
	return true
}

// tighten sets u[i] = min_j c[i][j]-v[j], which makes the potentials
// feasible, and frees every row whose assigned entry is not exactly tight.
func (s *lsap) tighten() { s.tightenWithin(0) }

// tightenWithin is tighten that keeps an assigned entry whose reduced cost
// is at most rel·(|c[i][j]| + |v[j]|), setting u[i] to make it tight: a warm
// start from potentials computed elsewhere (warmStart) is tight only up to
// rounding, and every freed row costs a dense augmenting path. The other
// entries of a kept row may then be negative by that much, well inside the
// certificate's tolerance. Rows are split over the cores.
func (s *lsap) tightenWithin(rel float64) {
	nc := s.nc
	par.Parts(s.nr, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			s.tightenRow(i, minDiff(s.c[i*nc:i*nc+nc], s.v), rel)
		}
	})
}

// tightenFrom is tightenWithin with each row's minimum m[i] = min_j
// c[i][j] − v[j] found already (minDiff under the current v, by the warm
// start's pricing pass).
func (s *lsap) tightenFrom(m []float64, rel float64) {
	par.Parts(s.nr, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			s.tightenRow(i, m[i], rel)
		}
	})
}

// tightenRow is tightenWithin's step for row i, whose minimum
// min_j c[i][j] − v[j] is m.
func (s *lsap) tightenRow(i int, m, rel float64) {
	s.u[i] = m
	j := s.col4row[i]
	if j < 0 {
		return
	}
	if x := s.c[i*s.nc+j]; x-s.v[j]-m <= rel*(math.Abs(x)+math.Abs(s.v[j])) {
		s.u[i] = x - s.v[j]
	} else {
		s.col4row[i], s.row4col[j] = -1, -1 // j is i's alone: no race
	}
}

// minDiff returns min_j row[j] − v[j] (+Inf for an empty row; NaNs never
// count), the entries scanned in order as the plain loop would.
func minDiff(row, v []float64) float64 {
	m := inf
	for j := 0; j < len(row); j++ {
		// The scan skips the entries with row[j] − v[j] >= m.
		if j += scan.DiffBelow(row[j:], v[j:], 0, m); j == len(row) {
			break
		}
		if h := row[j] - v[j]; h < m {
			m = h
		}
	}
	return m
}

// solution copies the state into a Solution.
func (s *lsap) solution() *Solution {
	sol := &Solution{Col4Row: s.col4row, U: s.u, V: s.v}
	for i, j := range s.col4row {
		sol.Cost += s.c[i*s.nc+j]
	}
	return sol
}
