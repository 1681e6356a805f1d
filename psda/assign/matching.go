package assign

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
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

// maxDP is the largest vertex set matched exactly by the bitmask dynamic
// programme of RoundRelaxation's repair (O(2^m·m) time, O(2^m) memory); a
// variable so that tests can exercise the recursive repair.
var maxDP = 20

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
	if err := h.stop(); err != nil { // the checks read all of c: look again
		return nil, err
	}
	diag := make([]float64, n)
	for i := range diag {
		diag[i], c[i*n+i] = c[i*n+i], inf
	}
	s, err := solveLSAP(c, n, n, h.sub(0, 0.9))
	for i, x := range diag {
		c[i*n+i] = x
	}
	if err != nil {
		return nil, err
	}
	start := RelaxationStart(s.col4row, s.u, s.v, denseCost(c, n))
	pm := &PerfectMatching{OddVertices: oddCycleVertices(s.col4row)}
	b := newBlossomScaled(n, c, nil, start.Y, start.Mate, scale)
	em, err := b.finish(h.sub(0.9, 1))
	if err != nil {
		return nil, err
	}
	// The dual objective equals the cost up to rounding (CertifyMatching);
	// a lower bound above the cost would only be rounding, so it is capped.
	pm.Mate, pm.Cost, pm.Bound, pm.Duals = em.Mate, em.Cost, math.Min(em.Bound, em.Cost), em.Duals
	return pm, nil
}

// checkMatching validates the input of MinWeightPerfectMatching and returns
// the largest off-diagonal |c|.
func checkMatching(c []float64, n int) (scale float64, err error) {
	if n < 2 || n%2 != 0 {
		return 0, fmt.Errorf("assign: n = %d vertices: a perfect matching needs an even n >= 2 (add a dummy vertex to make n even)", n)
	}
	if len(c) != n*n {
		return 0, fmt.Errorf("assign: len(c) = %d but n×n = %d×%d = %d: pass the row-major n×n matrix", len(c), n, n, n*n)
	}
	for i := 0; i < n; i++ {
		for j, x := range c[i*n : i*n+n] {
			// x-x is NaN exactly for NaN and ±Inf: one test instead of two.
			if x-x != 0 && i != j {
				return 0, fmt.Errorf("assign: c[%d][%d] = %v: costs must be finite", i, j, x)
			}
			if a := math.Abs(x); a > scale && i != j {
				scale = a
			}
		}
	}
	return scale, checkSymmetric(c, n, 1e-9*scale)
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
// the n×n cost c and rounds its permutation to a perfect matching by
// roundCycles. It returns the mates, L*/2, and the vertices on odd cycles.
// The diagonal of c is +Inf during the solve and restored after it.
func matchRelaxed(c []float64, n int, h *Hooks) (mate []int, half float64, odd []int, err error) {
	diag := make([]float64, n)
	for i := range diag {
		diag[i], c[i*n+i] = c[i*n+i], inf
	}
	s, err := solveLSAP(c, n, n, h)
	for i, x := range diag {
		c[i*n+i] = x
	}
	if err != nil {
		return nil, 0, nil, err
	}
	for i, j := range s.col4row {
		half += c[i*n+j]
	}
	mate, odd, err = roundCycles(s.col4row, denseCost(c, n), h.stopOnly())
	return mate, half / 2, odd, err
}

// denseCost returns the cost oracle reading the row-major n×n matrix c.
func denseCost(c []float64, n int) func(r, q int) float64 {
	return func(r, q int) float64 { return c[r*n+q] }
}

// RoundRelaxation turns sigma, an optimal permutation of the symmetric
// assignment relaxation (sigma[r] != r), into a perfect matching: mate[r] is
// r's partner; odd is the number of vertices on odd cycles of sigma (0 means
// the matching costs at most the relaxation's L*/2, hence is optimal). It is
// the rounding of MinWeightPerfectMatching (docs/method.md, "Stage 2") for callers
// that solve the relaxation themselves, e.g. sparsely, and have no n×n matrix.
//
// cost(r, q) returns the symmetric edge cost, for r != q only; it is called
// O(n + repaired work) times, never n² unless the odd cycles cover most
// vertices, so that it can compute costs on the fly from features. In
// detail, for m vertices on odd cycles: each even cycle longer than 2 takes
// one call per vertex (its cheaper alternating half is kept); the repair
// takes m(m−1)/2 calls when m <= 20 (exact dynamic programme) and m(m−1)
// per level of the restricted relaxation otherwise; the 2-opt polish takes
// at most n + polishCalls·m·n + 2n calls, polishCalls = 32. The polish
// exchanges the partners of two pairs when that lowers the cost, trying only
// exchanges in which at least one pair has changed since the rounding (the
// pairs of the even-cycle rounding form an optimal matching of their
// vertices, so exchanges among them cannot help); a sweep costs at most
// 2n·k calls for k changed vertices, and the polish stops after a sweep
// without improvement, after 50 sweeps, or at its call budget (checked
// between pairs). The result may exceed the optimum when odd > 0, never
// otherwise.
//
// RoundRelaxation returns an error if len(sigma) is odd or < 2, sigma is not
// a permutation of 0..n−1 or has a fixed point, cost is nil, a cost used by
// the odd-cycle repair is not finite, or h.Stop asks it to stop. The time
// complexity is O(n) plus that of the oracle calls above plus the repair:
// O(2^20·20) for the dynamic programme, O(m³) for the restricted relaxation,
// O(n·k) per polish sweep.
func RoundRelaxation(sigma []int, cost func(r, q int) float64, h *Hooks) (mate []int, odd int, err error) {
	return RoundRelaxationNear(sigma, cost, nil, h)
}

// RoundRelaxationNear is RoundRelaxation whose 2-opt polish, when near is
// not nil, only tries to exchange the pair of a changed vertex x with the
// pairs of the vertices near(x) (for instance x's candidate edges in a
// sparse relaxation): O(Σ|near(x)|) oracle calls per sweep over the changed
// vertices instead of O(n) each, for oracles that compute costs from
// features at O(d) per call.
func RoundRelaxationNear(sigma []int, cost func(r, q int) float64, near func(v int) []int32, h *Hooks) (mate []int, odd int, err error) {
	n := len(sigma)
	if n < 2 || n%2 != 0 {
		return nil, 0, fmt.Errorf("assign: len(sigma) = %d: a perfect matching needs an even number >= 2 of vertices (add a dummy vertex to make it even)", n)
	}
	if cost == nil {
		return nil, 0, fmt.Errorf("assign: cost is nil: pass the edge cost function cost(r, q)")
	}
	from := make([]int, n) // from[q] = 1 + the r with sigma[r] = q, 0 if none yet
	for r, q := range sigma {
		switch {
		case q < 0 || q >= n:
			return nil, 0, fmt.Errorf("assign: sigma[%d] = %d is outside [0, %d): sigma must be a permutation of the vertices", r, q, n)
		case q == r:
			return nil, 0, fmt.Errorf("assign: sigma[%d] = %d is a fixed point: the relaxation must forbid the diagonal (cost +Inf on r == q)", r, q)
		case from[q] != 0:
			return nil, 0, fmt.Errorf("assign: sigma[%d] = sigma[%d] = %d: sigma must be a permutation (each vertex the image of exactly one)", from[q]-1, r, q)
		}
		from[q] = r + 1
	}
	if err := h.stop(); err != nil {
		return nil, 0, err
	}
	mate, oddVs, err := roundCycles(sigma, cost, h.stopOnly())
	if err != nil {
		return nil, 0, err
	}
	if len(oddVs) > 0 {
		var err error
		if near != nil {
			err = polishNear(cost, near, mate, oddVs, h)
		} else {
			err = polish(cost, mate, oddVs, polishCalls*len(oddVs)*n, h)
		}
		if err != nil {
			return nil, 0, err
		}
	}
	h.progress(1)
	return mate, len(oddVs), nil
}

// polishCalls bounds the 2-opt polish of RoundRelaxation to about
// polishCalls·m·n oracle calls for m odd-cycle vertices. A sweep costs at
// most 2n·k calls for k changed vertices, k starting at m and growing by up
// to 4 per exchange, so this allows 16 sweeps if few pairs change and fewer
// if many do; on two triangles added to a 1994-vertex Stage 2 instance (the
// test TestRoundRelaxationOracleCalls) the polish converges after 5 sweeps
// and 21·m·n calls, k growing from 6 to 36.
const polishCalls = 32

// roundCycles rounds the permutation sigma (no fixed point) to a perfect
// matching: 2-cycles are pairs, each even cycle keeps its cheaper
// alternating half, and the vertices of the odd cycles are matched by
// repairOdd. It returns the mates and the odd-cycle vertices.
func roundCycles(sigma []int, cost func(r, q int) float64, h *Hooks) (mate, odd []int, err error) {
	n := len(sigma)
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
			odd = append(odd, cycle...)
			continue
		}
		if len(cycle) == 2 {
			mate[cycle[0]], mate[cycle[1]] = cycle[1], cycle[0]
			continue
		}
		// Even cycle: its two alternating halves cost the cycle's total, so
		// the cheaper one costs at most half of it.
		a, b := 0.0, 0.0
		for k := 0; k < len(cycle); k += 2 {
			a += cost(cycle[k], cycle[k+1])
			b += cost(cycle[k+1], cycle[(k+2)%len(cycle)])
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
	if len(odd) > 0 {
		if err := repairOdd(cost, n, oddCycles, odd, mate, h); err != nil {
			return nil, nil, err
		}
	}
	return mate, odd, nil
}

// repairOdd matches the vertices odd of the odd cycles among themselves (an
// even number of them, n being the number of all vertices) and writes their
// partners into mate: exactly by dynamic programming when there are at most
// maxDP, else by the relaxation restricted to them, and when that makes no
// progress (all n vertices on odd cycles) by keeping the cheapest
// alternating path of each cycle and matching the left-over vertices, one
// per cycle, recursively.
func repairOdd(cost func(r, q int) float64, n int, cycles [][]int, odd []int, mate []int, h *Hooks) error {
	if len(odd) <= maxDP {
		return matchDP(cost, odd, mate)
	}
	if len(odd) < n {
		// The relaxation restricted to the odd-cycle vertices usually pairs
		// most of them; recurse on it (it shrinks, so this terminates).
		return matchSubset(cost, odd, mate, h)
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
			e[t] = cost(cyc[t], cyc[(t+1)%L])
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
	return matchSubset(cost, left, mate, h)
}

// subCosts returns the row-major m×m matrix cost(vs[a], vs[b]) for a < b
// (upper) or a != b (full), with a zero diagonal, or an error naming the
// first cost that is not finite: the repair would silently go wrong on it.
func subCosts(cost func(r, q int) float64, vs []int, full bool) ([]float64, error) {
	m := len(vs)
	sub := make([]float64, m*m)
	for a, x := range vs {
		b0 := a + 1
		if full {
			b0 = 0
		}
		for b := b0; b < m; b++ {
			if b == a {
				continue
			}
			v := cost(x, vs[b])
			if v-v != 0 { // NaN exactly for NaN and ±Inf
				return nil, fmt.Errorf("assign: cost(%d, %d) = %v: costs must be finite", x, vs[b], v)
			}
			sub[a*m+b] = v
		}
	}
	return sub, nil
}

// matchSubset matches the vertices vs (an even number) among themselves by
// matchRelaxed on their cost sub-matrix and writes their partners into mate.
func matchSubset(cost func(r, q int) float64, vs []int, mate []int, h *Hooks) error {
	sub, err := subCosts(cost, vs, true)
	if err != nil {
		return err
	}
	subMate, _, _, err := matchRelaxed(sub, len(vs), h)
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
func matchDP(cost func(r, q int) float64, vs []int, mate []int) error {
	m := len(vs)
	c, err := subCosts(cost, vs, false)
	if err != nil {
		return err
	}
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
			if v := f[mask] + c[i*m+j]; v < f[next] {
				f[next], pairI[next], pairJ[next] = v, int8(i), int8(j)
			}
		}
	}
	for mask := full; mask != 0; {
		i, j := int(pairI[mask]), int(pairJ[mask])
		mate[vs[i]], mate[vs[j]] = vs[j], vs[i]
		mask &^= 1<<i | 1<<j
	}
	return nil
}

// polish exchanges partners between two pairs whenever that lowers the cost,
// sweeping the pairs in order of their lower vertex, until a sweep finds no
// improvement (at most 50 sweeps), polling h between pairs of changed
// vertices. Only exchanges involving a changed pair are tried: a pair is
// changed when it holds a vertex of odd (the repaired odd-cycle vertices) or
// one that took part in an exchange; the unchanged pairs are the even-cycle
// rounding, an optimal matching of their vertices (a cheaper one would give
// a cheaper relaxation), so exchanges among them cannot lower the cost. The
// sweeps thus visit the improving exchanges in the same order as a 2-opt
// over all pairs and reach the same matching (up to floating-point ties,
// which the 1e-12 relative threshold absorbs), at a cost of at most 2n·k
// oracle calls per sweep for k changed vertices instead of n². It stops
// early once more than budget oracle calls were made (budget < 0: no limit).
func polish(cost func(r, q int) float64, mate []int, odd []int, budget int, h *Hooks) error {
	n := len(mate)
	// pc[v] = cost(v, mate[v]), kept up to date.
	pc := make([]float64, n)
	for v, u := range mate {
		pc[v] = cost(v, u)
	}
	calls := n
	changed := make([]bool, n)
	var list []int // the changed vertices, sorted
	mark := func(v int) {
		if !changed[v] {
			changed[v] = true
			k, _ := slices.BinarySearch(list, v)
			list = slices.Insert(list, k, v)
		}
	}
	for _, v := range odd {
		mark(v)
	}
	// try exchanges partners of x's pair and z's pair if that is cheaper,
	// z being the lower vertex of its pair, and reports whether it did.
	improved := false
	try := func(x, z int) bool {
		y, w := mate[x], mate[z]
		if z == y || w < z {
			return false
		}
		cur := pc[x] + pc[z]
		calls += 2
		if alt := cost(x, z) + cost(y, w); alt < cur-1e-12*math.Abs(cur) {
			mate[x], mate[z], mate[y], mate[w] = z, x, w, y
		} else if calls += 2; cost(x, w)+cost(y, z) < cur-1e-12*math.Abs(cur) {
			mate[x], mate[w], mate[y], mate[z] = w, x, z, y
		} else {
			return false
		}
		for _, v := range [4]int{x, y, z, w} {
			pc[v] = cost(v, mate[v])
			mark(v)
		}
		calls += 4
		improved = true
		return true
	}
	for sweep := 0; sweep < 50; sweep++ {
		if err := h.stop(); err != nil {
			return err
		}
		improved = false
		for x := 0; x < n; x++ {
			if mate[x] < x {
				continue
			}
			if budget >= 0 && calls > budget {
				return nil
			}
			z := x + 1
			if !changed[x] {
				// An unchanged pair can only gain from a changed partner
				// pair; once it has exchanged, it is changed itself.
				k, _ := slices.BinarySearch(list, x+1)
				for z = n; k < len(list); k++ {
					if try(x, list[k]) {
						z = list[k] + 1
						break
					}
				}
			} else if err := h.stop(); err != nil {
				return err
			}
			for ; z < n; z++ {
				try(x, z)
			}
		}
		if !improved {
			return nil
		}
	}
	return nil
}

// polishNear is polish restricted to exchanges between the pair of a changed
// vertex x and the pairs of near(x); vertices of exchanged pairs become
// changed in turn. It stops after a sweep without improvement or 50 sweeps.
func polishNear(cost func(r, q int) float64, near func(v int) []int32, mate []int, odd []int, h *Hooks) error {
	n := len(mate)
	pc := make(map[int]float64) // cost(v, mate[v]) for the vertices visited
	pcost := func(v int) float64 {
		c, ok := pc[v]
		if !ok {
			c = cost(v, mate[v])
			pc[v] = c
		}
		return c
	}
	changed := make([]bool, n)
	list := slices.Clone(odd)
	for _, v := range odd {
		changed[v] = true
	}
	for sweep := 0; sweep < 50; sweep++ {
		if err := h.stop(); err != nil {
			return err
		}
		improved := false
		for k := 0; k < len(list); k++ { // list grows during the sweep
			x := list[k]
			for _, z32 := range near(x) {
				z := int(z32)
				y, w := mate[x], mate[z]
				if z == x || z == y {
					continue
				}
				cur := pcost(x) + pcost(z)
				switch {
				case cost(x, z)+cost(y, w) < cur-1e-12*math.Abs(cur):
					mate[x], mate[z], mate[y], mate[w] = z, x, w, y
				case cost(x, w)+cost(y, z) < cur-1e-12*math.Abs(cur):
					mate[x], mate[w], mate[y], mate[z] = w, x, z, y
				default:
					continue
				}
				improved = true
				for _, v := range [4]int{x, y, z, w} {
					delete(pc, v)
					if !changed[v] {
						changed[v] = true
						list = append(list, v)
					}
				}
			}
		}
		if !improved {
			return nil
		}
	}
	return nil
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
