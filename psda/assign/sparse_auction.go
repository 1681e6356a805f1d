package assign

import (
	"math"
	"slices"
)

// This file is the ε-scaling auction of SolveSparse (sparse.go): the bids on
// the sparse rows that give prices and most of an assignment.

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
// thousands of rows each; a few coarse phases spread the change first, and
// ending at 1e-5 instead of 1e-9 leaves the paths as short as after a cold
// start (BenchmarkSparse, warm re-solve with 1% violated edges added).
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
		s.tighten(s.col4row) // exact ties: paths alone (fewValues)
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
// free columns. From about 16 distinct values on, ties are rare and the
// auction pays again, as it does on continuous costs; the threshold 12 and
// its measurements are in docs/performance.md, "Design decisions and the
// measurements behind them".
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
