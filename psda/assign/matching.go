package assign

import (
	"fmt"
	"math"
	"math/bits"
)

// PerfectMatching is a perfect matching of a complete graph with a lower
// bound on the optimum.
type PerfectMatching struct {
	// Mate[r] is the partner of vertex r.
	Mate []int
	// Cost is the sum of c over the matched edges, each edge counted once.
	Cost float64
	// Bound is a lower bound on the minimum cost of a perfect matching: half
	// the optimum of the symmetric assignment relaxation. Cost == Bound
	// certifies optimality.
	Bound float64
	// OddVertices is the number of vertices on odd cycles of the relaxation's
	// optimal permutation; 0 means the matching is provably optimal.
	OddVertices int
}

// maxDP is the largest vertex set matched exactly by the bitmask dynamic
// programme (O(2^m·m) time, O(2^m) memory); a variable so that tests can
// exercise the recursive repair.
var maxDP = 20

// MinWeightPerfectMatching returns a minimum-weight perfect matching of the
// complete graph on n vertices with symmetric row-major edge costs c (the
// diagonal is ignored), together with a lower bound on the optimum.
//
// It follows METHOD.md, "Stage 2": the symmetric assignment with a forbidden
// diagonal is solved exactly; its optimum L* gives Bound = L*/2 <= OPT
// (every perfect matching, read as a permutation of 2-cycles, costs twice its
// weight). 2-cycles of the optimal permutation are matched pairs; from each
// even cycle the cheaper alternating half is kept. If no odd cycle remains
// the cost is at most L*/2, hence optimal, and Bound is set to Cost so the gap
// is exactly 0 despite rounding. Odd cycles (they come in pairs) are
// repaired: when they hold at most 20 vertices these are matched among
// themselves exactly by dynamic programming; otherwise each odd cycle keeps
// its cheapest alternating path and the left-over vertices, one per cycle,
// are matched recursively. A 2-opt pass (exchange partners of two pairs when
// that lowers the cost) then polishes the pairs touching repaired vertices.
// In the odd case the result may exceed the optimum; Cost−Bound bounds the
// excess.
//
// MinWeightPerfectMatching returns an error if n < 2, n is odd,
// len(c) != n*n, an off-diagonal cost is not finite, or c is not symmetric
// within 1e-9 of its largest magnitude. The time complexity is that of the
// n×n assignment, O(n³) in the worst case, plus O(2^20·20) for the repair.
func MinWeightPerfectMatching(c []float64, n int) (*PerfectMatching, error) {
	return MinWeightPerfectMatchingWith(c, n, nil)
}

// MinWeightPerfectMatchingWith is MinWeightPerfectMatching with hooks that
// report progress and can stop the solve; it returns Stop's error when Stop
// asks it to. The relaxation works on c itself with its diagonal set to +Inf
// for the duration of the call (restored before returning), so that no
// second n×n matrix is needed: c must not be read or written concurrently.
func MinWeightPerfectMatchingWith(c []float64, n int, h *Hooks) (*PerfectMatching, error) {
	if n < 2 || n%2 != 0 {
		return nil, fmt.Errorf("assign: n = %d vertices: a perfect matching needs an even n >= 2 (add a dummy vertex to make n even)", n)
	}
	if len(c) != n*n {
		return nil, fmt.Errorf("assign: len(c) = %d but n×n = %d×%d = %d: pass the row-major n×n matrix", len(c), n, n, n*n)
	}
	scale := 0.0
	for i := 0; i < n; i++ {
		for j, x := range c[i*n : i*n+n] {
			// x-x is NaN exactly for NaN and ±Inf: one test instead of two.
			if x-x != 0 && i != j {
				return nil, fmt.Errorf("assign: c[%d][%d] = %v: costs must be finite", i, j, x)
			}
			if a := math.Abs(x); a > scale && i != j {
				scale = a
			}
		}
	}
	if err := checkSymmetric(c, n, 1e-9*scale); err != nil {
		return nil, err
	}
	if err := h.stop(); err != nil { // the checks read all of c: look again
		return nil, err
	}
	mate, half, odd, err := matchRelaxed(c, n, h.sub(0, 0.95))
	if err != nil {
		return nil, err
	}
	pm := &PerfectMatching{Mate: mate, OddVertices: odd}
	if odd > 0 {
		if err := twoOpt(c, n, mate, h); err != nil {
			return nil, err
		}
	}
	h.progress(1)
	for r, q := range mate {
		if r < q {
			pm.Cost += c[r*n+q]
		}
	}
	pm.Bound = math.Min(half, pm.Cost)
	if odd == 0 {
		pm.Bound = pm.Cost
	}
	return pm, nil
}

// checkSymmetric returns an error naming the first pair (i, j) with
// |c[i][j] − c[j][i]| > tol. It visits c in 64×64 blocks so that the
// transposed reads stay in cache (a row-by-column sweep of a large matrix
// misses the cache on every read).
func checkSymmetric(c []float64, n int, tol float64) error {
	const b = 64
	for i0 := 0; i0 < n; i0 += b {
		for j0 := i0; j0 < n; j0 += b {
			for i := i0; i < min(n, i0+b); i++ {
				for j := max(j0, i+1); j < min(n, j0+b); j++ {
					if math.Abs(c[i*n+j]-c[j*n+i]) > tol {
						return fmt.Errorf("assign: c[%d][%d] = %v but c[%d][%d] = %v: the matching cost must be symmetric", i, j, c[i*n+j], j, i, c[j*n+i])
					}
				}
			}
		}
	}
	return nil
}

// matchRelaxed solves the symmetric assignment relaxation of the matching on
// the n×n cost c and rounds its permutation to a perfect matching. It returns
// the mates, L*/2, and the number of odd-cycle vertices. The diagonal of c is
// +Inf during the solve and restored after it.
func matchRelaxed(c []float64, n int, h *Hooks) (mate []int, half float64, odd int, err error) {
	diag := make([]float64, n)
	for i := range diag {
		diag[i], c[i*n+i] = c[i*n+i], inf
	}
	s, err := solveLSAP(c, n, n, h)
	for i, x := range diag {
		c[i*n+i] = x
	}
	if err != nil {
		return nil, 0, 0, err
	}
	sigma := s.col4row
	for i, j := range sigma {
		half += c[i*n+j]
	}
	half /= 2
	mate = make([]int, n)
	seen := make([]bool, n)
	var oddCycles [][]int
	cycle := make([]int, 0, n)
	for start := range sigma {
		if seen[start] {
			continue
		}
		cycle = cycle[:0]
		for v := start; !seen[v]; v = sigma[v] {
			seen[v] = true
			cycle = append(cycle, v)
		}
		if len(cycle)%2 == 1 {
			oddCycles = append(oddCycles, append([]int(nil), cycle...))
			odd += len(cycle)
			continue
		}
		// Even cycle: its two alternating halves cost the cycle's total, so
		// the cheaper one costs at most half of it.
		a, b := 0.0, 0.0
		for k := 0; k < len(cycle); k += 2 {
			a += c[cycle[k]*n+cycle[k+1]]
			b += c[cycle[k+1]*n+cycle[(k+2)%len(cycle)]]
		}
		off := 0
		if b < a {
			off = 1
		}
		for k := off; k < len(cycle)+off; k += 2 {
			x, y := cycle[k], cycle[(k+1)%len(cycle)]
			mate[x], mate[y] = y, x
		}
	}
	if odd > 0 {
		if err := repairOdd(c, n, oddCycles, odd, mate, h.stopOnly()); err != nil {
			return nil, 0, 0, err
		}
	}
	return mate, half, odd, nil
}

// repairOdd matches the vertices of the odd cycles (odd of them in total,
// an even number) and writes their partners into mate: exactly by dynamic
// programming when there are at most maxDP, else by the relaxation restricted
// to them, and when that makes no progress (all n vertices on odd cycles) by
// keeping the cheapest alternating path of each cycle and matching the
// left-over vertices, one per cycle, recursively.
func repairOdd(c []float64, n int, cycles [][]int, odd int, mate []int, h *Hooks) error {
	if odd <= maxDP {
		vs := make([]int, 0, odd)
		for _, cyc := range cycles {
			vs = append(vs, cyc...)
		}
		matchDP(c, n, vs, mate)
		return nil
	}
	if odd < n {
		// The relaxation restricted to the odd-cycle vertices usually pairs
		// most of them; recurse on it (it shrinks, so this terminates).
		vs := make([]int, 0, odd)
		for _, cyc := range cycles {
			vs = append(vs, cyc...)
		}
		return matchSubset(c, n, vs, mate, h)
	}
	// Each cycle v0..v_{L-1} drops one vertex v_k and matches the path left
	// over along its own edges. With e_t = c(v_t, v_{t+1}) and S_k the path
	// cost when dropping v_k, S_{k+1} = total − S_k − e_k.
	left := make([]int, 0, len(cycles))
	for _, cyc := range cycles {
		L := len(cyc)
		e := make([]float64, L)
		total := 0.0
		for t := range cyc {
			e[t] = c[cyc[t]*n+cyc[(t+1)%L]]
			total += e[t]
		}
		sk := 0.0
		for t := 1; t < L; t += 2 {
			sk += e[t]
		}
		best, kbest := sk, 0
		for k := 0; k+1 < L; k++ {
			sk = total - sk - e[k]
			if sk < best {
				best, kbest = sk, k+1
			}
		}
		for t := 1; t < L; t += 2 {
			x, y := cyc[(kbest+t)%L], cyc[(kbest+t+1)%L]
			mate[x], mate[y] = y, x
		}
		left = append(left, cyc[kbest])
	}
	return matchSubset(c, n, left, mate, h)
}

// matchSubset matches the vertices vs (an even number) among themselves by
// matchRelaxed on their cost sub-matrix and writes their partners into mate.
func matchSubset(c []float64, n int, vs []int, mate []int, h *Hooks) error {
	m := len(vs)
	sub := make([]float64, m*m)
	for a, x := range vs {
		for b, y := range vs {
			sub[a*m+b] = c[x*n+y]
		}
	}
	subMate, _, _, err := matchRelaxed(sub, m, h)
	if err != nil {
		return err
	}
	for a, b := range subMate {
		mate[vs[a]] = vs[b]
	}
	return nil
}

// matchDP writes into mate a minimum-cost perfect matching of the vertices vs
// (at most maxDP of them, an even number) by dynamic programming over
// subsets, always matching the lowest unmatched vertex.
func matchDP(c []float64, n int, vs []int, mate []int) {
	m := len(vs)
	full := 1<<m - 1
	f := make([]float64, 1<<m)
	pairI, pairJ := make([]int8, 1<<m), make([]int8, 1<<m)
	for k := range f {
		f[k] = inf
	}
	f[0] = 0
	for mask := 0; mask < full; mask++ {
		if f[mask] == inf {
			continue
		}
		i := bits.TrailingZeros(uint(^mask))
		for j := i + 1; j < m; j++ {
			if mask&(1<<j) != 0 {
				continue
			}
			next := mask | 1<<i | 1<<j
			if v := f[mask] + c[vs[i]*n+vs[j]]; v < f[next] {
				f[next], pairI[next], pairJ[next] = v, int8(i), int8(j)
			}
		}
	}
	for mask := full; mask != 0; {
		i, j := int(pairI[mask]), int(pairJ[mask])
		mate[vs[i]], mate[vs[j]] = vs[j], vs[i]
		mask &^= 1<<i | 1<<j
	}
}

// twoOpt exchanges partners between two pairs whenever that lowers the cost,
// until no exchange helps (at most 50 sweeps), polling h between sweeps. The
// time complexity of a sweep is O(n²).
func twoOpt(c []float64, n int, mate []int, h *Hooks) error {
	// pc[v] = c[v][mate[v]], kept up to date: the inner loop would otherwise
	// read c[z][mate[z]] from a different row of c for every z.
	pc := make([]float64, n)
	for v, u := range mate {
		pc[v] = c[v*n+u]
	}
	for sweep := 0; sweep < 50; sweep++ {
		if err := h.stop(); err != nil {
			return err
		}
		improved := false
		for x := 0; x < n; x++ {
			y := mate[x]
			if y < x {
				continue
			}
			for z := x + 1; z < n; z++ {
				w := mate[z]
				if z == y || w < z {
					continue
				}
				cur, y0 := pc[x]+pc[z], y
				if alt := c[x*n+z] + c[y*n+w]; alt < cur-1e-12*math.Abs(cur) {
					mate[x], mate[z], mate[y], mate[w] = z, x, w, y
					y, improved = z, true
				} else if alt := c[x*n+w] + c[y*n+z]; alt < cur-1e-12*math.Abs(cur) {
					mate[x], mate[w], mate[y], mate[z] = w, x, z, y
					y, improved = w, true
				} else {
					continue
				}
				for _, v := range [4]int{x, y0, z, w} {
					pc[v] = c[v*n+mate[v]]
				}
			}
		}
		if !improved {
			return nil
		}
	}
	return nil
}
