package psda

import (
	"math"
	"slices"

	"github.com/psda-dev/psda/psda/assign"
	"github.com/psda-dev/psda/psda/internal/topk"
)

// This file is the pricing loop of the sparse exact path (docs/method.md,
// "The sparse exact path"): a stage solved on candidate edges (pricedStage)
// is priced against every dense edge by Gram passes until its potentials
// hold for all of them. pricing_pass.go holds the passes and the bounds
// that spare them.

// sparseK is the number of candidate edges kept per row and per column by
// the first pass of Stage 2, and a third of that of Stage 1, whose nearest
// neighbours predict the optimal partners less well (at n = 50,000, d = 512,
// 64 per row left 100,000 violated edges and a second full pricing pass;
// at n = 20,000, 192 left 3,500 and a pass over 2% of the rows). sparseAdd
// is the number of edges a pricing pass keeps per row (96: clustered data
// can have dozens of violated edges per row after the first solve).
// Variables so that tests can force several pricing rounds.
var sparseK, sparseAdd = 64, 96

// sparseTrace, when set (benchmarks), receives one line per sparse round.
var sparseTrace func(format string, args ...any)

func trace(format string, args ...any) {
	if sparseTrace != nil {
		sparseTrace(format, args...)
	}
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
// (dummies) have all their edges in the graph. The stage's model (sparse1,
// sparse2) supplies the terms, the graph and the passes.
type pricedStage struct {
	pricedModel
	rows, cols  int
	scale, coef float64
	noDiag      bool // edge (a, a) does not exist
	// symmetric: the costs and the candidate graph are symmetric (link adds
	// both orientations), so the potentials can be too (see solve), and the
	// full pass computes the upper triangle only.
	symmetric bool
	phase     int
	// tauR[a] and tauC[b] bound from below the cross part of every edge
	// (a, b) outside the candidate graph: the largest of the K kept by the
	// candidate pass for row a and for column b, less the error bounds for
	// a float32 pass (+Inf when the list holds the whole line).
	tauR, tauC []float64
	// eR and eC, when not nil, bound a float32 pass's error in the cross
	// part of edge (a, b) by eR[a] + eC[b]; the pricing passes then run in
	// float32 (price).
	eR, eC []float64
}

// pricedModel is what the pricing loop asks of a sparse stage.
type pricedModel interface {
	// terms returns the row and column terms r and c; fixed during solve.
	terms() (r, c []float64)
	// colPot returns, for each priced column b, the largest potential among
	// the assignment columns that stand for b (its copies), in a new slice.
	colPot(v []float64) []float64
	// graph builds the assignment's sparse cost matrix from the candidates
	// with the current terms.
	graph(adj edges) *assign.Graph
	// pass runs a Gram pass over the rows in sub (nil: all) and hands every
	// dense edge's cross part to row (edges (a, b0+k)) or col (edges
	// (a0+k, b), or (idx[a0+k], b) when idx is not nil), concurrently; in
	// float32 with f32 (cross parts then within eR[a] + eC[b]).
	pass(sub []int, f32 bool, row func(a, b0 int, xs []float64), col func(b, a0 int, xs []float64, idx []int))
	// passCols runs a Gram pass over the columns in cols and calls
	// visit(a, b, x) for every dense edge into them, concurrently.
	passCols(cols []int, visit func(a, b int, x float64))
	// at returns the exact cross part of edge (a, b).
	at(a, b int) float64
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
func (st *pricedStage) solve(adj edges, mon *Monitor) (*assign.Solution, *pricing, error) {
	pr := newPricing(st, adj, mon)
	if err := pr.resolve(); err != nil {
		return nil, nil, err
	}
	trace("first solve: %d edges, cost %.12g", len(pr.g.Col), pr.sol.Cost)
	sub := []int(nil) // rows to price; nil: all
	// screens: the candidate lists' thresholds bound the edges outside them.
	screens := st.tauR != nil && st.coef*st.scale > 0
	if screens {
		var err error
		if sub, err = pr.screenAll(); err != nil {
			return nil, nil, err
		}
	}
	for pass := 0; ; pass++ {
		if st.symmetric && len(sub) > st.rows/2 {
			// A pass over some rows costs their share of a full pass, but a
			// symmetric full pass computes half the Gram matrix only, so it
			// is the cheaper one above half the rows.
			sub = nil
		}
		dirty := false
		if sub == nil || len(sub) > 0 {
			if err := pr.priceRows(sub); err != nil {
				return nil, nil, err
			}
		}
		for iter := 0; ; iter++ {
			if dirty {
				if err := pr.resolve(); err != nil {
					return nil, nil, err
				}
			}
			var added, violRows int
			var err error
			if sub, added, violRows, err = pr.check(pass, iter, screens); err != nil {
				return nil, nil, err
			}
			if added == 0 {
				break
			}
			dirty, pr.bulk = true, violRows > st.rows/4 && added > 8*violRows
		}
		if len(sub) == 0 {
			return pr.sol, pr, nil
		}
	}
}

// pricing is the state of one solve: the candidate graph and its current
// solution, and for every row the certificate of its edges outside the
// graph.
type pricing struct {
	st    *pricedStage
	adj   edges
	mon   *Monitor
	hooks *assign.Hooks
	// kept holds each row's sparseAdd edges of least reduced cost outside
	// the graph at its last pricing; tail[a] is a lower bound, at the
	// potentials of pass stamp[a] (z0[a], w0[stamp[a]]), on the reduced cost
	// of every edge of row a outside the graph and its kept list.
	kept     *topk.Lists
	z0, tail []float64
	stamp    []int
	need64   []bool      // rows whose next pricing runs in float64 (see price)
	w0       [][]float64 // w at each pass
	rt, ct   []float64   // the terms, fixed
	sol      *assign.Solution
	g        *assign.Graph
	bulk     bool // the last check added many violators per row in many rows
	// last holds what the last check proved about each row (rowBounds).
	last struct {
		slack, limit []float64 // the rows' tails' margins and largest rises
		tau          float64   // the largest rise of a column outside cols
		colLow       []float64 // least reduced cost into cols per row (nil: no column pass)
	}
}

func newPricing(st *pricedStage, adj edges, mon *Monitor) *pricing {
	pr := &pricing{st: st, adj: adj, mon: mon, hooks: mon.hooks(st.phase), kept: topk.New(st.rows, sparseAdd),
		z0: make([]float64, st.rows), stamp: make([]int, st.rows), tail: make([]float64, st.rows),
		need64: make([]bool, st.rows)}
	pr.rt, pr.ct = st.terms()
	return pr
}

// resolve builds the graph from adj and solves it: from scratch the first
// time, then warm from the last solution.
func (pr *pricing) resolve() (err error) {
	pr.adj.normalise()
	pr.g = pr.st.graph(pr.adj)
	switch {
	case pr.sol == nil:
		pr.sol, err = assign.SolveSparse(pr.g, nil, pr.hooks)
	case pr.bulk:
		// Dozens of violators a row in many rows: their minima dropped
		// far, so their augmenting paths are long, and the potentials
		// move nearly everywhere anyway, sending most rows back to
		// pricing; a warm auction spreads the change at once. With a
		// few violators a row the paths stay short and keep most tails
		// valid, where the auction would move the potentials of rows
		// already priced and cost a full pricing pass (docs/performance.md,
		// "Design decisions and the measurements behind them").
		pr.sol, err = assign.SolveSparse(pr.g, pr.sol, pr.hooks)
	default:
		pr.sol, err = assign.ResolveSparse(pr.g, pr.sol, pr.hooks)
	}
	return err
}

// potentials returns z and w of the current solution.
func (pr *pricing) potentials() (z, w []float64) {
	st := pr.st
	z, w = make([]float64, st.rows), st.colPot(pr.sol.V)
	for a := range z {
		z[a] = pr.sol.U[a] - pr.rt[a]*st.scale
	}
	for b := range w {
		w[b] -= pr.ct[b] * st.scale
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

// screenAll is the first pricing, by the candidate lists (screen): it sets
// every row's tail and returns the rows whose tails are not feasible.
func (pr *pricing) screenAll() (sub []int, err error) {
	st, mon := pr.st, pr.mon
	z, w := pr.potentials()
	tol := priceTol(pr.g.Cost)
	hubs := st.screenSplit(z, w, pr.tail, tol)
	if len(hubs) > 0 {
		// The edges into the columns of largest w, priced by a column
		// pass into kept lists: the rows' kept edges are checked after
		// every re-solve, and their tails cover the hubs with margin.
		best := topk.New(st.rows, sparseAdd)
		cs := st.coef * st.scale
		st.passCols(hubs, func(a, b int, x float64) {
			if st.noDiag && a == b {
				return
			}
			r := cs*x - z[a] - w[b]
			mu := best.Stripe(a / topk.LockBlock)
			mu.Lock()
			if r <= best.Bound(a) && !pr.adj.has(a, b) {
				best.Offer(a, r, int32(b), x)
			}
			mu.Unlock()
		})
		if err := mon.err(); err != nil {
			return nil, err
		}
		for a := range pr.tail {
			pr.kept.CopyRow(best, a)
			pr.tail[a] = min(pr.tail[a], pr.kept.Limit(a))
		}
	}
	sub = []int{}
	for a, t := range pr.tail {
		if pr.z0[a] = z[a]; t < -tol {
			sub = append(sub, a)
		}
	}
	pr.w0 = append(pr.w0, w)
	trace("screen: %d of %d rows to price, %d hub columns priced", len(sub), st.rows, len(hubs))
	return sub, nil
}

// priceRows runs a pricing pass over the rows sub (nil: all) and restarts
// their certificates from it.
func (pr *pricing) priceRows(sub []int) error {
	st, mon := pr.st, pr.mon
	z, w := pr.potentials()
	best := topk.New(st.rows, sparseAdd)
	if err := st.price(best, sub, z, w, pr.adj.has, pr.need64, priceTol(pr.g.Cost), mon); err != nil {
		return err
	}
	for _, a := range indices(sub, st.rows) {
		pr.kept.CopyRow(best, a)
		pr.z0[a], pr.stamp[a], pr.tail[a] = z[a], len(pr.w0), pr.kept.Limit(a)
	}
	pr.w0 = append(pr.w0, w)
	return nil
}

// check adds to the graph the kept edges that the current potentials
// violate and returns the rows whose certificates no longer hold (sub),
// after a column pass when only columns fail.
func (pr *pricing) check(pass, iter int, screens bool) (sub []int, added, violRows int, err error) {
	st, mon := pr.st, pr.mon
	tol := priceTol(pr.g.Cost)
	z, w := pr.potentials()
	// rise[b]: the largest rise of w[b] since a pass some row's
	// certificate still rests on; capK[k]: the largest since pass k.
	rise := slices.Repeat([]float64{math.Inf(-1)}, len(w))
	capK := slices.Repeat([]float64{math.Inf(-1)}, len(pr.w0))
	used := make([]bool, len(pr.w0))
	for _, k := range pr.stamp {
		used[k] = true
	}
	for k, old := range pr.w0 {
		if used[k] {
			for b, v := range w {
				rise[b] = max(rise[b], v-old[b])
				capK[k] = max(capK[k], v-old[b])
			}
		}
	}
	slack := make([]float64, st.rows) // top − Δz: the tail's margin
	limit := make([]float64, st.rows) // the largest rise since its pass
	for a := range slack {
		n := added
		pr.kept.Each(a, func(b int, _, x float64) {
			if st.coef*x*st.scale-z[a]-w[b] < -tol && !pr.adj.has(a, b) {
				st.link(pr.adj, a, b, x)
				added++
			}
		})
		violRows += b2i(added > n)
		slack[a], limit[a] = pr.tail[a]-(z[a]-pr.z0[a]), capK[pr.stamp[a]]
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
		pass, iter, len(pr.g.Col), pr.sol.Cost, added, len(sub), len(cols))
	pr.last.slack, pr.last.limit, pr.last.colLow = slack, limit, nil
	pr.last.tau = math.Inf(-1)
	isCol := make([]bool, len(w))
	for _, b := range cols {
		isCol[b] = true
	}
	for b, r := range rise {
		if !isCol[b] {
			pr.last.tau = max(pr.last.tau, r)
		}
	}
	if added == 0 && len(sub) == 0 && len(cols) > 0 {
		// The edges into the columns that rose most, priced now;
		// with the row tails below the others' rise, they complete
		// the certificate.
		pr.last.colLow = slices.Repeat([]float64{math.Inf(1)}, st.rows)
		added = st.priceCols(cols, z, w, tol, pr.adj, pr.last.colLow)
		if err := mon.err(); err != nil {
			return nil, 0, 0, err
		}
		trace("  column pass over %d: %d violating edges added", len(cols), added)
	}
	return sub, added, violRows, nil
}

// rowBounds returns, for every row a, a lower bound low[a] on the reduced
// cost under the final potentials of every edge of row a outside the graph
// and its kept list, and the kept lists (with exact cross parts), from the
// last check (which proved the potentials feasible): into the columns whose
// potential rose by at most τ since the row's pass, the row's tail less
// its potential's change and that rise; into the others (cols), the least
// reduced cost the column pass met; or the candidate lists' bound (screen)
// when that is higher. stage2Blossom starts its rows' records from them.
func (pr *pricing) rowBounds() (low []float64, kept *topk.Lists) {
	st, l := pr.st, &pr.last
	low = make([]float64, st.rows)
	for a := range low {
		low[a] = l.slack[a] - min(l.tau, l.limit[a])
		if l.colLow != nil {
			low[a] = min(low[a], l.colLow[a])
		}
	}
	if st.tauR != nil && st.coef*st.scale > 0 {
		z, w := pr.potentials()
		scr := make([]float64, st.rows)
		st.screen(z, w, scr, nil)
		for a, t := range scr {
			low[a] = max(low[a], t)
		}
	}
	return low, pr.kept
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
