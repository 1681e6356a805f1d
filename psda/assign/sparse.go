package assign

import (
	"errors"
	"fmt"
	"math"
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
// rows (BenchmarkSparse). Memory is O(n) besides g.
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
