package assign

import (
	"errors"
	"math"
	"slices"

	"github.com/psda-dev/psda/psda/internal/par"
	"github.com/psda-dev/psda/psda/internal/topk"
)

// warmK returns the number of candidate columns warmStart keeps per row,
// and of candidate rows per column, for an n×n problem: n/128 within
// [16, 32]. More candidates cost more in every attempt (the passes keep
// more per line, the sparse problem grows) and spare dense work that grows
// with n. On the Stage 2 relaxation of real features (docs/performance.md,
// "What a refresh costs on real features"; n = 5000) 16 general candidates
// left 25,560 (CORAL) and 36,056 (MMD) violated entries at the first
// check, both beyond n, and both gave up for the auction. Symmetric ones
// (s.sym) left, at 24, 32, 40 and 48 candidates: CORAL 4,719, 2,847,
// 1,721, 973, whose pricing loop then finishes (the relaxation 1.9× faster
// than from 16 general ones); MMD 10,371, 9,012, 8,084, 7,303, which still
// gives up (7% slower than from 16 at 32). 32 rather than 48: the 2-D
// Stage 2 cost (BenchmarkStage2, n = 4000), whose warm start holds from
// 16, took 0.35 s at 32 and 0.42 s at 48 against 0.40 s from 16 general
// ones. At n = 1000, where psda's Stage 2 of ReLU features at d = 512
// holds from 16, 32 took 0.034 s against 0.022 s (CPU seconds, fastest of
// 4 and 7 runs in one process).
func warmK(n int) int { return min(max(n/128, 16), 32) }

// warmMin is the least n at which solveLSAP tries warmStart: below it the
// auction takes milliseconds anyway.
var warmMin = 256

// warmStart is the first warm start of square problems, tried before
// auctionInit: the pricing loop (Pricing, docs/design.md "The pricing
// loop") run on the dense matrix (denseModel) with a warm start's policy.
// It solves the sparse problem on a few candidate entries of every row and
// column, prices every row, keeping its warmPrice most violated entries,
// adds the violators and re-solves until the kept entries hold, re-prices
// the rows whose bound no longer does, at most warmRounds passes in all,
// and hands the potentials and the assignment to tightenWithin and the
// exact augmentation, which repair whatever the passes left. Candidates are
// the warmK(n) smallest entries of each row after column reduction
// (c[i][j] − min_i' c[i'][j]) and the warmK(n) smallest of each column after
// the row reduction that follows, plus the cyclic permutation i → i+1, so
// that a perfect matching exists (the Stage 2 relaxation forbids only the
// diagonal). For the matching's relaxation (s.sym) the candidates are
// symmetrised and the loop prices with symmetric potentials
// (Pricing.Symmetric).
//
// On continuous costs the candidates hold nearly every optimal entry: a
// pass or two add few entries and leave no row free, so the exact phase
// has little left to do (BenchmarkSolve; docs/performance.md, "Design
// decisions and the measurements behind them").
//
// The warm start only ever sets potentials and a partial assignment that
// tightenWithin makes feasible, so correctness rests on the exact phase. It
// gives up at once on costs of repeated points (more than seedRepeats of
// the rows or columns repeat another), and otherwise, returning false with
// s reset, when the sparse problem has no
// perfect matching (+Inf off the diagonal), when a check finds more than n
// violated entries (MaxAdd), or when more than n/warmFree rows end free:
// tie-heavy costs (ReLU features at d = 2) and some 2-D ones give most rows
// cheaper entries outside their candidates pass after pass, and the auction
// is the better start there. When it gives up at a check (MaxAdd) it leaves
// the sparse solution in s.seed, from whose prices the auction starts. A
// failed attempt costs the candidate passes over c, up to warmRounds
// pricing passes over c and as many sparse solves: a small fraction of the
// auction that follows (BenchmarkWarmAttempt; figures in
// docs/performance.md). It returns h's Stop error when h stops it.
func (s *lsap) warmStart(h *Hooks) (bool, error) {
	n := s.nr
	if n < warmMin || n != s.nc {
		return false, nil
	}
	if repeatedLines(s.c, n) > seedRepeats {
		return false, nil // costs of repeated points: see seedRepeats
	}
	adj := denseCandidates(s.c, n, warmK(n), s.sym, s.colMin)
	if err := h.stop(); err != nil {
		return false, err
	}
	model := &denseModel{c: s.c, n: n, sym: s.sym}
	pr := &Pricing{Model: model, Rows: n, Cols: n, Scale: 1, Coef: 1,
		Keep: warmPrice, IndexTies: true, MaxPasses: warmRounds, MaxAdd: n, Hooks: h.stopOnly(),
		Symmetric: s.sym}
	if fuseTighten {
		pr.BeforePass = model.minimaUnder
	}
	sol, _, err := pr.Solve(adj)
	if errors.Is(err, ErrPricingGaveUp) {
		// Too many violators for a few passes: the auction finishes, from
		// the sparse solution's prices (auctionInit).
		s.reset()
		if seedAuction {
			s.seed = sol
		}
		return false, nil
	}
	if errors.Is(err, ErrNoPerfect) {
		// +Inf entries beyond the diagonal: let the auction decide.
		return s.reset(), nil
	}
	if err != nil {
		return false, err
	}
	copy(s.v, sol.V)
	s.adopt(sol.Col4Row)
	if m := model.minima(sol.V); m != nil {
		s.tightenFrom(m, tightRel) // the last full pricing pass's, at these v
		s.tightFused = true
		if model.sym {
			s.startY, s.startLows = model.startY, model.lows
		}
	} else {
		s.tightenWithin(tightRel)
	}
	free := 0
	for _, j := range s.col4row {
		if j < 0 {
			free++
		}
	}
	if free <= n/warmFree {
		return true, nil
	}
	return s.reset(), nil
}

// fuseTighten lets warmStart's full pricing passes find the row minima
// that tightenWithin would read c again for, and the rows the blossom
// start's repair rescans (denseModel.minimaUnder); tests turn it off to
// compare.
var fuseTighten = true

// seedAuction lets warmStart seed the auction when it gives up (s.seed);
// tests and benchmarks turn it off to compare with the cold auction.
var seedAuction = true

// seedRepeats is the largest share of repeated rows or columns
// (repeatedLines) at which warmStart runs. Costs between repeated points,
// such as the ReLU-like benchmark features at d = 2 (about a quarter of
// rows and columns repeat another), tie so often that the warm start gave
// up on every such Stage 2 of BenchmarkStage2 (n = 1000 and 4000), and
// seeding the auction from it made the auction and the exact phase after
// it 1.1–3.5× slower than the cold auction (BenchmarkSolve's Stage 1 and 2
// at n = 1000 and 4000), so the attempt is skipped: at n = 1000 it cost
// 0.01–0.13 s of 0.16–0.6 s with 32 candidates. Gaussian features and the
// real Stage 2 costs of docs/performance.md have none.
const seedRepeats = 1.0 / 20

// repeatedLines returns the larger of the shares of rows and of columns of
// the n×n matrix c that repeat another row or column on seedLines sampled
// entries (the same columns for every row, the same rows for every
// column): the mark of repeated points, whose costs tie exactly. Time
// O(seedLines·n·log n), the sampling on all cores.
func repeatedLines(c []float64, n int) float64 {
	share := func(at func(line, t int) float64) float64 {
		keys := make([]uint64, n)
		// On all cores: each sampled entry is a cache miss at large n
		// (0.045 s at n = 20,000 on one core).
		par.Rows(n, func(l0, l1 int) {
			for line := l0; line < l1; line++ {
				h := uint64(14695981039346656037) // FNV-1a over the sampled entries' bits
				for t := 0; t < seedLines; t++ {
					h = (h ^ math.Float64bits(at(line, (t*7919+13)%n))) * 1099511628211
				}
				keys[line] = h
			}
		})
		slices.Sort(keys)
		rep := 0
		for k := range keys {
			if (k > 0 && keys[k-1] == keys[k]) || (k+1 < n && keys[k+1] == keys[k]) {
				rep++
			}
		}
		return float64(rep) / float64(n)
	}
	rows := share(func(i, j int) float64 { return c[i*n+j] })
	cols := share(func(j, i int) float64 { return c[i*n+j] })
	return max(rows, cols)
}

// seedLines is the number of entries of each row and column that
// repeatedLines compares.
const seedLines = 64

// adopt sets the assignment of s to col4row, the column of every row (a
// sparse solution's Col4Row: no row free), for the warm starts.
func (s *lsap) adopt(col4row []int) {
	for i, j := range col4row {
		s.col4row[i], s.row4col[j] = j, i
	}
}

// reset returns s to its cold state and false, for warmStart's give-ups.
func (s *lsap) reset() bool {
	for i := range s.col4row {
		s.col4row[i], s.row4col[i] = -1, -1
	}
	clear(s.u)
	clear(s.v)
	s.seed = nil
	return false
}

// warmRounds is the number of pricing passes warmStart runs on the sparse
// problem before the exact dense phase takes over.
const warmRounds = 4

// warmPrice is the number of entries a warmStart pricing pass keeps per
// row: the most violated ones. Few keep the sparse problem small; the
// rows they do not certify are priced again.
const warmPrice = 8

// warmFree bounds the rows warmStart may leave free, as a fraction 1/warmFree
// of n: beyond it the dense paths cost more than the auction.
const warmFree = 8

// denseModel is the n×n row-major matrix c as a PricedModel: the cross part
// of entry (i, j) is c[i][j] itself (no terms, Scale and Coef 1), read from
// the matrix by rows split over the cores.
//
// A full pass also finds, when minimaUnder asked it to, every row's
// minimum min_j c[i][j] − v[j] under the column potentials v of the
// solution it prices (minDiff, tightenWithin's own arithmetic): when the
// pricing loop ends at that solution, as it does when its first pass finds
// no violated entry, warmStart's tightenWithin takes them instead of a
// pass of its own over c (0.25 of 3 CPU seconds at n = 20,000; the row is
// still in cache from the sink). Nothing else depends on them.
//
// The same pass, for the matching's relaxation (sym), finds the rows that
// the blossom start's repair must rescan (newBlossomLows) under the duals
// y_r = (u_r + v_r)/2 it will start from if tightenWithin keeps every
// row, u_r = c[r][σ(r)] − v[σ(r)] for the solution's σ, and no path
// follows: minWeightPerfectMatching takes them when its start's y is that
// one, bit for bit (another 0.25 CPU seconds spared at n = 20,000).
type denseModel struct {
	c   []float64
	n   int
	sym bool
	// minV: the column potentials of the minima (nil: none asked);
	// rowMin: the minima, complete when full; startY and lows: the
	// predicted blossom start's duals and the rows to rescan under them
	// (sym only).
	minV, rowMin, startY []float64
	lows                 []bool
	want, full           bool // the next pass finds them; the last one that did was full
}

// minimaUnder is Pricing.BeforePass: a full pass (sub nil) at sol also
// finds the rows' minima under sol.V; a pass over some rows leaves the
// last full pass's minima as they are.
func (m *denseModel) minimaUnder(sub []int, sol *Solution) {
	m.want = sub == nil
	if m.want {
		m.minV, m.full = slices.Clone(sol.V), false
		if m.rowMin == nil {
			m.rowMin = make([]float64, m.n)
		}
		if m.sym {
			// tightenRow's u of a kept row, RelaxationStart's y.
			if m.startY == nil {
				m.startY, m.lows = make([]float64, m.n), make([]bool, m.n)
			}
			for r, j := range sol.Col4Row {
				m.startY[r] = math.NaN() // no prediction for a free row
				if j >= 0 {
					u := m.c[r*m.n+j] - m.minV[j]
					m.startY[r] = (u + m.minV[r]) / 2
				}
			}
		}
	}
}

// minima returns the rows' minima under the column potentials v, or nil
// when the last full pass found them under other potentials (any bit
// differing) or none did.
func (m *denseModel) minima(v []float64) []float64 {
	if !m.full || !sameBits(v, m.minV) {
		return nil
	}
	return m.rowMin
}

func (m *denseModel) Terms() (r, c []float64) {
	z := make([]float64, m.n)
	return z, z
}

func (m *denseModel) ColPot(v []float64) []float64 { return slices.Clone(v) }

func (m *denseModel) Graph(adj Edges) *Graph {
	return adj.Graph(func(_, _ int, x float64) float64 { return x })
}

func (m *denseModel) Pass(sub []int, _ bool, row func(a, b0 int, xs []float64), _ func(b, a0 int, xs []float64, idx []int)) {
	rows, n := par.Indices(sub, m.n), m.n
	minima := m.want && sub == nil
	par.Rows(len(rows), func(k0, k1 int) {
		for _, i := range rows[k0:k1] {
			row(i, 0, m.c[i*n:i*n+n])
			if minima {
				m.rowMin[i] = minDiff(m.c[i*n:i*n+n], m.minV)
				if m.sym {
					m.lows[i] = lowSlackDense(m.c[i*n:i*n+n], i, m.startY) < 0
				}
			}
		}
	})
	m.full, m.want = m.full || minima, false
}

func (m *denseModel) PassCols(cols []int, visit func(a, b int, x float64)) {
	n := m.n
	par.Rows(n, func(i0, i1 int) {
		for i := i0; i < i1; i++ {
			for _, j := range cols {
				visit(i, j, m.c[i*n+j])
			}
		}
	})
}

func (m *denseModel) At(i, j int) float64 { return m.c[i*m.n+j] }

// denseCandidates returns the candidate edges of warmStart on the finite
// entries of the row-major n×n matrix c. colMin, when not nil, holds the
// minimum of each column's entries off the diagonal (whose entries must
// be +Inf, as in the relaxation), which spares the first of the passes
// (MinWeightPerfectMatchingMirrored's input check found them while it read
// c). Time O(n²) in up to three passes over c, each split over the cores
// by rows, plus O(k) per insertion into a column's list, which after the
// first rows is rare; memory O(n·k) per core.
//
// With sym, c is symmetric (up to rounding: the candidates only steer the
// warm start) and column j's list is read from row j instead, in a third
// sequential pass: the column's entries c[i][j] − u_i, u_i the reduced
// minimum of row i, are row j's c[j][i] − u_i. The column lists'
// insertions, at random places in n lists, cost more than that pass (at
// k = 48 on Stage 2 costs of real features, n = 5000: half the candidates'
// time). The edges are then symmetrised (symmetrise), so that the pricing
// loop can run symmetric.
func denseCandidates(c []float64, n, k int, sym bool, colMin []float64) Edges {
	k = min(k, n)
	// Column minima, negated, so that row[j] + v[j] is the reduced entry:
	// from colMin when given, else in a pass over c.
	var v []float64
	if colMin != nil {
		v = make([]float64, n)
		for j, x := range colMin {
			v[j] = -x
		}
	} else {
		parts := make([][]float64, par.NParts(n))
		par.Parts(n, func(part, lo, hi int) {
			v := make([]float64, n)
			for j := range v {
				v[j] = -inf
			}
			for i := lo; i < hi; i++ {
				row := c[i*n : i*n+n]
				for j, x := range row {
					if -x > v[j] {
						v[j] = -x
					}
				}
			}
			parts[part] = v
		})
		v = parts[0]
		for _, w := range parts[1:] {
			for j, x := range w {
				v[j] = max(v[j], x)
			}
		}
	}
	for j, x := range v {
		if x == -inf { // a column of +Inf: no candidate, SolveSparse reports it
			v[j] = 0
		}
	}
	rowJ, rowM := make([]int32, n*(k+1)), make([]int, n) // each row's candidates
	// p[i] = −u_i, the row's reduced minimum negated (+Inf for a row of
	// +Inf, which no column keeps), for the symmetric column lists.
	p := make([]float64, n)
	var cols []*topk.Columns
	if !sym {
		cols = make([]*topk.Columns, par.NParts(n))
	}
	par.Parts(n, func(part, lo, hi int) {
		var cl *topk.Columns
		if !sym {
			cl = topk.NewColumns(n, k)
			cols[part] = cl
		}
		topV, topJ := make([]float64, k), make([]int, k)
		hint := inf // see nextHint
		for i := lo; i < hi; i++ {
			row := c[i*n : i*n+n]
			m := topk.SmallestKBelow(row, v, topV, topJ, hint)
			hint = nextHint(topV, m)
			for t, j := range topJ[:m] {
				rowJ[i*(k+1)+t] = int32(j)
			}
			rowM[i] = m
			if next := (i + 1) % n; row[next] < inf {
				rowJ[i*(k+1)+m] = int32(next)
				rowM[i]++
			}
			p[i] = inf
			if m > 0 {
				p[i] = -topV[0]
				if !sym {
					cl.Offer(i, row, v, topV[0]) // topV[0]: the row's reduced minimum
				}
			}
		}
	})
	var colI []int32
	var colM []int
	if sym {
		colI, colM = make([]int32, n*k), make([]int, n)
		par.Parts(n, func(_, lo, hi int) {
			topV, topJ := make([]float64, k), make([]int, k)
			hint := inf
			for j := lo; j < hi; j++ {
				m := topk.SmallestKBelow(c[j*n:j*n+n], p, topV, topJ, hint)
				hint = nextHint(topV, m)
				for t, i := range topJ[:m] {
					colI[j*k+t] = int32(i)
				}
				colM[j] = m
			}
		})
	} else {
		// The parts' lists merged column by column, on all cores (each
		// column's list is its own), the parts in order as before.
		par.Rows(n, func(j0, j1 int) {
			for j := j0; j < j1; j++ {
				for _, cl := range cols[1:] {
					for t := 0; t < cl.M[j]; t++ {
						cols[0].Insert(j, cl.V[j*k+t], cl.I[j*k+t])
					}
				}
			}
		})
		colI, colM = cols[0].I, cols[0].M
	}
	// Row i's own candidates and the columns that chose it, in one flat
	// array, each row then sorted and without repeats on all cores (Solve's
	// Normalise finds them so), its capacity capped so that an edge added
	// later cannot run into the next row. The costs are read last, on all
	// cores (withCosts): every edge (i, j) costs c[i][j], and the reads, one
	// cache miss each at large n, cost more than the rest of this.
	lo := make([]int, n+1)
	for j := 0; j < n; j++ {
		for _, i := range colI[j*k : j*k+colM[j]] {
			lo[i+1]++
		}
	}
	for i := 0; i < n; i++ {
		lo[i+1] += lo[i] + rowM[i]
	}
	flat, fill := make([]Edge, lo[n]), make([]int, n)
	for i := 0; i < n; i++ {
		for t, j := range rowJ[i*(k+1) : i*(k+1)+rowM[i]] {
			flat[lo[i]+t] = Edge{B: j}
		}
		fill[i] = lo[i] + rowM[i]
	}
	for j := 0; j < n; j++ {
		for _, i := range colI[j*k : j*k+colM[j]] {
			flat[fill[i]] = Edge{B: int32(j)}
			fill[i]++
		}
	}
	adj := sortedRows(flat, lo)
	if sym {
		adj = symmetrise(adj, n)
	}
	return withCosts(adj, c, n)
}

// withCosts sets the cost of every edge (i, j) of adj to c[i][j], on all
// cores, and returns adj.
func withCosts(adj Edges, c []float64, n int) Edges {
	par.Rows(n, func(i0, i1 int) {
		for i := i0; i < i1; i++ {
			row := c[i*n : i*n+n]
			for t, e := range adj[i] {
				adj[i][t].X = row[e.B]
			}
		}
	})
	return adj
}

// nextHint returns the bound that denseCandidates' passes give
// topk.SmallestKBelow for the next row: this row's k-th smallest value
// plus its list's spread, topV[k−1] + (topV[k−1] − topV[0]) (+Inf when the
// list is not full of m = k). Neighbouring rows' lists lie alike, so most
// rows then skip every entry above it until their lists are full; the
// result is SmallestK's whatever the bound.
func nextHint(topV []float64, m int) float64 {
	if m < len(topV) {
		return inf
	}
	return topV[m-1] + (topV[m-1] - topV[0])
}

// symmetrise returns the normalised edges of adj with every edge (i, j)
// joined by (j, i), so that the pricing loop can run symmetric
// (Pricing.Symmetric); the costs are left for withCosts. Time O(m·log m)
// for m edges.
func symmetrise(adj Edges, n int) Edges {
	lo := make([]int, n+1)
	for i, row := range adj {
		lo[i+1] += len(row)
		for _, e := range row {
			lo[e.B+1]++
		}
	}
	for i := 0; i < n; i++ {
		lo[i+1] += lo[i]
	}
	flat, fill := make([]Edge, lo[n]), slices.Clone(lo[:n])
	for i, row := range adj {
		fill[i] += copy(flat[fill[i]:], row)
	}
	for i, row := range adj {
		for _, e := range row {
			flat[fill[e.B]] = Edge{B: int32(i)}
			fill[e.B]++
		}
	}
	return sortedRows(flat, lo)
}

// sortedRows returns the edges of flat by row, row i being
// flat[lo[i]:lo[i+1]], each sorted by column and without repeated columns
// (Edges.Normalise's order), on all cores. A repeated column's entries
// here are one edge whose cost withCosts reads afterwards, so which one
// stays does not matter.
func sortedRows(flat []Edge, lo []int) Edges {
	n := len(lo) - 1
	out := make(Edges, n)
	par.Rows(n, func(i0, i1 int) {
		for i := i0; i < i1; i++ {
			row := flat[lo[i]:lo[i+1]:lo[i+1]]
			slices.SortFunc(row, func(p, q Edge) int { return int(p.B) - int(q.B) })
			out[i] = slices.CompactFunc(row, func(p, q Edge) bool { return p.B == q.B })
		}
	})
	return out
}
