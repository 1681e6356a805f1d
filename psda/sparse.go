package psda

// This file is the sparse exact path (docs/method.md, "The sparse exact path"):
// for sizes whose dense cost matrices do not fit, each stage keeps only
// candidate edges (the sparseK cheapest of every row and column under the
// cross part of the cost, found in one float64 Gram pass that also yields
// the exact row and column terms), solves the assignment on them, checks
// every other edge against the lists' thresholds, and prices the rows that
// check cannot clear from the features in further passes, adding the
// violators until the duals are feasible for the full problem. The
// result is then the dense optimum, certified, and no n_s×n_t or P×P matrix
// is ever stored: memory is O((n_s+n_t)·(d + sparseK)).

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/psda-dev/psda/psda/assign"
)

// Solver names accepted in Config.Solver.
const (
	Auto   = "auto"   // dense while its matrices are small, sparse beyond
	Dense  = "dense"  // dense cost matrices (memory O(n_s·n_t + P²))
	Sparse = "sparse" // candidate edges plus pricing passes (memory O(n·(d+K)))
)

// sparseK is the number of candidate edges kept per row and per column by
// the first pass of Stage 2, and a third of that of Stage 1, whose nearest
// neighbours predict the optimal partners less well (at n = 50,000, d = 512,
// 64 per row left 100,000 violated edges and a second full pricing pass;
// at n = 20,000, 192 left 3,500 and a pass over 2% of the rows). sparseAdd
// is the number of edges a pricing pass keeps per row (96: clustered data
// can have dozens of violated edges per row after the first solve).
// Variables so that tests can force several pricing rounds.
var sparseK, sparseAdd = 64, 96

// stage2K is the number of Stage 2 candidates per row and column for
// features of dimension d: sparseK, and three times that (Stage 1's) when
// d <= directDim, where the candidate pass costs little and 64 nearest
// reflections −w_r miss the partners of the points at the rim of the cloud
// (the paper's 2-D experiment, n = 4000, six seeds: Stage 2 0.56–2.13 s with
// 64, the worst seed after three full pricing rounds, 1.09–1.64 s with 192,
// 1.21–1.79 s with 256, 2.2–2.4 s with 384).
func stage2K(d int) int {
	if d <= directDim {
		return 3 * sparseK
	}
	return sparseK
}

// sparseTrace, when set (benchmarks), receives one line per sparse round.
var sparseTrace func(format string, args ...any)

func trace(format string, args ...any) {
	if sparseTrace != nil {
		sparseTrace(format, args...)
	}
}

// denseLimit is the size in bytes of the largest dense cost matrix that
// Auto builds; beyond it the stage goes sparse.
var denseLimit int64 = 3 << 30

// useSparse reports whether a stage whose dense matrix takes bytes runs on
// the sparse path.
func useSparse(cfg Config, bytes int64) bool {
	switch cfg.Solver {
	case Dense:
		return false
	case Sparse:
		return true
	}
	return bytes > denseLimit
}

// sparseStages reports which stages of a Match of these sizes run on the
// sparse path; sparse2 is false with one stage.
func sparseStages(ns, nt int, cfg Config) (sparse1, sparse2 bool) {
	s1, s2 := stageBytes(ns, nt)
	return useSparse(cfg, s1), cfg.Stages == 2 && useSparse(cfg, s2)
}

// lowDimPairs is the least number of pairs from which Auto solves the
// Stage 2 of a low-dimensional linear MMD on the sparse path (lowDimSparse).
const lowDimPairs = 2000

// lowDimSparse reports whether Auto sends Stage 2 to the sparse path although
// its dense matrix fits: a linear-kernel MMD of features with at most
// directDim dimensions, at least lowDimPairs pairs and at most 1% duplicated
// rows in either domain. There the dense relaxation is auction-bound; on the
// paper's 2-D Gaussian experiment (n = 4000, six seeds, same bounds) Stage 2
// took 1.7–3.1 s dense (median 2.3 s) and 1.0–1.55 s sparse (stage2K);
// at n = 2000 the whole matching 0.8–1.0 s and 0.4–0.65 s (three seeds).
// Not for the RBF mixture (the same data, whole matching: 1.6–2.1 s dense,
// 2.3–2.4 s sparse), nor when many rows
// tie exactly, which makes the candidate lists degenerate (ReLU-like rows, a
// quarter of them at 0: Stage 2 18–26 s sparse against 7–15 s dense).
func lowDimSparse(src, tgt Matrix, cfg Config) bool {
	switch {
	case cfg.Solver == Dense || cfg.Solver == Sparse, cfg.Discrepancy != MMD, cfg.Kernel != Linear, cfg.Stages != 2:
		return false
	case src.D > directDim || max(src.N, tgt.N) < lowDimPairs:
		return false
	}
	return duplicates(src)*100 <= src.N && duplicates(tgt)*100 <= tgt.N
}

// duplicates returns the number of rows of m equal to an earlier row.
func duplicates(m Matrix) int {
	seen := make(map[string]struct{}, m.N)
	row := make([]float64, m.D)
	key := make([]byte, 8*m.D)
	n := 0
	for i := 0; i < m.N; i++ {
		for k, v := range m.Row(i, row) {
			binary.LittleEndian.PutUint64(key[8*k:], math.Float64bits(v+0)) // +0: −0 as 0
		}
		if _, ok := seen[string(key)]; ok {
			n++
		} else {
			seen[string(key)] = struct{}{}
		}
	}
	return n
}

// nearest keeps, for each of n items, the k (value, index, aux) entries with
// the smallest values offered so far (ties broken by worse, so that the
// result does not depend on the order of the offers). Offers better than
// the item's bound are appended to a buffer of room = 3k/2 entries; a full
// buffer is cut back to its k best (cut), whose worst becomes the bound.
// Settling an item (settle, and every reader below) cuts it to k. A max-heap
// per item, sifted at every offer, was slower (n = 20,000 clustered, Stage 1
// candidate pass: 10.1-10.8 s, now 8.2-9.0 s, 4.0-4.5 s without lists; most
// of the rest is the column lists' memory, touched at random).
type nearest struct {
	k, room int
	val     []float64
	aux     []float64
	idx     []int32
	cnt     []int32
	// bv and bj: the worst entry kept at the last cut (bv +Inf before):
	// an offer must beat it.
	bv []float64
	bj []int32
	mu []sync.Mutex // one per lockBlock items
}

const lockBlock = 64

// newNearest returns lists of k >= 1 entries for n items.
func newNearest(n, k int) *nearest {
	room := k + max(k/2, 1)
	s := &nearest{k: k, room: room, val: make([]float64, n*room), aux: make([]float64, n*room), idx: make([]int32, n*room),
		cnt: make([]int32, n), bv: make([]float64, n), bj: make([]int32, n), mu: make([]sync.Mutex, (n+lockBlock-1)/lockBlock)}
	for i := range s.bv {
		s.bv[i] = math.Inf(1)
	}
	return s
}

// bound returns a value that every entry item i does not hold is at least:
// the worst kept at its last cut (+Inf before). Cheap, for the passes'
// sinks, under i's lock.
func (s *nearest) bound(i int) float64 { return s.bv[i] }

// worse orders the entries of item i by value, then by a hash of (i, index):
// deterministic, but items with tied values (duplicated feature rows) keep
// different tied partners, so that their candidates can form a matching.
func worse(i int, a float64, ai int32, b float64, bi int32) bool {
	return a > b || (a == b && tieKey(i, ai) > tieKey(i, bi))
}

// tieKey mixes an item and an index into a pseudo-random 64-bit key
// (SplitMix64's finaliser).
func tieKey(i int, j int32) uint64 {
	z := uint64(i)<<32 ^ uint64(uint32(j))
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// offer adds (v, j, aux) to item i's list if it beats the bound; the
// caller holds i's lock.
func (s *nearest) offer(i int, v float64, j int32, aux float64) {
	if !worse(i, s.bv[i], s.bj[i], v, j) {
		return
	}
	t := i*s.room + int(s.cnt[i])
	s.val[t], s.idx[t], s.aux[t] = v, j, aux
	if s.cnt[i]++; int(s.cnt[i]) == s.room {
		s.cut(i)
	}
}

// settle cuts item i's list to its k best, if it holds more, and sets its
// bound if it holds exactly k uncut.
func (s *nearest) settle(i int) {
	if c := int(s.cnt[i]); c > s.k || c == s.k && math.IsInf(s.bv[i], 1) {
		s.cut(i)
	}
}

// cut keeps the k best of item i's entries (partial selection, expected
// O(room)) and makes the worst of them the bound.
func (s *nearest) cut(i int) {
	base := i * s.room
	n := int(s.cnt[i])
	val, idx, aux := s.val[base:base+n], s.idx[base:base+n], s.aux[base:base+n]
	worseAt := func(a, b int) bool { return worse(i, val[a], idx[a], val[b], idx[b]) }
	swap := func(a, b int) {
		val[a], val[b] = val[b], val[a]
		idx[a], idx[b] = idx[b], idx[a]
		aux[a], aux[b] = aux[b], aux[a]
	}
	// Quickselect: afterwards entries [0, k) are the k best.
	lo, hi := 0, n-1
	for lo < hi {
		mid := lo + (hi-lo)/2 // median of three as the pivot, moved to hi
		if worseAt(lo, mid) {
			swap(lo, mid)
		}
		if worseAt(mid, hi) {
			swap(mid, hi)
			if worseAt(lo, mid) {
				swap(lo, mid)
			}
		}
		swap(mid, hi)
		p := lo
		for q := lo; q < hi; q++ {
			if worseAt(hi, q) { // q better than the pivot
				swap(p, q)
				p++
			}
		}
		swap(p, hi)
		switch {
		case p == s.k-1 || p == s.k:
			lo = hi // [0, p) better than p: done
		case p < s.k:
			lo = p + 1
		default:
			hi = p - 1
		}
	}
	s.cnt[i] = int32(s.k)
	w := 0
	for q := 1; q < s.k; q++ {
		if worseAt(q, w) {
			w = q
		}
	}
	s.bv[i], s.bj[i] = val[w], idx[w]
}

// reset empties item i's list.
func (s *nearest) reset(i int) {
	s.cnt[i], s.bv[i], s.bj[i] = 0, math.Inf(1), 0
}

// priceSink returns the callbacks of a pass (see pricedStage.pass) that
// offer every edge (a, b) with cross part x to item a, valued at its
// reduced cost c·x − z[a] − w[b] and with aux x; the edges (a, a) when
// noDiag and those with skip(a, b) are left out. skip is only asked about
// edges that would enter the list, so it may cost more than the rest.
func (s *nearest) priceSink(c float64, z, w []float64, noDiag bool, skip func(a, b int) bool) (func(a, b0 int, xs []float64), func(b, a0 int, xs []float64, idx []int)) {
	bound := s.bound
	row := func(a, b0 int, xs []float64) {
		mu := &s.mu[a/lockBlock]
		mu.Lock()
		za, lim := z[a], bound(a)
		ws := w[b0 : b0+len(xs)]
		for k, x := range xs {
			if r := c*x - za - ws[k]; r <= lim && !(noDiag && a == b0+k) && !skip(a, b0+k) {
				s.offer(a, r, int32(b0+k), x)
				lim = bound(a)
			}
		}
		mu.Unlock()
	}
	col := func(b, a0 int, xs []float64, idx []int) {
		locked, wb := -1, w[b]
		for k, x := range xs {
			a := a0 + k
			if idx != nil {
				a = idx[a]
			}
			if l := a / lockBlock; l != locked {
				if locked >= 0 {
					s.mu[locked].Unlock()
				}
				s.mu[l].Lock()
				locked = l
			}
			if r := c*x - z[a] - wb; r <= bound(a) && !(noDiag && a == b) && !skip(a, b) {
				s.offer(a, r, int32(b), x)
			}
		}
		if locked >= 0 {
			s.mu[locked].Unlock()
		}
	}
	return row, col
}

// candidates returns the sinks of a candidate pass over nr row items and
// nc column indices: every entry offered at its cross part.
func (s *nearest) candidates(nr, nc int) (func(a, b0 int, xs []float64), func(b, a0 int, xs []float64, idx []int)) {
	return s.priceSink(1, make([]float64, nr), make([]float64, nc), false, func(int, int) bool { return false })
}

// copyRow copies item i's settled list from o (same n and k).
func (s *nearest) copyRow(o *nearest, i int) {
	o.settle(i)
	n := int(o.cnt[i])
	copy(s.val[i*s.room:], o.val[i*o.room:i*o.room+n])
	copy(s.aux[i*s.room:], o.aux[i*o.room:i*o.room+n])
	copy(s.idx[i*s.room:], o.idx[i*o.room:i*o.room+n])
	s.cnt[i], s.bv[i], s.bj[i] = o.cnt[i], o.bv[i], o.bj[i]
}

// indices returns sub, or every index below n when sub is nil.
func indices(sub []int, n int) []int {
	if sub != nil {
		return sub
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	return all
}

// each calls f(j, v, aux) for the entries of item i's settled list.
func (s *nearest) each(i int, f func(j int, v, aux float64)) {
	s.settle(i)
	for t := i * s.room; t < i*s.room+int(s.cnt[i]); t++ {
		f(int(s.idx[t]), s.val[t], s.aux[t])
	}
}

// entries returns the range [t0, t1) of item i's settled list in val, idx
// and aux.
func (s *nearest) entries(i int) (t0, t1 int) {
	s.settle(i)
	return i * s.room, i*s.room + int(s.cnt[i])
}

// edge is a candidate edge to column b with cross part x.
type edge struct {
	b int32
	x float64
}

// edges is the candidate edge set of a sparse stage, by solver row.
type edges [][]edge

// add appends edge (a, b) with cross part x; normalise restores the order.
func (e edges) add(a, b int, x float64) { e[a] = append(e[a], edge{int32(b), x}) }

// normalise sorts every row by column and drops repeated columns, keeping
// the first added; it returns the number of edges.
func (e edges) normalise() int {
	n := 0
	for a, row := range e {
		slices.SortStableFunc(row, func(p, q edge) int { return int(p.b) - int(q.b) })
		e[a] = slices.CompactFunc(row, func(p, q edge) bool { return p.b == q.b })
		n += len(e[a])
	}
	return n
}

// has reports whether the normalised row a holds column b.
func (e edges) has(a, b int) bool {
	_, ok := slices.BinarySearchFunc(e[a], int32(b), func(p edge, b int32) int { return int(p.b) - int(b) })
	return ok
}

// exactCross replaces the cross part of every edge by at(a, b), computed
// from the features, on all cores.
func exactCross(adj edges, at func(a, b int) float64) {
	parallelRows(len(adj), func(a0, a1 int) {
		for a := a0; a < a1; a++ {
			for k, e := range adj[a] {
				adj[a][k].x = at(a, int(e.b))
			}
		}
	})
}

// priceTol is the dual-feasibility tolerance of a pricing pass, the one
// Match uses for the dense certificate: 1e-9 of the largest cost, with no
// absolute part, since PSDA's costs carry 1/k² and the feature scale (the
// paper's 2-D experiment with k = 64 has entries near 1e-7, where an
// absolute 1e-9 had let the sparse path stop 1e-5 above the optimum).
func priceTol(c []float64) float64 {
	scale := 0.0
	for _, x := range c {
		scale = max(scale, math.Abs(x))
	}
	return 1e-9 * scale
}

// pricedStage is one sparse stage as the driver solve sees it: an
// assignment whose rows a < rows have their edges to the columns b < cols
// priced by Gram passes, the cost of edge (a, b) with cross part x being
// (r[a] + c[b] + coef·x)·scale; any other rows or columns of the assignment
// (dummies) have all their edges in the graph.
type pricedStage struct {
	rows, cols  int
	scale, coef float64
	noDiag      bool // edge (a, a) does not exist
	// symmetric: the costs and the candidate graph are symmetric (link adds
	// both orientations), so the potentials can be too (see solve), and the
	// full pass computes the upper triangle only.
	symmetric bool
	terms     func() (r, c []float64)
	// colPot returns, for each priced column b, the largest potential among
	// the assignment columns that stand for b (its copies), in a new slice.
	colPot func(v []float64) []float64
	// graph builds the assignment's sparse cost matrix from the candidates
	// with the current terms.
	graph func(adj edges) *assign.Graph
	// pass runs a Gram pass over the rows in sub (nil: all) and hands every
	// dense edge's cross part to row (edges (a, b0+k)) or col (edges
	// (a0+k, b), or (idx[a0+k], b) when idx is not nil), concurrently; in
	// float32 with f32 (cross parts then within eR[a] + eC[b]).
	pass func(sub []int, f32 bool, row func(a, b0 int, xs []float64), col func(b, a0 int, xs []float64, idx []int))
	// passCols runs a Gram pass over the columns in cols and calls
	// visit(a, b, x) for every dense edge into them, concurrently.
	passCols func(cols []int, visit func(a, b int, x float64))
	phase    int
	// tauR[a] and tauC[b] bound from below the cross part of every edge
	// (a, b) outside the candidate graph: the largest of the K kept by the
	// candidate pass for row a and for column b, less the error bounds for
	// a float32 pass (+Inf when the list holds the whole line).
	tauR, tauC []float64
	// eR and eC, when not nil, bound a float32 pass's error in the cross
	// part of edge (a, b) by eR[a] + eC[b]; the pricing passes then run in
	// float32 (price). at returns the exact cross part of edge (a, b).
	eR, eC []float64
	at     func(a, b int) float64
}

// screen sets tail[a] to a lower bound on the reduced cost of every edge of
// row a outside the candidate graph into the columns b with !skip[b] (skip
// nil: all), min_b cs·max(tauR[a], tauC[b]) − z[a] − w[b] with cs =
// coef·scale > 0 (such an edge is in neither its row's nor its column's
// list), in O((rows + cols)·log cols): over the columns sorted by tauC, a
// prefix maximum of w serves those with tauC[b] <= tauR[a] and a suffix
// minimum of cs·tauC[b] − w[b] the others.
func (st *pricedStage) screen(z, w, tail []float64, skip []bool) {
	cs := st.coef * st.scale
	order := make([]int, 0, len(w))
	for b := range w {
		if skip == nil || !skip[b] {
			order = append(order, b)
		}
	}
	slices.SortFunc(order, func(p, q int) int { return cmp.Compare(st.tauC[p], st.tauC[q]) })
	pre := make([]float64, len(order)+1) // max w over order[:k]
	pre[0] = math.Inf(-1)
	for k, b := range order {
		pre[k+1] = max(pre[k], w[b])
	}
	suf := make([]float64, len(order)+1) // min of cs·tauC − w over order[k:]
	suf[len(order)] = math.Inf(1)
	for k := len(order) - 1; k >= 0; k-- {
		b := order[k]
		suf[k] = min(suf[k+1], cs*st.tauC[b]-w[b])
	}
	for a, ta := range st.tauR {
		k, _ := slices.BinarySearchFunc(order, ta, func(b int, t float64) int { return cmp.Compare(st.tauC[b], t) })
		// For k = 0 the first term is +Inf; for ta = +Inf the tail is +Inf.
		tail[a] = min(cs*ta-pre[k], suf[k]) - z[a]
	}
}

// limit returns the value an entry must beat to enter item i's settled
// list: the largest it keeps when the list is full, +Inf otherwise (the
// list then holds every value offered). Every value offered and not kept is
// at least limit(i).
func (s *nearest) limit(i int) float64 {
	s.settle(i)
	if int(s.cnt[i]) < s.k {
		return math.Inf(1)
	}
	return s.bv[i]
}

// thresholds returns limit(i) for every item of s.
func (s *nearest) thresholds() []float64 {
	tau := make([]float64, len(s.cnt))
	for i := range tau {
		tau[i] = s.limit(i)
	}
	return tau
}

// solve solves the stage on the candidate edges adj and prices until the
// potentials hold for every dense edge: the result is then optimal for the
// dense problem, with potentials that prove it.
//
// With z[a] = U[a] − r[a]·scale and w[b] = V[b] − c[b]·scale the reduced cost
// of edge (a, b) is coef·x·scale − z[a] − w[b], whatever the terms. A
// pricing pass keeps, for each row it visits, the sparseAdd edges of least
// reduced cost outside the graph (kept); every other edge of the row then
// costs at least the largest kept one, top. After a re-solve (whose warm
// start moves few potentials: it only grows shortest paths from the rows it
// frees) the kept edges are checked exactly, violators join the graph, and a
// row stays certified while top − Δz[a] − max_b Δw[b] >= 0 (changes since
// its pricing); only the rows where that fails are priced again, by a pass
// over those rows alone. The candidate lists serve as the first pricing
// (screen): a row whose bound from them is feasible needs no pass, so that
// when the candidates hold the optimum, as they mostly do, no full pricing
// pass runs; after a re-solve the same bound, at the new potentials, clears
// rows whose tails the moves used up. The terms come from the float64
// candidate pass (or are constants, stage1Model.deferSums) and stay fixed:
// pricing passes (float32 where the model bounds their error, see price)
// never change them.
func (st *pricedStage) solve(adj edges, mon *Monitor) (*assign.Solution, error) {
	hooks := mon.hooks(st.phase)
	kept := newNearest(st.rows, sparseAdd)
	// tail[a]: a lower bound, at the potentials of pass stamp[a] (z0[a],
	// w0[stamp[a]]), on the reduced cost of every edge of row a outside the
	// graph and its kept list.
	z0, stamp, tail := make([]float64, st.rows), make([]int, st.rows), make([]float64, st.rows)
	need64 := make([]bool, st.rows) // rows whose next pricing runs in float64 (see price)
	var w0 [][]float64              // w at each pass
	rt, ct := st.terms()
	var sol *assign.Solution
	var g *assign.Graph
	bulk := false // the last check added many violators per row in many rows
	resolve := func() (err error) {
		adj.normalise()
		g = st.graph(adj)
		switch {
		case sol == nil:
			sol, err = assign.SolveSparse(g, nil, hooks)
		case bulk:
			// Dozens of violators a row in many rows: their minima dropped
			// far, so their augmenting paths are long, and the potentials
			// move nearly everywhere anyway, sending most rows back to
			// pricing; a warm auction spreads the change at once (n =
			// 50,000 clustered Stage 1: 2.2 M edges added in 22,000 rows,
			// 1.8 s instead of 37 s). With a few violators a row (its
			// Stage 2: 133,000 in 37,000 rows) the paths take 8 s and keep
			// most tails valid, where the auction cost a full pricing pass.
			sol, err = assign.SolveSparse(g, sol, hooks)
		default:
			sol, err = assign.ResolveSparse(g, sol, hooks)
		}
		return err
	}
	// potentials returns z and w of the current solution.
	potentials := func() (z, w []float64) {
		z, w = make([]float64, st.rows), st.colPot(sol.V)
		for a := range z {
			z[a] = sol.U[a] - rt[a]*st.scale
		}
		for b := range w {
			w[b] -= ct[b] * st.scale
		}
		if st.symmetric {
			// With a symmetric cost matrix and graph, (v, u) is as feasible
			// and optimal as (u, v), and so is their mean: it prices both
			// orientations of an edge at the mean of their reduced costs,
			// which spares the edges that only the solver's arbitrary split
			// of the potentials made look violated.
			for a := range z {
				z[a] = (z[a] + w[a]) / 2
				w[a] = z[a]
			}
		}
		return z, w
	}
	if err := resolve(); err != nil {
		return nil, err
	}
	trace("first solve: %d edges, cost %.12g", len(g.Col), sol.Cost)
	sub := []int(nil) // rows to price; nil: all
	// screens: the candidate lists' thresholds bound the edges outside them.
	screens := st.tauR != nil && st.coef*st.scale > 0
	if screens {
		z, w := potentials()
		tol := priceTol(g.Cost)
		hubs := st.screenSplit(z, w, tail, tol)
		if len(hubs) > 0 {
			// The edges into the columns of largest w, priced by a column
			// pass into kept lists: the rows' kept edges are checked after
			// every re-solve, and their tails cover the hubs with margin.
			best := newNearest(st.rows, sparseAdd)
			cs := st.coef * st.scale
			st.passCols(hubs, func(a, b int, x float64) {
				if st.noDiag && a == b {
					return
				}
				r := cs*x - z[a] - w[b]
				mu := &best.mu[a/lockBlock]
				mu.Lock()
				if r <= best.bound(a) && !adj.has(a, b) {
					best.offer(a, r, int32(b), x)
				}
				mu.Unlock()
			})
			if err := mon.err(); err != nil {
				return nil, err
			}
			for a := range tail {
				kept.copyRow(best, a)
				tail[a] = min(tail[a], kept.limit(a))
			}
		}
		sub = []int{}
		for a, t := range tail {
			if z0[a] = z[a]; t < -tol {
				sub = append(sub, a)
			}
		}
		w0 = append(w0, w)
		trace("screen: %d of %d rows to price, %d hub columns priced", len(sub), st.rows, len(hubs))
	}
	for pass := 0; ; pass++ {
		if st.symmetric && len(sub) > st.rows/2 {
			// A pass over some rows costs their share of a full pass, but a
			// symmetric full pass computes half the Gram matrix only (n =
			// 20,000 clustered, Stage 2: full pass 12.6 s, 5,709 rows 5.6 s;
			// Stage 1: all rows 6.4 s, 15,719 of them 4.0 s).
			sub = nil
		}
		dirty := false
		if sub == nil || len(sub) > 0 {
			z, w := potentials()
			best := newNearest(st.rows, sparseAdd)
			if err := st.price(best, sub, z, w, adj.has, need64, priceTol(g.Cost), mon); err != nil {
				return nil, err
			}
			for _, a := range indices(sub, st.rows) {
				kept.copyRow(best, a)
				z0[a], stamp[a], tail[a] = z[a], len(w0), kept.limit(a)
			}
			w0 = append(w0, w)
		}
		for iter := 0; ; iter++ {
			if dirty {
				if err := resolve(); err != nil {
					return nil, err
				}
			}
			tol := priceTol(g.Cost)
			z, w := potentials()
			// rise[b]: the largest rise of w[b] since a pass some row's
			// certificate still rests on; capK[k]: the largest since pass k.
			rise := slices.Repeat([]float64{math.Inf(-1)}, len(w))
			capK := slices.Repeat([]float64{math.Inf(-1)}, len(w0))
			used := make([]bool, len(w0))
			for _, k := range stamp {
				used[k] = true
			}
			for k, old := range w0 {
				if used[k] {
					for b, v := range w {
						rise[b] = max(rise[b], v-old[b])
						capK[k] = max(capK[k], v-old[b])
					}
				}
			}
			added, violRows := 0, 0
			slack := make([]float64, st.rows) // top − Δz: the tail's margin
			limit := make([]float64, st.rows) // the largest rise since its pass
			for a := range slack {
				n := added
				kept.each(a, func(b int, _, x float64) {
					if st.coef*x*st.scale-z[a]-w[b] < -tol && !adj.has(a, b) {
						st.link(adj, a, b, x)
						added++
					}
				})
				violRows += b2i(added > n)
				slack[a], limit[a] = tail[a]-(z[a]-z0[a]), capK[stamp[a]]
			}
			var cols []int
			sub, cols = splitCheck(slack, limit, rise, tol)
			if len(sub) > 0 && screens {
				// The candidate lists' bound at the current potentials
				// certifies rows whose tails the potentials' moves used up.
				scr := make([]float64, st.rows)
				st.screen(z, w, scr, nil)
				n0 := len(sub)
				sub = slices.DeleteFunc(sub, func(a int) bool { return scr[a] >= -tol })
				trace("  screen: %d of %d rows cleared", n0-len(sub), n0)
			}
			trace("pass %d.%d: %d edges, cost %.12g, %d violating edges added, %d rows and %d columns to price",
				pass, iter, len(g.Col), sol.Cost, added, len(sub), len(cols))
			if added == 0 && len(sub) == 0 && len(cols) > 0 {
				// The edges into the columns that rose most, priced now;
				// with the row tails below the others' rise, they complete
				// the certificate.
				added = st.priceCols(cols, z, w, tol, adj)
				if err := mon.err(); err != nil {
					return nil, err
				}
				trace("  column pass over %d: %d violating edges added", len(cols), added)
			}
			if added == 0 {
				break
			}
			dirty, bulk = true, violRows > st.rows/4 && added > 8*violRows
		}
		if len(sub) == 0 {
			return sol, nil
		}
	}
}

// price runs a pricing pass over the rows sub (nil: all) into best: each
// row keeps the sparseAdd edges outside adj (has) of least reduced cost
// under (z, w). When the stage has float32 bounds (eR), the pass runs in
// float32 (about 1.5× faster) and offers lower bounds,
// cs·x̃ − z[a] − w[b] − cs·(eR[a] + eC[b]), so that every edge a row does
// not keep still costs at least its list's limit; the kept edges then get
// their exact cross parts (aux, from at), which the violator checks read.
// A row whose float32 list holds no violator and yet cannot certify it
// (limit below −tol: more than sparseAdd edges within the error bound of
// tight) is marked in need64 and priced in float64 the next time, as are
// the rows marked before.
func (st *pricedStage) price(best *nearest, sub []int, z, w []float64, has func(a, b int) bool, need64 []bool, tol float64, mon *Monitor) error {
	cs := st.coef * st.scale
	if st.eR == nil {
		row, col := best.priceSink(cs, z, w, st.noDiag, has)
		st.pass(sub, false, row, col)
		return mon.err()
	}
	zl, wl := slices.Clone(z), slices.Clone(w)
	for a, e := range st.eR {
		zl[a] += cs * e
	}
	for b, e := range st.eC {
		wl[b] += cs * e
	}
	row, col := best.priceSink(cs, zl, wl, st.noDiag, has)
	st.pass(sub, true, row, col)
	if err := mon.err(); err != nil {
		return err
	}
	rows := indices(sub, st.rows)
	redo := []int{}
	for _, a := range rows {
		if need64[a] {
			redo = append(redo, a)
			best.reset(a)
		}
	}
	parallelRows(len(rows), func(k0, k1 int) {
		for _, a := range rows[k0:k1] {
			clean := true // no violator among the kept edges
			t0, t1 := best.entries(a)
			for t := t0; t < t1; t++ {
				b := int(best.idx[t])
				best.aux[t] = st.at(a, b)
				clean = clean && cs*best.aux[t]-z[a]-w[b] >= -tol
			}
			need64[a] = clean && best.limit(a) < -tol
		}
	})
	if len(redo) > 0 {
		trace("  %d rows priced in float64", len(redo))
		row, col := best.priceSink(cs, z, w, st.noDiag, has)
		st.pass(redo, false, row, col)
		for _, a := range redo {
			need64[a] = false
		}
	}
	return mon.err()
}

// screenSplit fills tail from the candidate lists (screen), leaving out the
// columns it returns, which the caller prices by a column pass: the 0, 1,
// 2, 4, … (at most a quarter) columns of largest w, whose potential fails
// most rows, chosen so that the column pass (rows entries a column) and the
// row pass over the rows that still fail (cols entries a row; all rows
// beyond a quarter) price the fewest entries.
func (st *pricedStage) screenSplit(z, w, tail []float64, tol float64) []int {
	order := make([]int, len(w))
	for b := range order {
		order[b] = b
	}
	slices.SortFunc(order, func(p, q int) int { return cmp.Compare(w[q], w[p]) })
	skip := make([]bool, len(w))
	work := func(c int) int64 {
		clear(skip)
		for _, b := range order[:c] {
			skip[b] = true
		}
		st.screen(z, w, tail, skip)
		fail := 0
		for _, t := range tail {
			if t < -tol {
				fail++
			}
		}
		if fail > st.rows/4 {
			fail = st.rows
		}
		return int64(c)*int64(st.rows) + int64(fail)*int64(len(w))
	}
	best, bestWork := 0, int64(math.MaxInt64)
	for c := 0; c <= len(order)/4; c = max(2*c, c+1) {
		if wk := work(c); wk < bestWork {
			best, bestWork = c, wk
		}
	}
	work(best)
	return order[:best]
}

// link adds edge (a, b) with cross part x to adj, and (b, a) too when the
// stage is symmetric, whose graph must stay symmetric (see potentials in
// solve).
func (st *pricedStage) link(adj edges, a, b int, x float64) {
	adj.add(a, b, x)
	if st.symmetric {
		adj.add(b, a, x)
	}
}

// priceCols runs a column pass over cols, adds to adj every edge into them
// whose reduced cost under (z, w) is below −tol and returns their number.
func (st *pricedStage) priceCols(cols []int, z, w []float64, tol float64, adj edges) int {
	var mu sync.Mutex
	var found []edge
	var from []int
	st.passCols(cols, func(a, b int, x float64) {
		if st.noDiag && a == b || st.coef*x*st.scale-z[a]-w[b] >= -tol {
			return
		}
		mu.Lock()
		found, from = append(found, edge{int32(b), x}), append(from, a)
		mu.Unlock()
	})
	added := 0
	for k, e := range found {
		if !adj.has(from[k], int(e.b)) {
			st.link(adj, from[k], int(e.b), e.x)
			added++
		}
	}
	if added > 0 {
		adj.normalise()
	}
	return added
}

// splitCheck decides how to certify the rows' tails after the potentials
// moved: row a's edges outside the graph and its kept list cost at least
// slack[a] − rise[b] now, and rise[b] <= limit[a] (the largest rise since
// the row's pass). With a threshold τ, the columns whose rise exceeds τ are
// priced by a column pass and the rows with slack[a] − min(τ, limit[a]) <
// −tol by a row pass. It tries τ at the 0th, 1st, 2nd, 4th, 8th, …
// largest rise (at most a quarter of the columns in the column pass),
// keeps the one that prices the fewest lines, and returns the rows and
// columns.
func splitCheck(slack, limit, rise []float64, tol float64) (rows, cols []int) {
	order := make([]int, len(rise))
	for b := range order {
		order[b] = b
	}
	slices.SortFunc(order, func(p, q int) int { return cmp.Compare(rise[q], rise[p]) })
	tauAt := func(c int) float64 {
		if c < len(order) {
			return rise[order[c]]
		}
		return math.Inf(-1)
	}
	failing := func(tau float64, out []int) ([]int, int) {
		n := 0
		for a, sl := range slack {
			if sl-min(tau, limit[a]) < -tol {
				n++
				if out != nil {
					out = append(out, a)
				}
			}
		}
		return out, n
	}
	bestC, bestCost := 0, math.MaxInt
	for c := 0; c <= len(order)/4; c = max(2*c, c+1) {
		if _, n := failing(tauAt(c), nil); c+n < bestCost {
			bestC, bestCost = c, c+n
		}
	}
	rows, _ = failing(tauAt(bestC), []int{})
	return rows, order[:bestC]
}

// lowerBy sets tau[i] −= e[i] + emax.
func lowerBy(tau, e []float64, emax float64) {
	for i := range tau {
		tau[i] -= e[i] + emax
	}
}

// stage1Sparse is stage1 on the sparse path: the same assignment (docs/method.md's
// square model of eqs. 3–5, the larger side as rows, q or q+1 copies of each
// column and dummy rows on the extra copies), solved on candidate edges and
// certified against every dense edge by pricing passes.
func stage1Sparse(src, tgt Matrix, cfg Config, m *Matching) error {
	mon := cfg.Monitor
	mon.enter(PhaseStage1Costs)
	md := newStage1Model(src, tgt, cfg)
	md.deferSums = m.sumsPending
	// Without the kernel sums the candidate pass needs no float64: it runs
	// in float32, its lists' limits lowered by the error bounds, and the
	// candidate edges get exact values (at) afterwards (n = 50,000
	// clustered: 64 s -> 44 s, plus 4 s for the exact values).
	f32 := md.deferSums && md.err32 != nil
	ns, nt := src.N, tgt.N
	rows, cols := newNearest(ns, min(3*sparseK, nt)), newNearest(nt, min(3*sparseK, ns))
	toRow, _ := rows.candidates(ns, nt)
	_, toCol := cols.candidates(nt, ns)
	md.pass(scope{f32: f32}, func(i, j0 int, x []float64) {
		toRow(i, j0, x)
		toCol(i, j0, x, nil)
	})
	if err := mon.err(); err != nil {
		return fmt.Errorf("psda: stage 1 candidates: %w", err)
	}
	var es, et []float64 // float32 error bounds by source and by target
	if md.err32 != nil {
		es, et = md.err32()
	}
	tauS, tauT := rows.thresholds(), cols.thresholds()
	if f32 {
		// An edge a list did not keep has X̃ >= its limit, so X >= limit −
		// es[i] − et[j] >= limit − es[i] − max(et) (rows; columns alike).
		lowerBy(tauS, es, slices.Max(et))
		lowerBy(tauT, et, slices.Max(es))
	}
	trace("stage 1: candidate pass done")
	mon.enter(PhaseStage1Assign)
	// Solver rows a are the larger side, solver columns b the smaller.
	tr := nt > ns
	nl, nsm := ns, nt
	if tr {
		nl, nsm = nt, ns
	}
	q, r := nl/nsm, nl%nsm
	copies, dummies := q, 0
	if r > 0 {
		copies, dummies = q+1, nsm-r
	}
	adj := make(edges, nl)
	addST := func(i, j int, x float64) {
		if tr {
			adj.add(j, i, x)
		} else {
			adj.add(i, j, x)
		}
	}
	for i := 0; i < ns; i++ {
		rows.each(i, func(j int, x, _ float64) { addST(i, j, x) })
	}
	for j := 0; j < nt; j++ {
		cols.each(j, func(i int, x, _ float64) { addST(i, j, x) })
	}
	tauR, tauC := tauS, tauT
	if tr {
		tauR, tauC = tauC, tauR
	}
	rows, cols = nil, nil
	// Row a on column a mod n_small gives every column q or q+1 rows: a
	// complete assignment inside the graph whatever the candidates are. The
	// candidates keep the cross parts of a float64 pass, the dense path's
	// own values (an edge found twice keeps those, normalise); after a
	// float32 pass they get exact ones.
	at := func(a, b int) float64 {
		if tr {
			return md.at(b, a)
		}
		return md.at(a, b)
	}
	for a := 0; a < nl; a++ {
		adj.add(a, a%nsm, at(a, a%nsm))
	}
	if f32 {
		adj.normalise()
		exactCross(adj, at)
		if err := mon.err(); err != nil {
			return fmt.Errorf("psda: stage 1 candidates: %w", err)
		}
	}
	st := &pricedStage{
		rows: nl, cols: nsm, scale: md.scale, coef: 1, phase: PhaseStage1Assign,
		tauR: tauR, tauC: tauC, at: at,
		terms: func() ([]float64, []float64) {
			rt, ct := md.terms()
			if tr {
				return ct, rt
			}
			return rt, ct
		},
		colPot: func(v []float64) []float64 {
			vp := make([]float64, nsm)
			for b := range vp {
				vp[b] = slices.Max(v[b*copies : (b+1)*copies])
			}
			return vp
		},
		passCols: func(cols []int, visit func(a, b int, x float64)) {
			if tr { // solver columns are sources: rows of the model's pass
				md.pass(scope{rows: cols}, func(i, j0 int, xs []float64) {
					for k, x := range xs {
						visit(j0+k, cols[i], x)
					}
				})
				return
			}
			md.pass(scope{cols: cols}, func(i, j0 int, xs []float64) {
				for k, x := range xs {
					visit(i, cols[j0+k], x)
				}
			})
		},
		pass: func(sub []int, f32 bool, row func(a, b0 int, xs []float64), col func(b, a0 int, xs []float64, idx []int)) {
			if tr {
				md.pass(scope{cols: sub, f32: f32}, func(i, j0 int, x []float64) { col(i, j0, x, sub) })
				return
			}
			md.pass(scope{rows: sub, f32: f32}, func(i, j0 int, x []float64) {
				if sub != nil {
					i = sub[i]
				}
				row(i, j0, x)
			})
		},
	}
	if md.err32 != nil {
		st.eR, st.eC = es, et
		if tr {
			st.eR, st.eC = st.eC, st.eR
		}
	}
	st.graph = func(adj edges) *assign.Graph {
		rt, ct := st.terms()
		n := nl + dummies
		g := &assign.Graph{N: n, Lo: make([]int, n), Hi: make([]int, n)}
		for a, row := range adj {
			g.Lo[a] = len(g.Col)
			for _, e := range row {
				c := (rt[a] + ct[e.b] + e.x) * md.scale
				for t := 0; t < copies; t++ {
					g.Col = append(g.Col, int32(int(e.b)*copies+t))
					g.Cost = append(g.Cost, c)
				}
			}
			g.Hi[a] = len(g.Col)
		}
		if dummies > 0 { // identical rows share one list: the extra copies at cost 0
			lo := len(g.Col)
			for b := 0; b < nsm; b++ {
				g.Col = append(g.Col, int32(b*copies+copies-1))
				g.Cost = append(g.Cost, 0)
			}
			for a := nl; a < n; a++ {
				g.Lo[a], g.Hi[a] = lo, len(g.Col)
			}
		}
		return g
	}
	sol, err := st.solve(adj, mon)
	if err != nil {
		return fmt.Errorf("psda: stage 1 (sparse): %w", err)
	}
	m.Pairs = make([]Pair, nl)
	for a, c := range sol.Col4Row[:nl] {
		if b := c / copies; tr {
			m.Pairs[a] = Pair{S: b, T: a}
		} else {
			m.Pairs[a] = Pair{S: a, T: b}
		}
	}
	m.Stage1Cost = sol.Cost // dummy rows cost 0
	return nil
}

// stage2Sparse is stage2 on the sparse path: the symmetric assignment
// relaxation on candidate edges, priced against every dense edge until its
// potentials hold for all (so its optimum is the dense relaxation's), then
// the exact blossom algorithm on the candidate graph from the relaxation's
// halved potentials, priced against every dense edge in turn
// (stage2Blossom).
func stage2Sparse(src, tgt Matrix, cfg Config, m *Matching) error {
	mon := cfg.Monitor
	mon.enter(PhaseStage2Costs)
	md := newStage2Model(src, tgt, cfg, m.Pairs, false)
	p, n := md.p, md.m
	adj := make(edges, n)
	both := func(r, q int, v float64) {
		adj.add(r, q, v)
		adj.add(q, r, v)
	}
	near := newNearest(p, min(stage2K(src.D), p-1))
	toRow, toCol := near.candidates(p, p)
	md.pass(scope{}, func(r, q0 int, v []float64) {
		toRow(r, q0, v)
		toCol(r, q0, v, nil)
	})
	if err := mon.err(); err != nil {
		return fmt.Errorf("psda: stage 2 candidates: %w", err)
	}
	trace("stage 2: candidate pass done")
	for r := 0; r < p; r++ {
		near.each(r, func(q int, v, _ float64) { both(r, q, v) })
	}
	tau := near.thresholds()
	var node, single []float64
	mon.enter(PhaseStage2Match)
	// cost is C^MM(r, q) from the cross part v; the dummy node p (odd P)
	// stands for "no partner".
	cost := func(r, q int, v float64) float64 {
		switch {
		case r == p:
			return single[q] * md.scale
		case q == p:
			return single[r] * md.scale
		}
		return (node[r] + node[q] + md.coef*v) * md.scale
	}
	// Consecutive nodes paired off: a perfect matching inside the graph
	// (an edge that is also a candidate keeps the pass's value, as in
	// stage1Sparse).
	for r := 0; r+1 < p; r += 2 {
		both(r, r+1, md.at(r, r+1))
	}
	if n > p { // the dummy may be anyone's partner
		for r := 0; r < p; r++ {
			both(r, p, 0)
		}
	}
	adj.normalise()
	st := &pricedStage{
		rows: p, cols: p, scale: md.scale, coef: md.coef, noDiag: true, symmetric: true, phase: PhaseStage2Match,
		tauR: tau, tauC: tau, at: md.at,
		terms: func() ([]float64, []float64) {
			node, single = md.finish()
			return node, node
		},
		colPot: func(v []float64) []float64 { return slices.Clone(v[:p]) },
		graph: func(adj edges) *assign.Graph {
			g := &assign.Graph{N: n, Lo: make([]int, n), Hi: make([]int, n)}
			for a, row := range adj {
				g.Lo[a] = len(g.Col)
				for _, e := range row {
					g.Col = append(g.Col, e.b)
					g.Cost = append(g.Cost, cost(a, int(e.b), e.x))
				}
				g.Hi[a] = len(g.Col)
			}
			return g
		},
		passCols: func(cols []int, visit func(a, b int, x float64)) {
			// V is symmetric: the rows of cols give the edges into them.
			md.pass(scope{rows: cols}, func(q, r0 int, v []float64) {
				for k, x := range v {
					visit(r0+k, q, x)
				}
			})
		},
		pass: func(sub []int, f32 bool, row func(a, b0 int, xs []float64), col func(b, a0 int, xs []float64, idx []int)) {
			md.pass(scope{rows: sub, f32: f32}, func(r, q0 int, v []float64) {
				row(r, q0, v)
				if sub == nil { // the full pass visits the upper triangle only
					col(r, q0, v, nil)
				}
			})
		},
	}
	if md.err32 != nil {
		st.eR = md.err32()
		st.eC = st.eR
	}
	sol, err := st.solve(adj, mon)
	if err != nil {
		return fmt.Errorf("psda: stage 2 (sparse): %w", err)
	}
	m.addDeferred(md)
	oracle := func(r, q int) float64 {
		if r == p || q == p {
			return cost(r, q, 0)
		}
		return cost(r, q, md.at(r, q))
	}
	em, err := stage2Blossom(st, adj, sol, n, p, md, node, cost, oracle, mon)
	if err != nil {
		return fmt.Errorf("psda: stage 2 (sparse): %w", err)
	}
	m.group(em.Mate)
	m.Stage2Cost = 0
	for r, q := range em.Mate {
		if r < q { // the dummy p is the largest node: singles count once too
			m.Stage2Cost += oracle(r, q)
		}
	}
	// Certified for every dense edge by stage2Blossom's pricing; the
	// objective equals the cost up to rounding, and is capped at it.
	m.Stage2Bound = math.Min(em.Bound, m.Stage2Cost)
	return nil
}

// stage2Blossom solves Stage 2's minimum-weight perfect matching exactly on
// the sparse path: the blossom algorithm runs on the candidate graph adj
// from the halved potentials y0 = (U + V)/2 of the priced relaxation sol and
// its even cycles' pairs (assign.RelaxationStart), then every dense edge is
// priced against the result's vertex and blossom duals, violators join adj
// and the solve starts again from y0, until none is left.
//
// The pricing needs no full pass: y0 is feasible for every dense edge (the
// relaxation's pricing proved c_ab − U_a − V_b >= −tol on both orientations
// of every edge, whose mean is c_ab − y0_a − y0_b), and blossom duals only
// raise reduced costs (z >= 0), so an edge can only be violated at a vertex
// whose dual rose above y0. Only those vertices' rows are passed over
// (priceBlossom: float32 where the model bounds its error), every edge of a
// row checked with its blossom term; rows
// whose edges outside the candidate lists are bounded feasible by the
// lists' thresholds (pricedStage.screen, at the current duals) are skipped.
// Large blossoms (clustered data) raise the vertex duals of all their
// vertices, so a round may then price every row. The
// dummy node p (odd P) has all its edges in the graph. The duals returned are
// thus feasible for every dense edge up to tol, tight on the matching, and
// their objective is the certified Stage2Bound; CertifyMatchingGraph checks
// them on the final graph.
func stage2Blossom(st *pricedStage, adj edges, sol *assign.Solution, n, p int, md *stage2Model, node []float64,
	cost func(r, q int, v float64) float64, oracle func(r, q int) float64, mon *Monitor) (*assign.ExactMatching, error) {
	hooks := mon.hooks(PhaseStage2Match)
	start := assign.RelaxationStart(sol.Col4Row, sol.U, sol.V, oracle)
	y0 := start.Y
	for round := 0; ; round++ {
		adj.normalise()
		g := st.graph(adj)
		tol := priceTol(g.Cost)
		em, err := assign.BlossomSparse(g, &assign.BlossomStart{Y: y0, Mate: start.Mate}, hooks)
		if err != nil {
			return nil, err
		}
		if err := assign.CertifyMatchingGraph(g, em, tol); err != nil {
			return nil, fmt.Errorf("stage 2 optimality certificate failed on the candidate graph (a bug: please report it): %w", err)
		}
		d := &em.Duals
		var rise []int
		for a := 0; a < p; a++ {
			if d.Y[a]-y0[a] > tol {
				rise = append(rise, a)
			}
		}
		if len(rise) > 0 && st.tauR != nil && st.coef*st.scale > 0 {
			// The candidate lists' thresholds bound every edge outside them
			// at the current duals (screen, with z = w = y − node·scale);
			// rows whose bound holds need no pass.
			z, tail := make([]float64, p), make([]float64, p)
			for a := range z {
				z[a] = d.Y[a] - node[a]*st.scale
			}
			st.screen(z, z, tail, nil)
			rise = slices.DeleteFunc(rise, func(a int) bool { return tail[a] >= -tol })
		}
		trace("stage 2 blossom round %d: %d edges, cost %.12g, %d rows to price", round, len(g.Col), em.Cost, len(rise))
		if len(rise) == 0 {
			return em, nil
		}
		found, cross, err := priceBlossom(md, rise, d, st.eR, adj.has, cost, tol, mon)
		if err != nil {
			return nil, err
		}
		added := 0
		for k, e := range found {
			if !adj.has(e[0], e[1]) {
				st.link(adj, e[0], e[1], cross[k])
				added++
			}
		}
		trace("  %d violating edges added", added)
		if added == 0 {
			return em, nil
		}
	}
}

// blossomBudget: a float32 blossom pricing pass recomputes at most
// p/blossomBudget edges of a row exactly (each costs a pass over the d
// features) before the row is priced again in float64.
var blossomBudget = 32

// priceBlossom returns the edges (r, q) outside the graph (has), r in rows,
// whose reduced cost under the blossom duals d is below −tol, with their
// exact cross parts. Shared >= 0, so Shared is only looked up for edges
// negative without it. With error bounds e (|Ṽ_rq − V_rq| <= e[r] + e[q]
// for a float32 pass, stage2Model.err32) the pass runs in float32, and an
// edge the bound cannot clear is recomputed exactly (md.at); a row where
// more than 1/blossomBudget of the edges need that is priced again in float64.
func priceBlossom(md *stage2Model, rows []int, d *assign.MatchingDuals, e []float64, has func(r, q int) bool,
	cost func(r, q int, v float64) float64, tol float64, mon *Monitor) (found [][2]int, cross []float64, err error) {
	p := md.p
	cs := math.Abs(md.coef * md.scale)
	budget := int32(max(p/blossomBudget, 16))
	if blossomBudget > p {
		budget = 0
	}
	checks := make([]int32, p) // exact recomputations per row; −1: row handed to float64
	var mu sync.Mutex
	var redo []int
	price := func(sub []int, f32 bool) {
		md.pass(scope{rows: sub, f32: f32}, func(r, q0 int, v []float64) {
			yr := d.Y[r]
			for k, x := range v {
				q := q0 + k
				if q == r || q >= p {
					continue
				}
				rc := cost(r, q, x) - yr - d.Y[q]
				if f32 {
					rc -= cs * (e[r] + e[q])
				}
				if rc >= -tol {
					continue
				}
				sh := d.Shared(r, q)
				if rc+sh >= -tol || has(r, q) {
					continue
				}
				if f32 {
					if n := atomic.AddInt32(&checks[r], 1); n > budget {
						if n == budget+1 {
							mu.Lock()
							redo = append(redo, r)
							mu.Unlock()
						}
						continue
					}
					x = md.at(r, q)
					if cost(r, q, x)-yr-d.Y[q]+sh >= -tol {
						continue
					}
				}
				mu.Lock()
				found, cross = append(found, [2]int{r, q}), append(cross, x)
				mu.Unlock()
			}
		})
	}
	price(rows, e != nil)
	if e != nil {
		n := 0
		for _, c := range checks {
			n += int(min(max(c, 0), budget))
		}
		trace("  float32 pass: %d edges recomputed exactly", n)
	}
	if len(redo) > 0 {
		trace("  %d rows priced again in float64", len(redo))
		price(redo, false)
	}
	return found, cross, mon.err()
}
