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
	kept := topk.New(st.rows, sparseAdd)
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
			best := topk.New(st.rows, sparseAdd)
			cs := st.coef * st.scale
			st.passCols(hubs, func(a, b int, x float64) {
				if st.noDiag && a == b {
					return
				}
				r := cs*x - z[a] - w[b]
				mu := best.Stripe(a / topk.LockBlock)
				mu.Lock()
				if r <= best.Bound(a) && !adj.has(a, b) {
					best.Offer(a, r, int32(b), x)
				}
				mu.Unlock()
			})
			if err := mon.err(); err != nil {
				return nil, err
			}
			for a := range tail {
				kept.CopyRow(best, a)
				tail[a] = min(tail[a], kept.Limit(a))
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
			best := topk.New(st.rows, sparseAdd)
			if err := st.price(best, sub, z, w, adj.has, need64, priceTol(g.Cost), mon); err != nil {
				return nil, err
			}
			for _, a := range indices(sub, st.rows) {
				kept.CopyRow(best, a)
				z0[a], stamp[a], tail[a] = z[a], len(w0), kept.Limit(a)
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
				kept.Each(a, func(b int, _, x float64) {
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

// link adds edge (a, b) with cross part x to adj, and (b, a) too when the
// stage is symmetric, whose graph must stay symmetric (see potentials in
// solve).
func (st *pricedStage) link(adj edges, a, b int, x float64) {
	adj.add(a, b, x)
	if st.symmetric {
		adj.add(b, a, x)
	}
}
