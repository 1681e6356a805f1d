package assign

import (
	"fmt"
	"math"

	"github.com/psda-dev/psda/psda/internal/scan"
)

// CertifyMatching checks that m is a minimum-weight perfect matching of the
// complete graph on n vertices with symmetric row-major costs c (diagonal
// ignored), using only m and c. The certificate is the LP duality of the
// perfect matching polytope (Edmonds 1965; see blossom.go):
//
//   - Mate is a perfect matching (an involution without fixed points);
//   - the blossoms (Parent, In) form a forest, so their vertex sets are a
//     laminar family, and every blossom has an odd number >= 3 of vertices;
//   - Z[b] >= −tol for every blossom;
//   - c_ij − Y_i − Y_j + Σ_{b ∋ i, j} Z[b] >= −tol for every edge (dual
//     feasibility), and its absolute value is <= tol on the matched edges;
//   - |Cost − Σ c over the matched edges| <= tol·n, and the dual objective
//     Σ Y − Σ Z[b]·(|b|−1)/2 lies within tol·n of Cost.
//
// Every perfect matching x satisfies x(E(b)) <= (|b|−1)/2, so the
// objective of feasible duals bounds every perfect matching's cost from
// below (up to n·tol/2 for the tolerance of the feasibility checks); Cost
// meeting it proves m optimal. CertifyMatching returns nil or an error
// describing the first violation; a NaN or −Inf off-diagonal cost, which
// no duals make feasible, is named as such. The time complexity is O(n²) (blossom
// terms by MatchingDuals.Shared, O(1) each after O(n log n) set-up).
func CertifyMatching(c []float64, n int, m *ExactMatching, tol float64) error {
	if n < 2 || len(c) != n*n {
		return fmt.Errorf("assign: len(c) = %d for n = %d: pass the row-major n×n matrix, n >= 2", len(c), n)
	}
	return certifyMatching(n, n*n, func(v int) ([]int32, []float64) { return nil, c[v*n : v*n+n] },
		func(v, w int) float64 { return c[v*n+w] }, m, tol)
}

// CertifyMatchingGraph is CertifyMatching for a perfect matching of the
// graph g (symmetric adjacency): dual feasibility is checked on g's edges
// only, which proves m optimal among the perfect matchings of g.
func CertifyMatchingGraph(g *Graph, m *ExactMatching, tol float64) error {
	if err := g.check(); err != nil {
		return err
	}
	cost := func(v, w int) float64 {
		for t := g.Lo[v]; t < g.Hi[v]; t++ {
			if int(g.Col[t]) == w {
				return g.Cost[t]
			}
		}
		return math.NaN()
	}
	return certifyMatching(g.N, len(g.Col), func(v int) ([]int32, []float64) {
		return g.Col[g.Lo[v]:g.Hi[v]], g.Cost[g.Lo[v]:g.Hi[v]]
	}, cost, m, tol)
}

// certifyMatching is CertifyMatching over the edges that row lists: the
// costs of the edges at v and their other ends (nil: costs[w] is edge
// (v, w), costs[v] no edge), edges of them in all; cost(v, w) returns the
// cost of a matched edge, NaN if absent.
func certifyMatching(n, edges int, row func(v int) ([]int32, []float64), cost func(v, w int) float64, m *ExactMatching, tol float64) error {
	if m == nil || len(m.Mate) != n || len(m.Duals.Y) != n || len(m.Duals.In) != n {
		return fmt.Errorf("assign: matching does not fit %d vertices: need len(Mate) = len(Duals.Y) = len(Duals.In) = %d", n, n)
	}
	if !(tol >= 0) {
		return fmt.Errorf("assign: tol = %v: need a non-negative tolerance", tol)
	}
	d := &m.Duals
	if err := d.prepare(); err != nil {
		return err
	}
	for v, w := range m.Mate {
		if w < 0 || w >= n || w == v || m.Mate[w] != v {
			return fmt.Errorf("assign: Mate[%d] = %d is not a partner whose Mate is %d: need a perfect matching", v, w, v)
		}
	}
	for v, y := range d.Y {
		if y-y != 0 {
			return fmt.Errorf("assign: vertex dual Y[%d] = %v is not finite", v, y)
		}
	}
	size := make([]int, len(d.Z))
	for _, b := range d.In {
		for ; b >= 0; b = d.Parent[b] {
			size[b]++
		}
	}
	for b, z := range d.Z {
		if !(z >= -tol) || math.IsInf(z, 1) {
			return fmt.Errorf("assign: blossom dual Z[%d] = %v: need a finite value >= 0", b, z)
		}
		if size[b] < 3 || size[b]%2 == 0 {
			return fmt.Errorf("assign: blossom %d has %d vertices: blossoms are odd sets of at least 3", b, size[b])
		}
	}
	// A vertex in no blossom shares none with any edge: its row needs no
	// blossom terms (the common case, a tight loop). The rows are checked
	// on all cores, and the first infeasible one reported. The tests are
	// !(rc >= −tol), which a NaN cost fails too (the dense c is not
	// checked otherwise; a graph's costs are).
	bad := func(v int) int {
		cols, costs := row(v)
		yv, inB := d.Y[v], d.In[v] >= 0
		if cols == nil && !inB {
			ys := d.Y[:len(costs)]
			for w := 0; w < len(costs); w++ {
				// The scan skips the feasible entries, by the same test.
				if w += scan.DiffBelow(costs[w:], ys[w:], yv, -tol); w == len(costs) {
					break
				}
				if !(costs[w]-yv-ys[w] >= -tol) && w != v {
					return w
				}
			}
			return -1
		}
		for k, c := range costs {
			w := k
			if cols != nil {
				w = int(cols[k])
			}
			rc := c - yv - d.Y[w]
			if inB && !(rc >= -tol) {
				rc += d.Shared(v, w)
			}
			if !(rc >= -tol) && w != v {
				return w
			}
		}
		return -1
	}
	v := firstFailing(n, edges/max(n, 1), func(v0, v1 int) int {
		for v := v0; v < v1; v++ {
			if bad(v) >= 0 {
				return v
			}
		}
		return -1
	})
	if v >= 0 {
		w := bad(v)
		if x := cost(v, w); x-x != 0 {
			return fmt.Errorf("assign: c[%d][%d] = %v: the costs must be finite", v, w, x)
		}
		return fmt.Errorf("assign: dual infeasible at edge (%d, %d): reduced cost %v < 0", v, w, d.ReducedCost(v, w, cost(v, w)))
	}
	sum := 0.0
	for v, w := range m.Mate {
		if v > w {
			continue
		}
		c := cost(v, w)
		if c-c != 0 {
			return fmt.Errorf("assign: matched edge (%d, %d) has cost %v: it must be a finite edge of the graph", v, w, c)
		}
		if rc := d.ReducedCost(v, w, c); math.Abs(rc) > tol {
			return fmt.Errorf("assign: matched edge (%d, %d) is not tight: reduced cost %v", v, w, rc)
		}
		sum += c
	}
	if math.Abs(sum-m.Cost) > tol*float64(n) {
		return fmt.Errorf("assign: Cost = %v but the matched edges sum to %v", m.Cost, sum)
	}
	if obj := d.Objective(); math.Abs(obj-m.Cost) > tol*float64(n) {
		return fmt.Errorf("assign: dual objective %v differs from Cost %v by more than %v", obj, m.Cost, tol*float64(n))
	}
	return nil
}
