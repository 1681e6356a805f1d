package assign

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Graph is a sparse n×n cost matrix in compressed rows: row i's edges are
// Col[Lo[i]:Hi[i]] with costs Cost[Lo[i]:Hi[i]]. Rows may share one edge
// range (identical rows, e.g. the dummy rows of the imbalanced problem, which
// all point at one list of n_t edges), so Lo and Hi are two arrays, not one
// offset array. An (i, j) pair listed more than once counts with its
// cheapest cost; pairs not listed are forbidden.
type Graph struct {
	N      int       // number of rows and of columns
	Lo, Hi []int     // row i's edges are [Lo[i], Hi[i])
	Col    []int32   // column of each edge, in [0, N)
	Cost   []float64 // finite cost of each edge
}

// ErrNoPerfect is returned by SolveSparse, wrapped in an error that names the
// size of a maximum matching, when the graph has no perfect matching; test
// for it with errors.Is.
var ErrNoPerfect = errors.New("assign: the graph has no perfect matching")

// tightRel is the relative guard under which an assigned edge counts as
// tight when assignments are kept from an auction or a warm start: floating
// point potentials built by sums and differences are exact only to a few
// ulps, and exact equality would free rows whose assigned edge ties with
// their cheapest one only up to rounding.
const tightRel = 1e-12

// check validates g: it returns nil or an error naming the argument and the
// value. The time complexity is O(N + len(Col)).
func (g *Graph) check() error {
	if g == nil {
		return errors.New("assign: graph is nil: pass a *Graph")
	}
	n := g.N
	if n < 1 {
		return fmt.Errorf("assign: Graph.N = %d: need at least 1 row and column", n)
	}
	if len(g.Lo) != n || len(g.Hi) != n {
		return fmt.Errorf("assign: len(Graph.Lo) = %d and len(Graph.Hi) = %d: both must equal Graph.N = %d", len(g.Lo), len(g.Hi), n)
	}
	if len(g.Cost) != len(g.Col) {
		return fmt.Errorf("assign: len(Graph.Cost) = %d but len(Graph.Col) = %d: give one cost per edge", len(g.Cost), len(g.Col))
	}
	for i := 0; i < n; i++ {
		if lo, hi := g.Lo[i], g.Hi[i]; lo < 0 || lo > hi || hi > len(g.Col) {
			return fmt.Errorf("assign: row %d has edge range Lo = %d, Hi = %d: need 0 <= Lo <= Hi <= len(Graph.Col) = %d", i, lo, hi, len(g.Col))
		}
	}
	for e, j := range g.Col {
		if j < 0 || int(j) >= n {
			return fmt.Errorf("assign: Graph.Col[%d] = %d: columns must lie in [0, %d)", e, j, n)
		}
	}
	for e, x := range g.Cost {
		if x-x != 0 { // NaN or ±Inf
			return fmt.Errorf("assign: Graph.Cost[%d] = %v: costs must be finite (leave a forbidden edge out instead)", e, x)
		}
	}
	return nil
}

// SolveSparse returns a minimum-cost perfect matching of the sparse graph g:
// Col4Row[i] is the column of row i and Cost the sum of the matched edge
// costs, with potentials U, V such that U[i]+V[j] <= c for every edge (i, j)
// of g and U[i]+V[j] = c on the matching (both up to rounding; an edge is
// taken as tight within a relative 1e-12). These potentials prove the
// matching optimal among all perfect matchings of g.
//
// warm, if non-nil, is a previous Solution on a graph with the same N whose
// edge set was a subset of g's (edges are only ever added). SolveSparse then
// starts from its V, recomputes U[i] as the minimum over row i of c−V (which
// makes (U, V) feasible on every edge) and keeps warm's assignment on the
// edges that are still tight; only the rows whose minimum dropped (they got
// a violated edge) start free. A warm Col4Row entry may be −1 (free). warm
// is not modified. On BenchmarkSparse (n = 50,000) a re-solve after adding
// 16 violated edges takes about 1/20 of a cold solve, after adding 1% of
// the edges (every violated one) about 1/2.
//
// SolveSparse returns an error naming the argument and value when g is
// malformed (N < 1, Lo or Hi of the wrong length or out of range, a column
// outside [0, N), a non-finite cost) or warm does not fit; an error wrapping
// ErrNoPerfect, naming the size of a maximum matching, when g has no
// perfect matching; and h's Stop error when h stops it (Stop is polled
// between phases and every pollEvery bids or scanned rows).
//
// Algorithm: an ε-scaling forward auction on the sparse rows (as
// auctionInit on dense ones), capped at auctionWork edge reads per edge,
// gives prices and most of an assignment; the potentials are made feasible
// and the assigned edges tight where possible (tighten); Dijkstra shortest
// augmenting paths on reduced costs with a binary heap then place every
// free row. A warm start first tries the paths alone and otherwise runs
// only the auction's last phases from warm's prices; costs with at most 12
// distinct values skip the auction (see fewValues). With m edges the time
// is O(m) for the auction plus O(n·m·log n) for the paths in the worst
// case; on k-nearest-neighbour graphs almost every path ends within a few
// rows (n = 50,000, 32–64 edges per row: under 1.5 s). Memory is O(n)
// besides g.
func SolveSparse(g *Graph, warm *Solution, h *Hooks) (*Solution, error) {
	return solveSparse(g, warm, false, h)
}

// ResolveSparse is SolveSparse whose warm start (required) is finished by
// shortest augmenting paths alone, however long they get: rows and columns
// that no path reaches keep warm's potentials, where SolveSparse's fallback
// auction would move most of them. A pricing loop needs that: its bounds on
// the edges outside the graph follow the changes of the potentials, and
// every potential that moves sends rows back to pricing. The price is time
// when a row's minimum dropped far (its path then scans thousands of rows).
func ResolveSparse(g *Graph, warm *Solution, h *Hooks) (*Solution, error) {
	if warm == nil {
		return nil, fmt.Errorf("assign: ResolveSparse needs a warm start: use SolveSparse for a cold one")
	}
	return solveSparse(g, warm, true, h)
}

// solveSparse is SolveSparse, and ResolveSparse with pathsOnly.
func solveSparse(g *Graph, warm *Solution, pathsOnly bool, h *Hooks) (*Solution, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	s := newSparse(g)
	if err := s.emptyLines(); err != nil {
		return nil, err
	}
	if err := h.stop(); err != nil {
		return nil, err
	}
	if warm != nil {
		if err := s.startWarm(warm); err != nil {
			return nil, err
		}
		// Paths alone settle a small change in milliseconds, but a row
		// whose minimum dropped far costs thousands of scanned rows (on
		// BenchmarkSparse 3,000–5,000, where the warm auction costs about
		// as much as 200,000): try them for a quarter of the rows first.
		limit := s.n / 4
		if pathsOnly {
			limit = 0
		}
		done, err := s.finish(limit, h.stopOnly())
		if err != nil {
			return nil, err
		}
		if done {
			h.progress(1)
			return s.solution(), nil
		}
	}
	if err := s.auction(warm != nil, h.sub(0, 0.5)); err != nil {
		return nil, err
	}
	if _, err := s.finish(0, h.sub(0.5, 1)); err != nil {
		return nil, err
	}
	return s.solution(), nil
}

// sparseLSAP is the state of SolveSparse: potentials, assignment and the
// scratch of the augmenting path search.
type sparseLSAP struct {
	g       *Graph
	n       int
	u, v    []float64
	col4row []int
	row4col []int
	ops     int    // units of work since the start, for Stop polls
	limit   int    // ops at which finish gives up
	dead    []bool // rows closed by a failed search (see finish)
	stuck   int    // first row without an augmenting path, or −1

	// group[i] numbers the distinct edge ranges; rows of one group are
	// identical, and a search scans only the one with the smallest
	// offset (see scanRow). shared is false when no two rows share a range.
	// Matched identical rows have equal u (each is tight on its edge and
	// feasible on the other's), so in exact arithmetic a search scans one
	// row per group: a group of dummy rows costs one scan, not one each.
	group  []int32
	shared bool

	// scratch of augment: per-column labels valid when mark[j] >= 2·stamp
	stamp     uint32
	mark      []uint32 // 2·stamp: labelled, 2·stamp+1: settled
	d         []float64
	pred      []int32
	heap      colHeap
	rows      []int   // rows settled in the current search, in order
	cols      []int32 // columns settled in the current search, in order
	grpMark   []uint32
	grpOffset []float64
}

func newSparse(g *Graph) *sparseLSAP {
	n := g.N
	s := &sparseLSAP{
		g: g, n: n,
		u: make([]float64, n), v: make([]float64, n),
		col4row: make([]int, n), row4col: make([]int, n),
		mark: make([]uint32, n), d: make([]float64, n), pred: make([]int32, n),
		stuck: -1,
	}
	for i := range s.col4row {
		s.col4row[i], s.row4col[i] = -1, -1
	}
	s.heap = colHeap{pos: make([]int32, n), d: s.d, row4col: s.row4col}
	s.groups()
	return s
}

// groups numbers the distinct (Lo, Hi) ranges.
func (s *sparseLSAP) groups() {
	g := s.g
	s.group = make([]int32, s.n)
	ids := make(map[[2]int]int32, s.n)
	for i := range s.group {
		key := [2]int{g.Lo[i], g.Hi[i]}
		id, ok := ids[key]
		if !ok {
			id = int32(len(ids))
			ids[key] = id
		} else {
			s.shared = true
		}
		s.group[i] = id
	}
	if s.shared {
		s.grpMark = make([]uint32, len(ids))
		s.grpOffset = make([]float64, len(ids))
	}
}

// emptyLines reports a row or a column without edges, the cheap and common
// way for a graph to have no perfect matching.
func (s *sparseLSAP) emptyLines() error {
	g := s.g
	hasEdge := make([]bool, s.n)
	var seen []bool // groups already read, so a shared range is read once
	if s.shared {
		seen = make([]bool, len(s.grpMark))
	}
	for i := 0; i < s.n; i++ {
		if g.Lo[i] == g.Hi[i] {
			return fmt.Errorf("%w: row %d has no edges", ErrNoPerfect, i)
		}
		if s.shared {
			if seen[s.group[i]] {
				continue
			}
			seen[s.group[i]] = true
		}
		for _, j := range g.Col[g.Lo[i]:g.Hi[i]] {
			hasEdge[j] = true
		}
	}
	for j, ok := range hasEdge {
		if !ok {
			return fmt.Errorf("%w: column %d has no edges", ErrNoPerfect, j)
		}
	}
	return nil
}

// tick counts one unit of work and polls h every pollEvery units.
func (s *sparseLSAP) tick(h *Hooks) error {
	if s.ops++; s.ops%pollEvery == 0 {
		return h.stop()
	}
	return nil
}

// startWarm validates warm and takes its column potentials and assignment.
func (s *sparseLSAP) startWarm(warm *Solution) error {
	if len(warm.V) != s.n || len(warm.Col4Row) != s.n {
		return fmt.Errorf("assign: warm start has len(V) = %d and len(Col4Row) = %d: need both equal to Graph.N = %d (pass nil for a cold start)", len(warm.V), len(warm.Col4Row), s.n)
	}
	for j, x := range warm.V {
		if x-x != 0 {
			return fmt.Errorf("assign: warm start V[%d] = %v: potentials must be finite", j, x)
		}
	}
	for i, j := range warm.Col4Row {
		if j < -1 || j >= s.n {
			return fmt.Errorf("assign: warm start Col4Row[%d] = %d: need a column in [0, %d) or -1 for a free row", i, j, s.n)
		}
	}
	copy(s.v, warm.V)
	s.tighten(warm.Col4Row)
	s.raiseFree()
	s.tighten(warm.Col4Row)
	return nil
}

// raiseFree raises the potential of every free column j to the largest
// feasible value, min over edges (i, j) of c−u[i]. This keeps the potentials
// feasible and the row minima unchanged, and brings j closer to the free
// rows, so that their paths end sooner; a row freed by a warm start whose
// old column can absorb the drop of its minimum gets the column back.
func (s *sparseLSAP) raiseFree() {
	g := s.g
	m := make([]float64, s.n)
	for j := range m {
		m[j] = inf
	}
	for i := 0; i < s.n; i++ {
		ui := s.u[i]
		cols, costs := g.Col[g.Lo[i]:g.Hi[i]], g.Cost[g.Lo[i]:g.Hi[i]]
		costs = costs[:len(cols)]
		for e, j := range cols {
			if x := costs[e] - ui; x < m[j] {
				m[j] = x
			}
		}
	}
	for j, i := range s.row4col {
		if i < 0 && m[j] > s.v[j] {
			s.v[j] = m[j]
		}
	}
}

// tighten sets u[i] = min over row i of c−v, which makes the potentials
// feasible on every edge, and assigns row i to col[i] when that edge can be
// made tight and the column is not taken yet. An edge (i, j) whose slack
// c−u[i]−v[j] exceeds the tightRel guard is made tight by raising v[j] by
// the slack when every other row's edge into j has at least that much slack
// (Jonker and Volgenant's reduction transfer); otherwise row i is left free.
// After an auction every assigned edge is within ε of tight, and on
// tie-heavy costs (small integers) freeing all the inexact ones left most
// rows to long shortest-path searches.
func (s *sparseLSAP) tighten(col []int) {
	g, v, n := s.g, s.v, s.n
	for j := range s.row4col {
		s.row4col[j] = -1
	}
	slack := make([]float64, n)
	for i := 0; i < n; i++ {
		cols, costs := g.Col[g.Lo[i]:g.Hi[i]], g.Cost[g.Lo[i]:g.Hi[i]]
		m, cj, want := inf, inf, col[i]
		for e, j := range cols {
			h := costs[e] - v[j]
			if h < m {
				m = h
			}
			if int(j) == want && costs[e] < cj {
				cj = costs[e]
			}
		}
		s.u[i] = m
		s.col4row[i] = -1
		if want < 0 || cj == inf || s.row4col[want] >= 0 {
			continue
		}
		s.col4row[i], s.row4col[want] = want, i
		if sl := cj - v[want] - m; sl > tightRel*(math.Abs(cj)+math.Abs(v[want])+math.Abs(m)) {
			slack[i] = sl
		}
	}
	// room[j]: the least slack of an edge into j from a row other than
	// j's own.
	room := make([]float64, n)
	for j := range room {
		room[j] = inf
	}
	for i := 0; i < n; i++ {
		cols, costs := g.Col[g.Lo[i]:g.Hi[i]], g.Cost[g.Lo[i]:g.Hi[i]]
		costs = costs[:len(cols)]
		ui := s.u[i]
		for e, j := range cols {
			if s.row4col[j] != i {
				if r := costs[e] - ui - v[j]; r < room[j] {
					room[j] = r
				}
			}
		}
	}
	for i, j := range s.col4row {
		switch sl := slack[i]; {
		case j < 0 || sl == 0:
		case sl <= room[j]:
			v[j] += sl
		default:
			s.col4row[i], s.row4col[j] = -1, -1
		}
	}
}

// auction is the approximate phase: Bertsekas' forward auction with
// ε-scaling on the sparse rows, as auctionInit on dense ones (θ = 4,
// Gauss–Seidel bids from a stack of free rows), from prices p = −v and the
// current assignment. It leaves v = −p and the rows whose assigned edge is
// tight (tighten).
//
// A cold start runs ε from a quarter of the cost range down to 1e-9 of it.
// A warm start runs ε from 3e-3 down to 1e-5 of the range only: the
// potentials of an exact solution are degenerate (after the augmenting paths
// many rows have several tight edges), so freed rows bidding at a tiny ε
// start wars of ε-sized bids, and shortest paths from them explore
// thousands of rows each; a few coarse phases spread the change first. On
// BenchmarkSparse (n = 50,000, d = 8, k = 32, 1% violated edges added) this
// made the warm re-solve 0.6 s instead of 7 s with paths alone, and ending
// at 1e-5 instead of 1e-9 left the paths as short as after a cold start.
//
// On a sparse graph a price war need not end: without a perfect matching
// the prices of an over-demanded set of columns rise for ever, and a nearly
// deficient graph makes wars long. The auction therefore stops after
// auctionWork edge scans per edge of g and leaves the rest, including the
// proof of infeasibility, to the augmenting paths, which are exact whatever
// the prices.
func (s *sparseLSAP) auction(warm bool, h *Hooks) error {
	g, n := s.g, s.n
	lo, hi := costRange(g.Cost)
	if !(hi > lo) || fewValues(g.Cost) {
		s.tighten(s.col4row) // exact ties: paths alone are faster
		return nil
	}
	// costScale, not hi−lo: one huge edge (a 1e20 on warmStart's cyclic
	// candidates) made every price, and so every potential of the paths
	// that follow, too coarse to tell the other costs apart (auctionInit).
	span := costScale(g.Cost)
	p := make([]float64, n)
	for j, x := range s.v {
		p[j] = -x
	}
	owner, col4row := s.row4col, s.col4row
	free := make([]int, 0, n)
	bc := newSparseBids(g, p)
	budget := 0
	for i := 0; i < n; i++ {
		budget += g.Hi[i] - g.Lo[i]
	}
	budget *= auctionWork
	const theta = 4
	eps0, epsMin := span/theta, span*1e-9 // as auctionInit
	if warm {
		eps0, epsMin = span*3e-3, span*1e-5
	}
	// ε runs geometrically from eps0 to exactly epsMin with ratio at most 1/θ.
	phases := max(1, int(math.Ceil(math.Log(eps0/epsMin)/math.Log(theta))))
	ratio := math.Pow(epsMin/eps0, 1/float64(phases))
	for phase, eps := 0, eps0; phase <= phases && bc.work < budget; phase, eps = phase+1, eps*ratio {
		h.progress(float64(phase) / float64(phases+1))
		if err := h.stop(); err != nil {
			return err
		}
		if phase == phases {
			eps = epsMin
		}
		// Keep the rows that already satisfy ε-complementary slackness for
		// the new ε; the rest bid again.
		free = free[:0]
		for i := n - 1; i >= 0; i-- {
			j := col4row[i]
			if j >= 0 {
				if w1, _, _, wj := bc.best2(i, j); wj <= w1+eps {
					continue
				}
				owner[j], col4row[i] = -1, -1
			}
			free = append(free, i)
		}
		for len(free) > 0 && bc.work < budget {
			if err := s.tick(h); err != nil {
				return err
			}
			i := free[len(free)-1]
			free = free[:len(free)-1]
			w1, w2, j1, _ := bc.best2(i, -1)
			raise := eps // at least 8 ulps of the price, so that it rises
			if w2 < inf {
				raise += w2 - w1
			}
			p[j1] += max(raise, 8*ulp(p[j1]))
			if k := owner[j1]; k >= 0 {
				col4row[k] = -1
				free = append(free, k)
			}
			owner[j1], col4row[i] = i, j1
		}
	}
	for j := range p {
		s.v[j] = -p[j]
	}
	s.tighten(col4row)
	h.progress(1)
	return nil
}

// fewValues reports whether the costs take at most 12 distinct values
// among up to 4096 evenly spaced edges, as small integer costs do. The
// auction's prices are sums of fractional bids, so they break the exact ties
// of such costs into near-ties that the shortest paths must then explore one
// by one, while from exact potentials a path ends at the first of many tied
// free columns. Measured on 20,000 rows of 33 random edges with integer
// costs in [0, q) (seconds, paths alone / auction and paths): q = 2: 0.09 /
// 2.1, 4: 0.15 / 9, 8: 0.5 / 13, 12: 0.75 / 4.7, 16: 0.9 / 0.6, 64: 1.1 /
// 0.17; on continuous k-nearest-neighbour costs (n = 50,000) paths alone
// took 40 s and the auction 0.8 s. SciPy's LAPJVsp took 0.3 s for q = 4 and
// 40 s on the k-nearest-neighbour graph.
func fewValues(c []float64) bool {
	k := min(len(c), 4096)
	sample := make([]float64, k)
	for t := range sample {
		sample[t] = c[t*len(c)/k]
	}
	slices.Sort(sample)
	return len(slices.Compact(sample)) <= 12
}

// auctionWork caps the auction at this many edge reads per edge of the
// graph; on k-nearest-neighbour graphs it uses a few.
const auctionWork = 64

// sparseCacheK is the number of edges sparseBids keeps per row.
const sparseCacheK = 4

// sparseBids answers the auction's best-two queries on the sparse rows with
// prices p, keeping for every row the sparseCacheK edges with the smallest
// c+p[j] at its last full scan and the next smallest value lb, as bidCache
// does on dense rows: prices only rise, so lb stays a lower bound on every
// edge outside the cache and a query costs O(sparseCacheK) while the cached
// best value is at most lb. The cache holds columns and costs, not edge
// indices, so that a query reads one 64-byte record and the prices. work
// counts the edges read.
type sparseBids struct {
	g    *Graph
	p    []float64
	row  []bidRow
	work int
	topV [sparseCacheK + 1]float64
	topJ [sparseCacheK + 1]int32
	topC [sparseCacheK + 1]float64
}

// bidRow is one row's cache; col[t] < 0 marks an unused slot.
type bidRow struct {
	lb   float64
	cost [sparseCacheK]float64
	col  [sparseCacheK]int32
}

func newSparseBids(g *Graph, p []float64) *sparseBids {
	b := &sparseBids{g: g, p: p, row: make([]bidRow, g.N)}
	for i := range b.row {
		b.row[i].lb = -inf // forces a full scan on first use
	}
	return b
}

// best2 returns, over the edges of row i, the smallest value w1 of c+p[j],
// its column j1, a lower bound w2 >= w1 on the smallest value over edges to
// columns other than j1 (+Inf if none), and the smallest value wj over
// edges to column j (+Inf if none). Repeated edges to one column never
// count as a second choice. w2 is exact after a full scan and otherwise the
// smaller of the cached second best and lb; a bid of w2−w1+ε with it still
// leaves the row within ε of its best, which is all ε-complementary
// slackness asks.
func (b *sparseBids) best2(i, j int) (w1, w2 float64, j1 int, wj float64) {
	g, p, r := b.g, b.p, &b.row[i]
	if r.lb > -inf {
		w1, w2, j1, wj = inf, inf, -1, inf
		for t, k := range r.col {
			if k < 0 {
				break
			}
			w1, w2, j1, wj = best2Step(r.cost[t]+p[k], int(k), j, w1, w2, j1, wj)
		}
		b.work += sparseCacheK
		if w1 <= r.lb && (j < 0 || wj <= r.lb) {
			return w1, math.Min(w2, r.lb), j1, wj
		}
	}
	// Full scan keeping the sparseCacheK+1 smallest edges in sorted order.
	cols, costs := g.Col[g.Lo[i]:g.Hi[i]], g.Cost[g.Lo[i]:g.Hi[i]]
	costs = costs[:len(cols)]
	b.work += len(cols)
	topV, topJ, topC, m := &b.topV, &b.topJ, &b.topC, 0
	thr := inf
	w1, w2, j1, wj = inf, inf, -1, inf
	for e, k := range cols {
		x := costs[e] + p[k]
		w1, w2, j1, wj = best2Step(x, int(k), j, w1, w2, j1, wj)
		if x >= thr {
			continue
		}
		if m == len(topV) {
			m--
		}
		t := m
		for t > 0 && topV[t-1] > x {
			topV[t], topJ[t], topC[t] = topV[t-1], topJ[t-1], topC[t-1]
			t--
		}
		topV[t], topJ[t], topC[t] = x, k, costs[e]
		m++
		if m == len(topV) {
			thr = topV[m-1]
		}
	}
	for t := range r.col {
		r.col[t] = -1
		if t < m {
			r.col[t], r.cost[t] = topJ[t], topC[t]
		}
	}
	r.lb = inf
	if m > sparseCacheK {
		r.lb = topV[sparseCacheK]
	}
	return w1, w2, j1, wj
}

// best2Step adds the value x of an edge to column k to the running minima
// of best2.
func best2Step(x float64, k, j int, w1, w2 float64, j1 int, wj float64) (float64, float64, int, float64) {
	if k == j && x < wj {
		wj = x
	}
	if x < w2 {
		switch {
		case x < w1:
			if k != j1 {
				w2 = w1
			}
			w1, j1 = x, k
		case k != j1:
			w2 = x
		}
	}
	return w1, w2, j1, wj
}

// finish augments every free row along a shortest path, polling h. A row
// without an augmenting path is skipped and the error names the size of a
// maximum matching: the rows R reached by the failed search are matched to
// exactly the columns C they reach, one fewer than R (a Hall violator), so
// no later path can leave R∪C for a free column nor change the matching
// inside it (by induction, no row of R ever gets a path). Later searches
// therefore skip the rows of R (dead), and the failures cost one pass over
// the graph in all. After a failure the potentials no longer matter.
//
// With limit > 0, finish gives up, returning false, once the searches have
// scanned limit rows; the paths found so far stay (every augmentation
// keeps the potentials feasible and tight) and an interrupted search
// changes nothing.
func (s *sparseLSAP) finish(limit int, h *Hooks) (bool, error) {
	var free []int
	for i, j := range s.col4row {
		if j < 0 && (s.dead == nil || !s.dead[i]) {
			free = append(free, i)
		}
	}
	s.limit = math.MaxInt
	if limit > 0 {
		s.limit = s.ops + limit
	}
	for k, i := range free {
		if s.dead != nil && s.dead[i] {
			continue
		}
		found, err := s.augment(i, h)
		if err != nil {
			return false, err
		}
		if s.ops >= s.limit {
			return false, nil
		}
		if !found {
			if s.stuck < 0 {
				s.stuck = i
				s.dead = make([]bool, s.n)
			}
			for _, r := range s.rows {
				s.dead[r] = true
			}
		}
		if k&63 == 0 {
			h.progress(float64(k) / float64(len(free)))
		}
	}
	if s.stuck >= 0 {
		matched := 0
		for _, j := range s.col4row {
			if j >= 0 {
				matched++
			}
		}
		return false, fmt.Errorf("%w: a maximum matching covers %d of %d rows (row %d has no augmenting path)", ErrNoPerfect, matched, s.n, s.stuck)
	}
	h.progress(1)
	return true, nil
}

// augment finds a shortest augmenting path from the free row cur by
// Dijkstra's algorithm on the reduced costs c−u−v (non-negative on every
// edge), with column labels in a binary heap, updates the potentials so
// that they stay feasible and tight on the assignment (Crouse 2016, as
// lsap.augment), and flips the path. It returns false, changing nothing,
// when no free column is reachable or the search reaches s.limit, and h's
// Stop error when h stops it.
func (s *sparseLSAP) augment(cur int, h *Hooks) (bool, error) {
	s.stamp++
	lab, set := 2*s.stamp, 2*s.stamp+1
	s.rows, s.cols = s.rows[:0], s.cols[:0]
	s.heap.h = s.heap.h[:0]
	minVal, i, sink := 0.0, cur, int32(-1)
	for {
		s.rows = append(s.rows, i)
		if err := s.tick(h); err != nil {
			return false, err
		}
		if s.ops >= s.limit {
			return false, nil
		}
		s.scanRow(i, minVal, lab, set)
		if len(s.heap.h) == 0 {
			return false, nil
		}
		j := s.heap.pop()
		s.mark[j] = set
		s.cols = append(s.cols, j)
		minVal = s.d[j]
		if s.row4col[j] < 0 {
			sink = j
			break
		}
		i = s.row4col[j]
	}
	for _, j := range s.cols {
		s.v[j] -= minVal - s.d[j]
	}
	s.u[cur] += minVal
	for k, i := range s.rows[1:] {
		s.u[i] += minVal - s.d[s.cols[k]] // row rows[k+1] was reached through cols[k]
	}
	for j := int(sink); ; {
		i := int(s.pred[j])
		s.row4col[j] = i
		j, s.col4row[i] = s.col4row[i], j
		if i == cur {
			break
		}
	}
	return true, nil
}

// scanRow relaxes the edges of row i, reached at distance minVal, to the
// columns not settled yet. Labels below minVal, which only rounding can
// produce, are raised to it so that the search stays monotone. A row whose
// edge range was already scanned in this search from an offset
// minVal−u no larger is skipped: all its labels would be dominated.
func (s *sparseLSAP) scanRow(i int, minVal float64, lab, set uint32) {
	g := s.g
	base := minVal - s.u[i]
	if s.dead != nil && s.dead[i] {
		return
	}
	if s.shared {
		k := s.group[i]
		if s.grpMark[k] == s.stamp && s.grpOffset[k] <= base {
			return
		}
		s.grpMark[k], s.grpOffset[k] = s.stamp, base
	}
	cols, costs := g.Col[g.Lo[i]:g.Hi[i]], g.Cost[g.Lo[i]:g.Hi[i]]
	costs = costs[:len(cols)]
	for e, j := range cols {
		m := s.mark[j]
		if m == set {
			continue
		}
		r := base + costs[e] - s.v[j]
		if r < minVal {
			r = minVal
		}
		if m != lab {
			s.mark[j], s.d[j], s.pred[j] = lab, r, int32(i)
			s.heap.push(j)
		} else if r < s.d[j] {
			s.d[j], s.pred[j] = r, int32(i)
			s.heap.up(int(s.heap.pos[j]))
		}
	}
}

// solution copies the state into a Solution; Cost sums the cheapest edge
// of each row to its column.
func (s *sparseLSAP) solution() *Solution {
	g := s.g
	sol := &Solution{Col4Row: s.col4row, U: s.u, V: s.v}
	for i, j := range s.col4row {
		c := inf
		for e, k := range g.Col[g.Lo[i]:g.Hi[i]] {
			if int(k) == j {
				c = math.Min(c, g.Cost[g.Lo[i]+e])
			}
		}
		sol.Cost += c
	}
	return sol
}

// colHeap is a binary min-heap of columns keyed by d, ties broken in favour
// of free columns (the search ends sooner), with each column's position for
// decrease-key.
type colHeap struct {
	h       []int32
	pos     []int32
	d       []float64
	row4col []int
}

func (q *colHeap) less(a, b int32) bool {
	da, db := q.d[a], q.d[b]
	return da < db || da == db && q.row4col[a] < 0 && q.row4col[b] >= 0
}

func (q *colHeap) push(j int32) {
	q.pos[j] = int32(len(q.h))
	q.h = append(q.h, j)
	q.up(len(q.h) - 1)
}

func (q *colHeap) up(k int) {
	h, j := q.h, q.h[k]
	for k > 0 {
		p := (k - 1) / 2
		if !q.less(j, h[p]) {
			break
		}
		h[k] = h[p]
		q.pos[h[k]] = int32(k)
		k = p
	}
	h[k] = j
	q.pos[j] = int32(k)
}

func (q *colHeap) pop() int32 {
	h := q.h
	top := h[0]
	last := h[len(h)-1]
	h = h[:len(h)-1]
	q.h = h
	if len(h) == 0 {
		return top
	}
	k := 0
	for {
		c := 2*k + 1
		if c >= len(h) {
			break
		}
		if c+1 < len(h) && q.less(h[c+1], h[c]) {
			c++
		}
		if !q.less(h[c], last) {
			break
		}
		h[k] = h[c]
		q.pos[h[k]] = int32(k)
		k = c
	}
	h[k] = last
	q.pos[last] = int32(k)
	return top
}
