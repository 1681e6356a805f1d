package assign

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/psda-dev/psda/psda/internal/par"
	"github.com/psda-dev/psda/psda/internal/scan"
)

// One file of about 1,000 lines on purpose: the algorithm's stages (grow,
// shrink, expand, augment, dual change) all read and write the same
// per-vertex and per-blossom state, and split up they would hide that.
//
// This file is a primal–dual weighted blossom algorithm for minimum-weight
// perfect matching on a general graph, after J. Edmonds, "Paths, trees, and
// flowers" and "Maximum matching and a polyhedron with 0,1-vertices"
// (1965), in the O(n³) organisation of Z. Galil, "Efficient algorithms for
// finding maximum matching in graphs", ACM Computing Surveys 18 (1986),
// section 4: alternating trees grown from all exposed vertices at once,
// least-slack edges kept per vertex and per outer blossom so that a dual
// change costs O(n), blossoms shrunk on tight edges between outer vertices
// and expanded when their dual reaches zero. The bookkeeping (blossom
// children in cycle order with the edges between them, labels that record
// the edge they came through, per-blossom lists of least-slack edges to other
// outer blossoms) is the one Galil describes and that networkx's
// max_weight_matching (after J. van Rantwijk) also uses; this code is written
// for the minimisation LP below, not translated from either.
//
// The LP (docs/method.md, "Stage 2"): minimise Σ c_e x_e
// subject to x(δ(v)) = 1 for every vertex and x(E(B)) <= (|B|−1)/2 for every
// odd set B, x >= 0. Its dual has a free y_v per vertex and z_B >= 0 per odd
// set, with reduced costs
//
//	rc(i, j) = c_ij − y_i − y_j + Σ_{B ∋ i, j} z_B >= 0
//
// and objective Σ y_v − Σ z_B·(|B|−1)/2. Matched edges are tight (rc = 0)
// and every blossom with z_B > 0 holds (|B|−1)/2 matched edges, so at the
// end the dual objective equals the matching's cost.
//
// Deviations from Galil's presentation:
//   - it minimises a perfect matching, so vertex duals are free and there is
//     no "vertex dual reaches zero" event: a stage ends only by augmenting,
//     and a stage that finds no dual change proves there is no perfect
//     matching in the graph;
//   - it starts from any dual solution y (made feasible vertex by vertex if
//     it is not, see newBlossom) and any matching of tight edges, so that a
//     symmetric assignment's halved potentials and the tight edges of its
//     cycles need only one vertex per odd cycle augmented;
//   - the complexity is Galil's O(n³) for the dense graph; on a sparse graph
//     with m edges it is O(n·(n² + m)) in the worst case, a stage costing
//     O(m) for the scans plus O(n) per dual change;
//   - costs are floating point: an edge counts as tight when its slack is
//     at most eps (1e-12 of the largest |c|), and the edge chosen by a dual
//     change is processed as tight whatever its rounded slack.

// bPair is an edge (v, w) inside a blossom or a label: v on the side it
// was reached from, w on the side it leads to.
type bPair struct{ v, w int32 }

// bEdge is an edge with its cost, kept as a least-slack candidate.
type bEdge struct {
	v, w int32 // v in the outer blossom that owns the entry
	c    float64
}

var noEdge = bEdge{v: -1, w: -1}

const (
	lFree int8 = iota
	lOuter
	lInner
)

// blossom is the state of one run of the algorithm. Ids 0..n−1 are the
// vertices (trivial blossoms), n..2n−1 the non-trivial blossoms.
type blossom struct {
	n int
	// The graph: either dense (n×n row-major, diagonal ignored) or the
	// symmetric adjacency of g.
	dense []float64
	g     *Graph
	eps   float64

	y    []float64 // vertex duals
	z    []float64 // blossom duals, indexed by blossom id
	mate []int     // partner of each vertex, −1 when exposed

	inb    []int     // top-level blossom of each vertex
	parent []int     // enclosing blossom, −1 at top level
	childs [][]int   // sub-blossoms in cycle order, the base's first
	ends   [][]bPair // ends[b][i] joins childs[i] to childs[i+1] (cyclically)
	base   []int     // base vertex, −1 for an unused id

	label      []int8
	lfrom, lto []int     // label edge: lfrom outside the labelled blossom, lto inside
	best       []bEdge   // least-slack edge to an outer vertex (non-outer) or outer blossom (outer)
	bestList   [][]bEdge // per outer blossom: least-slack edge to each other outer blossom
	hasList    []bool
	bestTo     []bEdge // scratch of addBlossom
	mark       []bool  // scratch of scanBlossom
	unused     []int
	queue      []int
	path       []int
}

// newBlossom sets up the solver on n vertices with the start (y, mate):
// y is lowered where needed so that every edge has non-negative slack,
// processing the vertices in order (lowering y_v only raises the slack of
// other edges), and pairs of mate that are not tight under the result are
// left exposed.
func newBlossom(n int, dense []float64, g *Graph, y []float64, mate []int) *blossom {
	return newBlossomScaled(n, dense, g, y, mate, -1)
}

// newBlossomScaled is newBlossom for a caller that knows the largest |c|
// (scale >= 0), which sets the tightness guard eps.
func newBlossomScaled(n int, dense []float64, g *Graph, y []float64, mate []int, scale float64) *blossom {
	return newBlossomLows(n, dense, g, y, mate, scale, nil)
}

// newBlossomLows is newBlossomScaled with the rows that may need lowering
// under y found already (lows[v]: lowSlack(v) < 0 under this y, or more
// rows; nil: found here by a pass over c), for the dense matching, whose
// warm start finds them in its pricing pass (denseModel.minimaUnder).
func newBlossomLows(n int, dense []float64, g *Graph, y []float64, mate []int, scale float64, lows []bool) *blossom {
	s := &blossom{n: n, dense: dense, g: g}
	s.y = make([]float64, n)
	s.mate = make([]int, n)
	s.z = make([]float64, 2*n)
	s.inb = make([]int, n)
	s.parent = make([]int, 2*n)
	s.childs = make([][]int, 2*n)
	s.ends = make([][]bPair, 2*n)
	s.base = make([]int, 2*n)
	s.label = make([]int8, 2*n)
	s.lfrom = make([]int, 2*n)
	s.lto = make([]int, 2*n)
	s.best = make([]bEdge, 2*n)
	s.bestList = make([][]bEdge, 2*n)
	s.hasList = make([]bool, 2*n)
	s.bestTo = slices.Repeat([]bEdge{noEdge}, 2*n)
	s.mark = make([]bool, 2*n)
	if scale < 0 {
		scale = 0
		for v := 0; v < n; v++ {
			cols, costs := s.row(v)
			for k, c := range costs {
				// Plain comparisons: max and min also order NaNs, at a
				// cost that shows on n² entries.
				if a := math.Abs(c); a > scale && (cols != nil || k != v) {
					scale = a
				}
			}
		}
	}
	s.eps = 1e-12 * scale
	for v := 0; v < n; v++ {
		s.inb[v], s.parent[v], s.base[v] = v, -1, v
		s.mate[v] = -1
		if y != nil {
			s.y[v] = y[v]
		}
		if mate != nil {
			s.mate[v] = mate[v]
		}
	}
	for b := n; b < 2*n; b++ {
		s.parent[b], s.base[b] = -1, -1
		s.unused = append(s.unused, b)
	}
	if y == nil {
		// y_v = half the cheapest edge at v is feasible.
		for v := range s.y {
			s.y[v] = inf
		}
		s.edges(func(v, w int, c float64) { s.y[v] = min(s.y[v], c/2) })
		for v := range s.y {
			if s.y[v] == inf {
				s.y[v] = 0
			}
		}
	} else {
		// The vertices in order, each y_v lowered by its row's most
		// negative slack under the y of the moment. Lowering y only
		// raises slacks, so a row with no negative slack under the
		// start's y has none when its turn comes: a first pass over all
		// rows on all cores finds the rows that may need lowering, and
		// only those are rescanned in order (with psda's halved
		// potentials, a few or none), with the serial loop's result.
		if lows == nil {
			lows = make([]bool, n)
			par.Rows(n, func(v0, v1 int) {
				for v := v0; v < v1; v++ {
					lows[v] = s.lowSlack(v) < 0
				}
			})
		}
		for v := 0; v < n; v++ {
			low := 0.0
			if lows[v] {
				low = s.lowSlack(v)
			}
			s.y[v] += low
		}
	}
	for v, w := range s.mate {
		if w < 0 {
			continue
		}
		if w >= n || s.mate[w] != v || w == v || !(s.cost(v, w)-s.y[v]-s.y[w] <= s.eps) {
			s.mate[v] = -1
			if w >= 0 && w < n && s.mate[w] == v {
				s.mate[w] = -1
			}
		}
	}
	return s
}

// lowSlack returns the most negative slack c − y_v − y_w of an edge at v,
// or 0 when none is negative.
func (s *blossom) lowSlack(v int) float64 {
	low, yv := 0.0, s.y[v]
	cols, costs := s.row(v)
	if cols == nil {
		return lowSlackDense(costs, v, s.y)
	}
	for k, c := range costs {
		if w := int(cols[k]); w != v && c-yv-s.y[w] < low {
			low = c - yv - s.y[w]
		}
	}
	return low
}

// lowSlackDense is lowSlack on the dense row of vertex v, costs[w] the
// edge (v, w) (costs[v], no edge, is never read as one), under the duals
// y.
func lowSlackDense(costs []float64, v int, y []float64) float64 {
	low, yv := 0.0, y[v]
	ys := y[:len(costs)]
	for w := 0; w < len(costs); w++ {
		// The scan skips the entries whose slack is at least low.
		if w += scan.DiffBelow(costs[w:], ys[w:], yv, low); w == len(costs) {
			break
		}
		if r := costs[w] - yv - ys[w]; r < low && w != v {
			low = r
		}
	}
	return low
}

// row returns the edges at v: their costs, and their other ends (nil for
// the dense graph, where costs[w] is edge (v, w) and costs[v] is no edge).
func (s *blossom) row(v int) (cols []int32, costs []float64) {
	if s.dense != nil {
		return nil, s.dense[v*s.n : v*s.n+s.n]
	}
	g := s.g
	return g.Col[g.Lo[v]:g.Hi[v]], g.Cost[g.Lo[v]:g.Hi[v]]
}

// neighbours calls f(w, c) for every edge (v, w) of cost c until f
// returns true, and reports whether it did.
func (s *blossom) neighbours(v int, f func(w int, c float64) bool) bool {
	if s.dense != nil {
		row := s.dense[v*s.n : v*s.n+s.n]
		for w, c := range row {
			if w != v && f(w, c) {
				return true
			}
		}
		return false
	}
	g := s.g
	for t := g.Lo[v]; t < g.Hi[v]; t++ {
		if w := int(g.Col[t]); w != v && f(w, g.Cost[t]) {
			return true
		}
	}
	return false
}

// edges calls f for every edge in both orientations.
func (s *blossom) edges(f func(v, w int, c float64)) {
	for v := 0; v < s.n; v++ {
		s.neighbours(v, func(w int, c float64) bool { f(v, w, c); return false })
	}
}

// cost returns the cost of edge (v, w), +Inf when the graph lacks it.
func (s *blossom) cost(v, w int) float64 {
	if s.dense != nil {
		return s.dense[v*s.n+w]
	}
	g := s.g
	for t := g.Lo[v]; t < g.Hi[v]; t++ {
		if int(g.Col[t]) == w {
			return g.Cost[t]
		}
	}
	return inf
}

func (s *blossom) slack(e bEdge) float64 { return e.c - s.y[e.v] - s.y[e.w] }

// leaves calls f for every vertex of blossom b.
func (s *blossom) leaves(b int, f func(v int)) {
	if b < s.n {
		f(b)
		return
	}
	for _, c := range s.childs[b] {
		s.leaves(c, f)
	}
}

// assignLabel labels the top-level blossom of w with t, reached through the
// edge (p, w) (p = −1 for a root); an inner blossom labels its base's mate
// outer in turn.
func (s *blossom) assignLabel(w int, t int8, p int) {
	b := s.inb[w]
	s.label[w], s.label[b] = t, t
	s.lfrom[w], s.lto[w], s.lfrom[b], s.lto[b] = p, w, p, w
	s.best[w], s.best[b] = noEdge, noEdge
	if t == lOuter {
		s.leaves(b, func(v int) { s.queue = append(s.queue, v) })
		return
	}
	base := s.base[b]
	s.assignLabel(s.mate[base], lOuter, base)
}

// scanBlossom traces the tree paths from the outer vertices v and w back to
// their roots and returns the base of the first blossom they share, or −1
// when the roots differ (an augmenting path).
func (s *blossom) scanBlossom(v, w int) int {
	s.path = s.path[:0]
	base := -1
	for v >= 0 {
		b := s.inb[v]
		if s.mark[b] {
			base = s.base[b]
			break
		}
		s.path = append(s.path, b)
		s.mark[b] = true
		if s.lfrom[b] < 0 {
			v = -1
		} else {
			v = s.lfrom[s.inb[s.lfrom[b]]] // through the inner blossom above
		}
		if w >= 0 {
			v, w = w, v
		}
	}
	for _, b := range s.path {
		s.mark[b] = false
	}
	return base
}

// addBlossom shrinks the odd cycle closed by the tight edge (v, w) between
// two outer blossoms of one tree, whose paths meet at base, into a new
// outer blossom.
func (s *blossom) addBlossom(base, v, w int) {
	bb, bv, bw := s.inb[base], s.inb[v], s.inb[w]
	b := s.unused[len(s.unused)-1]
	s.unused = s.unused[:len(s.unused)-1]
	s.base[b], s.parent[b], s.parent[bb] = base, -1, b
	var ch []int
	var en []bPair
	for bv != bb {
		s.parent[bv] = b
		ch = append(ch, bv)
		en = append(en, bPair{int32(s.lfrom[bv]), int32(s.lto[bv])})
		bv = s.inb[s.lfrom[bv]]
	}
	ch = append(ch, bb)
	slices.Reverse(ch)
	slices.Reverse(en)
	en = append(en, bPair{int32(v), int32(w)})
	for bw != bb {
		s.parent[bw] = b
		ch = append(ch, bw)
		en = append(en, bPair{int32(s.lto[bw]), int32(s.lfrom[bw])})
		bw = s.inb[s.lfrom[bw]]
	}
	s.childs[b], s.ends[b] = ch, en
	s.label[b], s.lfrom[b], s.lto[b] = lOuter, s.lfrom[bb], s.lto[bb]
	s.z[b] = 0
	s.leaves(b, func(x int) {
		if s.label[s.inb[x]] == lInner {
			// Inner vertices become outer: their edges must be scanned.
			s.queue = append(s.queue, x)
		}
		s.inb[x] = b
	})
	// The least-slack edge to every other outer blossom, from the children's
	// lists or, for children without one, from all their edges.
	var touched []int
	consider := func(e bEdge) {
		j := s.inb[e.w]
		if j == b || s.label[j] != lOuter {
			return
		}
		if s.bestTo[j].v < 0 {
			touched = append(touched, j)
			s.bestTo[j] = e
		} else if s.slack(e) < s.slack(s.bestTo[j]) {
			s.bestTo[j] = e
		}
	}
	for _, c := range ch {
		if s.hasList[c] {
			for _, e := range s.bestList[c] {
				consider(e)
			}
		} else {
			s.leaves(c, func(x int) {
				s.neighbours(x, func(w int, cw float64) bool {
					consider(bEdge{int32(x), int32(w), cw})
					return false
				})
			})
		}
		s.bestList[c], s.hasList[c], s.best[c] = nil, false, noEdge
	}
	list := make([]bEdge, 0, len(touched))
	s.best[b] = noEdge
	for _, j := range touched {
		e := s.bestTo[j]
		s.bestTo[j] = noEdge
		list = append(list, e)
		if s.best[b].v < 0 || s.slack(e) < s.slack(s.best[b]) {
			s.best[b] = e
		}
	}
	s.bestList[b], s.hasList[b] = list, true
}

// expandBlossom dissolves blossom b into its children. Mid-stage (b inner,
// its dual zero) the children on the even path from the child it was
// entered through to its base get inner and outer labels, and the others
// inner labels where a tight edge from an outer vertex reaches them. At the
// end of a stage (endStage) it also dissolves children whose dual is zero.
func (s *blossom) expandBlossom(b int, endStage bool) {
	for _, c := range s.childs[b] {
		s.parent[c] = -1
		switch {
		case c < s.n:
			s.inb[c] = c
		case endStage && s.z[c] <= 0:
			s.expandBlossom(c, endStage)
		default:
			s.leaves(c, func(x int) { s.inb[x] = c })
		}
	}
	if !endStage && s.label[b] == lInner {
		ch, en := s.childs[b], s.ends[b]
		k := len(ch)
		entry := s.inb[s.lto[b]]
		j := slices.Index(ch, entry)
		x, w := s.lfrom[b], s.lto[b]
		step := 1
		if j%2 == 0 {
			// The even path runs backwards: ch[j], ch[j−1], …, ch[0].
			step = -1
			for ; j != 0; j -= 2 {
				s.assignLabel(w, lInner, x)
				e := en[j-2] // ch[j−2] → ch[j−1]
				x, w = int(e.w), int(e.v)
			}
		} else {
			// Forwards: ch[j], ch[j+1], …, ch[k] = ch[0].
			for ; j != k; j += 2 {
				s.assignLabel(w, lInner, x)
				e := en[j+1] // ch[j+1] → ch[j+2]
				x, w = int(e.v), int(e.w)
			}
		}
		// The base child is inner; its base's mate is outer already.
		bv := ch[0]
		s.label[w], s.label[bv] = lInner, lInner
		s.lfrom[w], s.lto[w], s.lfrom[bv], s.lto[bv] = x, w, x, w
		s.best[bv] = noEdge
		// The children on the other side of the cycle.
		for j = (k + step) % k; ch[j] != entry; j = (j + step + k) % k {
			bv := ch[j]
			if s.label[bv] == lOuter {
				continue
			}
			hit := -1
			s.leaves(bv, func(v int) {
				if hit < 0 && s.label[v] != lFree {
					hit = v
				}
			})
			if hit >= 0 {
				s.label[hit] = lFree
				s.assignLabel(hit, lInner, s.lfrom[hit])
			}
		}
	}
	s.label[b], s.lfrom[b], s.lto[b] = lFree, -1, -1
	s.childs[b], s.ends[b], s.base[b] = nil, nil, -1
	s.bestList[b], s.hasList[b], s.best[b] = nil, false, noEdge
	s.z[b] = 0
	s.unused = append(s.unused, b)
}

// augmentBlossom rematches the inside of blossom b so that its vertex v
// becomes its base.
func (s *blossom) augmentBlossom(b, v int) {
	t := v
	for s.parent[t] != b {
		t = s.parent[t]
	}
	if t >= s.n {
		s.augmentBlossom(t, v)
	}
	ch, en := s.childs[b], s.ends[b]
	k := len(ch)
	i := slices.Index(ch, t)
	match := func(e bPair) {
		s.mate[e.v], s.mate[e.w] = int(e.w), int(e.v)
	}
	if i%2 == 0 {
		for j := i; j != 0; j -= 2 {
			e := en[j-2] // ch[j−2] → ch[j−1]
			if c := ch[j-1]; c >= s.n {
				s.augmentBlossom(c, int(e.w))
			}
			if c := ch[j-2]; c >= s.n {
				s.augmentBlossom(c, int(e.v))
			}
			match(e)
		}
	} else {
		for j := i; j != k; j += 2 {
			e := en[j+1] // ch[j+1] → ch[(j+2) % k]
			if c := ch[j+1]; c >= s.n {
				s.augmentBlossom(c, int(e.v))
			}
			if c := ch[(j+2)%k]; c >= s.n {
				s.augmentBlossom(c, int(e.w))
			}
			match(e)
		}
	}
	s.childs[b] = append(ch[i:], ch[:i]...)
	s.ends[b] = append(en[i:], en[:i]...)
	s.base[b] = v
}

// augment flips the augmenting path through the tight edge (v, w) between
// the outer blossoms of two trees.
func (s *blossom) augment(v, w int) {
	for _, p := range [2][2]int{{v, w}, {w, v}} {
		x, j := p[0], p[1]
		for {
			bx := s.inb[x]
			if bx >= s.n {
				s.augmentBlossom(bx, x)
			}
			s.mate[x] = j
			if s.lfrom[bx] < 0 {
				break
			}
			bt := s.inb[s.lfrom[bx]]
			x, j = s.lfrom[bt], s.lto[bt]
			if bt >= s.n {
				s.augmentBlossom(bt, j)
			}
			s.mate[j] = x
		}
	}
}

// edge handles the edge (v, w) of cost c from the outer vertex v; tight
// forces it to count as tight. It reports whether it augmented.
func (s *blossom) edge(v, w int, c float64, tight bool) bool {
	bv, bw := s.inb[v], s.inb[w]
	if bv == bw {
		return false
	}
	sl := c - s.y[v] - s.y[w]
	if tight || sl <= s.eps {
		switch {
		case s.label[bw] == lFree:
			s.assignLabel(w, lInner, v)
		case s.label[bw] == lOuter:
			if base := s.scanBlossom(v, w); base >= 0 {
				s.addBlossom(base, v, w)
			} else {
				s.augment(v, w)
				return true
			}
		case s.label[w] == lFree:
			// w lies in an inner blossom; remember that a tight edge
			// reaches it, for when that blossom is expanded.
			s.label[w], s.lfrom[w], s.lto[w] = lInner, v, w
		}
		return false
	}
	if s.label[bw] == lOuter {
		if e := s.best[bv]; e.v < 0 || sl < s.slack(e) {
			s.best[bv] = bEdge{int32(v), int32(w), c}
		}
	} else if s.label[w] == lFree {
		if e := s.best[w]; e.v < 0 || sl < s.slack(e) {
			s.best[w] = bEdge{int32(v), int32(w), c}
		}
	}
	return false
}

// scan handles every edge at the outer vertex v and reports whether one
// augmented. The edges inside v's blossom and the non-tight edges to free
// vertices that already know a cheaper edge are skipped in the loop itself,
// the common case on a dense graph.
func (s *blossom) scan(v int) bool {
	cols, costs := s.row(v)
	yv := s.y[v]
	for k, c := range costs {
		w := k
		if cols != nil {
			w = int(cols[k])
		}
		if w == v {
			continue
		}
		bw := s.inb[w]
		if bw == s.inb[v] {
			continue
		}
		if sl := c - yv - s.y[w]; sl > s.eps && s.label[bw] == lFree {
			if e := s.best[w]; e.v >= 0 && sl >= s.slack(e) {
				continue
			}
		}
		if s.edge(v, w, c, false) {
			return true
		}
	}
	return false
}

// errNoPerfectMatching is returned when the graph has no perfect matching.
var errNoPerfectMatching = errors.New("assign: the graph has no perfect matching")

// stage grows alternating trees from every exposed vertex, changing the
// duals when no tight edge helps, until one augmentation.
func (s *blossom) stage() error {
	n := s.n
	for b := 0; b < 2*n; b++ {
		s.label[b], s.best[b], s.lfrom[b], s.lto[b] = lFree, noEdge, -1, -1
		s.bestList[b], s.hasList[b] = nil, false
	}
	s.queue = s.queue[:0]
	for v := 0; v < n; v++ {
		if s.mate[v] < 0 && s.label[s.inb[v]] == lFree {
			s.assignLabel(v, lOuter, -1)
		}
	}
	for {
		for len(s.queue) > 0 {
			v := s.queue[len(s.queue)-1]
			s.queue = s.queue[:len(s.queue)-1]
			if s.scan(v) {
				return s.endStage()
			}
		}
		// No tight edge left to follow: change the duals by delta.
		delta, kind := inf, 0
		var de bEdge
		db := -1
		for v := 0; v < n; v++ {
			if s.label[s.inb[v]] == lFree && s.best[v].v >= 0 {
				if d := s.slack(s.best[v]); d < delta {
					delta, kind, de = d, 2, s.best[v]
				}
			}
		}
		for b := 0; b < 2*n; b++ {
			if s.parent[b] == -1 && s.base[b] >= 0 && s.label[b] == lOuter && s.best[b].v >= 0 {
				if d := s.slack(s.best[b]) / 2; d < delta {
					delta, kind, de = d, 3, s.best[b]
				}
			}
		}
		for b := n; b < 2*n; b++ {
			if s.base[b] >= 0 && s.parent[b] == -1 && s.label[b] == lInner {
				if d := s.z[b] / 2; d < delta {
					delta, kind, db = d, 4, b
				}
			}
		}
		if kind == 0 {
			return errNoPerfectMatching
		}
		delta = max(delta, 0)
		for v := 0; v < n; v++ {
			switch s.label[s.inb[v]] {
			case lOuter:
				s.y[v] += delta
			case lInner:
				s.y[v] -= delta
			}
		}
		for b := n; b < 2*n; b++ {
			if s.base[b] >= 0 && s.parent[b] == -1 {
				switch s.label[b] {
				case lOuter:
					s.z[b] += 2 * delta
				case lInner:
					s.z[b] -= 2 * delta
				}
			}
		}
		switch kind {
		case 2, 3:
			if s.edge(int(de.v), int(de.w), de.c, true) {
				return s.endStage()
			}
		case 4:
			s.z[db] = 0
			s.expandBlossom(db, false)
		}
	}
}

// endStage dissolves the top-level outer blossoms whose dual is zero.
func (s *blossom) endStage() error {
	for b := s.n; b < 2*s.n; b++ {
		if s.parent[b] == -1 && s.base[b] >= 0 && s.label[b] == lOuter && s.z[b] <= 0 {
			s.expandBlossom(b, true)
		}
	}
	return nil
}

// run augments until the matching is perfect, polling h between stages.
func (s *blossom) run(h *Hooks) error {
	exposed := 0
	for _, w := range s.mate {
		if w < 0 {
			exposed++
		}
	}
	total := exposed
	for exposed > 0 {
		if err := h.stop(); err != nil {
			return err
		}
		if err := s.stage(); err != nil {
			return err
		}
		exposed -= 2
		h.progress(1 - float64(exposed)/float64(total))
	}
	return nil
}

// MatchingDuals is a dual solution of the minimum-weight perfect matching
// LP: a vertex dual per vertex and a non-negative dual per blossom, the
// blossoms forming a laminar family of odd vertex sets given as a forest.
type MatchingDuals struct {
	// Y[v] is the dual of vertex v.
	Y []float64
	// Z[b] >= 0 is the dual of blossom b.
	Z []float64
	// Parent[b] is the smallest blossom strictly containing blossom b, or
	// −1.
	Parent []int
	// In[v] is the smallest blossom containing vertex v, or −1. Blossom b
	// holds the vertices v with b on the chain In[v], Parent[In[v]], ….
	In []int

	depth []int        // depth of each blossom in the forest (0 at the top)
	zUp   []float64    // Z summed over the blossom and all that contain it
	rng   *sharedRange // O(1) Shared (see shared.go); nil: walk the forest
}

// prepare fills depth and zUp, or returns an error when Parent is not a
// forest or a blossom id is out of range.
func (d *MatchingDuals) prepare() error {
	m := len(d.Z)
	if len(d.Parent) != m {
		return fmt.Errorf("assign: len(Parent) = %d but len(Z) = %d: one parent per blossom", len(d.Parent), m)
	}
	d.depth = slices.Repeat([]int{-1}, m)
	d.zUp = make([]float64, m)
	var fill func(b, hops int) error
	fill = func(b, hops int) error {
		if d.depth[b] >= 0 {
			return nil
		}
		if hops > m {
			return fmt.Errorf("assign: blossom %d lies on a cycle of Parent: the blossoms must form a forest", b)
		}
		p := d.Parent[b]
		switch {
		case p == -1:
			d.depth[b], d.zUp[b] = 0, d.Z[b]
			return nil
		case p < 0 || p >= m || p == b:
			return fmt.Errorf("assign: Parent[%d] = %d is not a blossom id in [0, %d) or −1", b, p, m)
		}
		if err := fill(p, hops+1); err != nil {
			return err
		}
		d.depth[b], d.zUp[b] = d.depth[p]+1, d.Z[b]+d.zUp[p]
		return nil
	}
	for b := range d.Z {
		if err := fill(b, 0); err != nil {
			return err
		}
	}
	for v, b := range d.In {
		if b < -1 || b >= m {
			return fmt.Errorf("assign: In[%d] = %d is not a blossom id in [0, %d) or −1", v, b, m)
		}
	}
	d.buildShared()
	return nil
}

// Shared returns Σ Z[b] over the blossoms containing both i and j. It
// takes O(1) time (O(depth) when a Z is negative); the duals must come from
// a solver or have passed CertifyMatching.
func (d *MatchingDuals) Shared(i, j int) float64 {
	a, b := d.In[i], d.In[j]
	if a < 0 || b < 0 {
		return 0
	}
	if d.rng != nil && i != j {
		return d.rng.shared(i, j)
	}
	for d.depth[a] > d.depth[b] {
		a = d.Parent[a]
	}
	for d.depth[b] > d.depth[a] {
		b = d.Parent[b]
	}
	for a != b {
		a, b = d.Parent[a], d.Parent[b]
		if a < 0 {
			return 0
		}
	}
	return d.zUp[a]
}

// ReducedCost returns c − Y[i] − Y[j] + Shared(i, j), the reduced cost of
// an edge (i, j) of cost c; it is >= 0 for every edge when the duals are
// feasible.
func (d *MatchingDuals) ReducedCost(i, j int, c float64) float64 {
	return c - d.Y[i] - d.Y[j] + d.Shared(i, j)
}

// Objective returns the dual objective Σ Y − Σ Z[b]·(|b|−1)/2, a lower
// bound on the cost of every perfect matching when the duals are feasible.
func (d *MatchingDuals) Objective() float64 {
	size := make([]int, len(d.Z))
	for _, b := range d.In {
		for ; b >= 0; b = d.Parent[b] {
			size[b]++
		}
	}
	sum := 0.0
	for _, y := range d.Y {
		sum += y
	}
	for b, z := range d.Z {
		sum -= z * float64(size[b]-1) / 2
	}
	return sum
}

// duals exports the solver's duals, numbering the non-trivial blossoms
// that exist 0, 1, ….
func (s *blossom) duals() MatchingDuals {
	n := s.n
	id := make([]int, 2*n)
	d := MatchingDuals{Y: slices.Clone(s.y), In: make([]int, n)}
	for b := n; b < 2*n; b++ {
		id[b] = -1
		if s.base[b] >= 0 {
			id[b] = len(d.Z)
			d.Z = append(d.Z, s.z[b])
		}
	}
	d.Parent = make([]int, len(d.Z))
	for b := n; b < 2*n; b++ {
		if k := id[b]; k >= 0 {
			d.Parent[k] = -1
			if p := s.parent[b]; p >= 0 {
				d.Parent[k] = id[p]
			}
		}
	}
	for v := 0; v < n; v++ {
		d.In[v] = -1
		if p := s.parent[v]; p >= 0 {
			d.In[v] = id[p]
		}
	}
	if err := d.prepare(); err != nil {
		panic("assign: blossom forest: " + err.Error())
	}
	return d
}

// ExactMatching is a minimum-weight perfect matching with the dual solution
// that proves it optimal.
type ExactMatching struct {
	// Mate[v] is the partner of vertex v.
	Mate []int
	// Cost is the sum of the matched edges' costs, each counted once.
	Cost float64
	// Duals are feasible for every edge of the graph solved, and tight on
	// the matched edges.
	Duals MatchingDuals
	// Bound is Duals.Objective(), a lower bound on every perfect matching of
	// the graph; it equals Cost up to rounding.
	Bound float64
}

// BlossomStart is a warm start for the blossom algorithm: vertex duals
// (lowered where an edge's slack is negative) and a matching (pairs that are
// not tight under the duals are dropped). Either may be nil: no matching,
// or y_v = half the cheapest edge at v.
type BlossomStart struct {
	Y    []float64
	Mate []int
}

// BlossomDense returns a minimum-weight perfect matching of the complete
// graph on n vertices with symmetric row-major costs c (the diagonal is
// ignored), with vertex and blossom duals that prove it optimal (see
// CertifyMatching). start, when not nil, is a dual start and a partial
// matching (BlossomStart); halved potentials of the symmetric assignment
// with the pairs of its even cycles leave only its odd-cycle vertices to
// augment.
//
// BlossomDense returns an error if n is odd or < 2, len(c) != n*n, a
// start slice has the wrong length, an off-diagonal cost is not finite, or
// h.Stop asks it to stop. c is not checked for symmetry; only its upper
// triangle's values matter if it is. The time complexity is O(n³) in the
// worst case, O(n²·(k + t)) for k exposed vertices after the start and t
// dual changes; the memory is O(n) besides c.
func BlossomDense(c []float64, n int, start *BlossomStart, h *Hooks) (*ExactMatching, error) {
	if n < 2 || n%2 != 0 {
		return nil, fmt.Errorf("assign: n = %d vertices: a perfect matching needs an even n >= 2 (add a dummy vertex to make n even)", n)
	}
	if len(c) != n*n {
		return nil, fmt.Errorf("assign: len(c) = %d but n×n = %d×%d = %d: pass the row-major n×n matrix", len(c), n, n, n*n)
	}
	for k, x := range c {
		if x-x != 0 && k/n != k%n {
			return nil, fmt.Errorf("assign: c[%d][%d] = %v: costs must be finite", k/n, k%n, x)
		}
	}
	y, mate, err := start.check(n)
	if err != nil {
		return nil, err
	}
	s := newBlossom(n, c, nil, y, mate)
	return s.finish(h)
}

// BlossomSparse is BlossomDense on the graph g, whose adjacency must be
// symmetric (edge (v, w) listed at v and at w with the same cost); g.N
// vertices, loops ignored. It returns an error wrapping ErrNoPerfect when g
// has no perfect matching. The duals are feasible for g's edges only. The
// time complexity is O(N·(N² + |E|)) in the worst case, O(k·(N·t + |E|))
// for k exposed vertices after the start and t dual changes a stage.
func BlossomSparse(g *Graph, start *BlossomStart, h *Hooks) (*ExactMatching, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	if g.N < 2 || g.N%2 != 0 {
		return nil, fmt.Errorf("assign: g.N = %d vertices: a perfect matching needs an even number >= 2 (add a dummy vertex to make it even)", g.N)
	}
	y, mate, err := start.check(g.N)
	if err != nil {
		return nil, err
	}
	s := newBlossom(g.N, nil, g, y, mate)
	m, err := s.finish(h)
	if errors.Is(err, errNoPerfectMatching) {
		return nil, fmt.Errorf("%w: no augmenting path from an exposed vertex", ErrNoPerfect)
	}
	return m, err
}

// check validates a start for n vertices.
func (st *BlossomStart) check(n int) (y []float64, mate []int, err error) {
	if st == nil {
		return nil, nil, nil
	}
	if st.Y != nil {
		if len(st.Y) != n {
			return nil, nil, fmt.Errorf("assign: len(start.Y) = %d but there are %d vertices: one dual per vertex", len(st.Y), n)
		}
		for v, x := range st.Y {
			if x-x != 0 {
				return nil, nil, fmt.Errorf("assign: start.Y[%d] = %v: duals must be finite", v, x)
			}
		}
	}
	if st.Mate != nil && len(st.Mate) != n {
		return nil, nil, fmt.Errorf("assign: len(start.Mate) = %d but there are %d vertices: one entry per vertex (−1: exposed)", len(st.Mate), n)
	}
	return st.Y, st.Mate, nil
}

// finish runs the algorithm and packs its result.
func (s *blossom) finish(h *Hooks) (*ExactMatching, error) {
	if err := s.run(h); err != nil {
		return nil, err
	}
	m := &ExactMatching{Mate: s.mate, Duals: s.duals()}
	for v, w := range s.mate {
		if v < w {
			m.Cost += s.cost(v, w)
		}
	}
	m.Bound = m.Duals.Objective()
	h.progress(1)
	return m, nil
}
