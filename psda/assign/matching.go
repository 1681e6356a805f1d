package assign

import (
	"fmt"
	"math"

	"github.com/psda-dev/psda/psda/internal/par"
)

// PerfectMatching is a minimum-weight perfect matching of a complete graph
// with the dual solution that proves it optimal.
type PerfectMatching struct {
	// Mate[r] is the partner of vertex r.
	Mate []int
	// Cost is the sum of c over the matched edges, each edge counted once.
	Cost float64
	// Bound is the dual objective of Duals, a lower bound on the minimum
	// cost of a perfect matching; it equals Cost up to rounding.
	Bound float64
	// Duals are vertex and blossom duals, feasible for every edge and tight
	// on the matched ones (CertifyMatching checks them).
	Duals MatchingDuals
	// OddVertices is the number of vertices on odd cycles of the symmetric
	// assignment relaxation's optimal permutation, which the blossom
	// algorithm had to augment; 0 means the relaxation alone was optimal.
	OddVertices int
}

// MinWeightPerfectMatching returns a minimum-weight perfect matching of the
// complete graph on n vertices with symmetric row-major edge costs c (the
// diagonal is ignored), with vertex and blossom duals that prove it optimal.
//
// It follows docs/method.md, "Stage 2": the symmetric assignment with a
// forbidden diagonal is solved exactly; its optimal permutation's 2-cycles
// and even cycles' halves are tight pairs under the halved potentials
// y_r = (u_r + v_r)/2, which are dual feasible for the matching LP. The
// weighted blossom algorithm (BlossomDense) starts from these duals and
// pairs and augments the vertices of the odd cycles; without odd cycles it
// only exports the duals. Bound is the dual objective (capped at Cost, which
// it equals up to rounding).
//
// MinWeightPerfectMatching returns an error if n < 2, n is odd,
// len(c) != n*n, an off-diagonal cost is not finite, or c is not symmetric
// within 1e-9 of its largest magnitude. The time complexity is that of the
// n×n assignment, O(n³) in the worst case, plus O(n²·(k + t)) for the
// blossom algorithm with k odd-cycle vertices and t dual changes.
func MinWeightPerfectMatching(c []float64, n int) (*PerfectMatching, error) {
	return MinWeightPerfectMatchingWith(c, n, nil)
}

// MinWeightPerfectMatchingWith is MinWeightPerfectMatching with hooks that
// report progress and can stop the solve; it returns Stop's error when Stop
// asks it to. The relaxation works on c itself with its diagonal set to +Inf
// for the duration of the call (restored before returning), so that no
// second n×n matrix is needed: c must not be read or written concurrently.
func MinWeightPerfectMatchingWith(c []float64, n int, h *Hooks) (*PerfectMatching, error) {
	scale, err := checkMatching(c, n)
	if err != nil {
		return nil, err
	}
	return minWeightPerfectMatching(c, n, h, scale, nil)
}

// minWeightPerfectMatching is MinWeightPerfectMatchingWith on a checked c
// of largest off-diagonal |entry| scale, with the minima of its columns'
// off-diagonal entries when the check found them (else nil: the
// relaxation's warm start reads c for them).
func minWeightPerfectMatching(c []float64, n int, h *Hooks, scale float64, colMin []float64) (*PerfectMatching, error) {
	var err error
	if err := h.stop(); err != nil { // the checks read all of c: look again
		return nil, err
	}
	diag := make([]float64, n)
	for i := range diag {
		diag[i], c[i*n+i] = c[i*n+i], inf
	}
	s := newLSAP(c, n, n)
	s.sym, s.colMin = true, colMin
	s, err = s.solve(h.sub(0, 0.9))
	for i, x := range diag {
		c[i*n+i] = x
	}
	if err != nil {
		return nil, err
	}
	start := RelaxationStart(s.col4row, s.u, s.v, denseCost(c, n))
	pm := &PerfectMatching{OddVertices: oddCycleVertices(s.col4row)}
	// The rows the repair must rescan, found by the warm start's pricing
	// pass under the y it predicted, when that is this y (denseModel).
	var lows []bool
	if s.startLows != nil && sameBits(start.Y, s.startY) {
		lows = s.startLows
	}
	b := newBlossomLows(n, c, nil, start.Y, start.Mate, scale, lows)
	em, err := b.finish(h.sub(0.9, 1))
	if err != nil {
		return nil, err
	}
	// The dual objective equals the cost up to rounding (CertifyMatching);
	// a lower bound above the cost would only be rounding, so it is capped.
	pm.Mate, pm.Cost, pm.Bound, pm.Duals = em.Mate, em.Cost, math.Min(em.Bound, em.Cost), em.Duals
	return pm, nil
}

// sameBits reports whether a and b hold the same float64s, bit for bit.
func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i, x := range a {
		if math.Float64bits(x) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// checkMatching validates the input of MinWeightPerfectMatching and returns
// the largest off-diagonal |c|. One pass over c (symmetryPass), split over
// the cores, finds that scale and the largest asymmetry; only when one
// fails is c swept again to name the entry or pair the serial checks
// would have met first.
func checkMatching(c []float64, n int) (scale float64, err error) {
	if err := checkMatchingShape(c, n); err != nil {
		return 0, err
	}
	scale, asym := symmetryPass(c, n)
	if scale == inf {
		return 0, nonFinite(c, n)
	}
	if asym > 1e-9*scale {
		return scale, checkSymmetric(c, n, 1e-9*scale)
	}
	return scale, nil
}

// nonFinite returns an error naming the first off-diagonal entry of the
// n×n matrix c, in row order, that is NaN or ±Inf (nil when there is none):
// the checks' second sweep, once their pass found one.
func nonFinite(c []float64, n int) error {
	for i := 0; i < n; i++ {
		for j, x := range c[i*n : i*n+n] {
			// x-x is NaN exactly for NaN and ±Inf: one test instead of two.
			if x-x != 0 && i != j {
				return fmt.Errorf("assign: c[%d][%d] = %v: costs must be finite", i, j, x)
			}
		}
	}
	return nil
}

// checkMatchingShape validates n and the length of c, the input checks'
// first step.
func checkMatchingShape(c []float64, n int) error {
	if n < 2 || n%2 != 0 {
		return fmt.Errorf("assign: n = %d vertices: a perfect matching needs an even n >= 2 (add a dummy vertex to make n even)", n)
	}
	if len(c) != n*n {
		return fmt.Errorf("assign: len(c) = %d but n×n = %d×%d = %d: pass the row-major n×n matrix", len(c), n, n, n*n)
	}
	return nil
}

// symmetryBlock is the side of the blocks in which symmetryPass and
// checkSymmetric visit c: the transposed reads of a block stay in cache (a
// row-by-column sweep of a large matrix misses the cache on every read).
const symmetryBlock = 64

// symmetryPass returns the largest off-diagonal |c[i][j]| (+Inf if one is
// NaN or ±Inf) and the largest |c[i][j] − c[j][i]| of the n×n matrix c,
// in one pass: strips of symmetryBlock rows on all cores, each reading its
// blocks on and right of the diagonal and their transposes, so every entry
// once.
func symmetryPass(c []float64, n int) (scale, asym float64) {
	const b = symmetryBlock
	strips := (n + b - 1) / b
	out := make([][2]float64, strips)
	par.For(strips, func() func(int) {
		return func(s int) {
			i0, m, a := s*b, 0.0, 0.0
			for j0 := i0; j0 < n; j0 += b {
				for i := i0; i < min(n, i0+b); i++ {
					for j := max(j0, i+1); j < min(n, j0+b); j++ {
						x, y := c[i*n+j], c[j*n+i]
						if x-x != 0 || y-y != 0 {
							m = inf
							continue
						}
						if ax := math.Abs(x); ax > m {
							m = ax
						}
						if ay := math.Abs(y); ay > m {
							m = ay
						}
						if d := math.Abs(x - y); d > a {
							a = d
						}
					}
				}
			}
			out[s] = [2]float64{m, a}
		}
	})
	for _, o := range out {
		scale, asym = max(scale, o[0]), max(asym, o[1])
	}
	return scale, asym
}

// checkSymmetric returns an error naming the first pair (i, j) with
// |c[i][j] − c[j][i]| > tol, in the order of a serial sweep of c's
// symmetryBlock strips and blocks: the strips are swept on all cores and
// the first with a violation names it.
func checkSymmetric(c []float64, n int, tol float64) error {
	const b = symmetryBlock
	strips := (n + b - 1) / b
	bad := func(i0 int) (int, int) {
		for j0 := i0; j0 < n; j0 += b {
			for i := i0; i < min(n, i0+b); i++ {
				for j := max(j0, i+1); j < min(n, j0+b); j++ {
					if math.Abs(c[i*n+j]-c[j*n+i]) > tol {
						return i, j
					}
				}
			}
		}
		return -1, -1
	}
	// One strip at a time: their work falls from n to b columns.
	k := firstFailingBy(strips, 1, func(s0, s1 int) int {
		for s := s0; s < s1; s++ {
			if i, _ := bad(s * b); i >= 0 {
				return s
			}
		}
		return -1
	})
	if k < 0 {
		return nil
	}
	i, j := bad(k * b)
	return fmt.Errorf("assign: c[%d][%d] = %v but c[%d][%d] = %v: the matching cost must be symmetric", i, j, c[i*n+j], j, i, c[j*n+i])
}

// denseCost returns the cost oracle reading the row-major n×n matrix c.
func denseCost(c []float64, n int) func(r, q int) float64 {
	return func(r, q int) float64 { return c[r*n+q] }
}

// RelaxationStart turns an optimal permutation sigma of the symmetric
// assignment relaxation (sigma[r] != r) and its potentials (u, v) into a
// start for the blossom algorithm (docs/method.md, "Stage 2"): y_r = (u_r + v_r)/2 is
// dual feasible, since y_r + y_q = ((u_r + v_q) + (u_q + v_r))/2 <= c_rq;
// a 2-cycle's edge is tight under y (both orientations are), and so is
// every edge of an even cycle's halves: each half, read as 2-cycles, is an
// optimal permutation too (the halves cost the same, or the cheaper one
// doubled would beat sigma), so its edges are tight under every optimal
// (u, v). The odd cycles' vertices are left exposed. cost(r, q) is called
// once per vertex of an even cycle longer than 2 (to keep its cheaper half,
// a choice that only matters up to rounding). The time complexity is O(n)
// plus those calls.
func RelaxationStart(sigma []int, u, v []float64, cost func(r, q int) float64) *BlossomStart {
	n := len(sigma)
	st := &BlossomStart{Y: make([]float64, n), Mate: make([]int, n)}
	for r := range st.Y {
		st.Y[r] = (u[r] + v[r]) / 2
		st.Mate[r] = -1
	}
	seen := make([]bool, n)
	cycle := make([]int, 0, n)
	for s := range sigma {
		if seen[s] {
			continue
		}
		cycle = cycle[:0]
		for r := s; !seen[r]; r = sigma[r] {
			seen[r] = true
			cycle = append(cycle, r)
		}
		if len(cycle)%2 == 1 {
			// An odd cycle's edges are tight too (its reverse is an
			// optimal permutation as well): pair the path left after its
			// first vertex, which stays exposed.
			for k := 1; k+1 < len(cycle); k += 2 {
				x, y := cycle[k], cycle[k+1]
				st.Mate[x], st.Mate[y] = y, x
			}
			continue
		}
		off := 0
		if len(cycle) > 2 {
			a, b := 0.0, 0.0
			for k := 0; k < len(cycle); k += 2 {
				a += cost(cycle[k], cycle[k+1])
				b += cost(cycle[k+1], cycle[(k+2)%len(cycle)])
			}
			if b < a {
				off = 1
			}
		}
		for k := off; k < len(cycle)+off; k += 2 {
			x, y := cycle[k], cycle[(k+1)%len(cycle)]
			st.Mate[x], st.Mate[y] = y, x
		}
	}
	return st
}

// oddCycleVertices returns the number of vertices on odd cycles of the
// permutation sigma.
func oddCycleVertices(sigma []int) int {
	seen := make([]bool, len(sigma))
	odd := 0
	for r := range sigma {
		if seen[r] {
			continue
		}
		l := 0
		for q := r; !seen[q]; q = sigma[q] {
			seen[q] = true
			l++
		}
		if l%2 == 1 {
			odd += l
		}
	}
	return odd
}
