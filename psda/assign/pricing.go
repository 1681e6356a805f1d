package assign

import (
	"errors"
	"math"
	"runtime/debug"
	"slices"

	"github.com/psda-dev/psda/psda/internal/par"
	"github.com/psda-dev/psda/psda/internal/topk"
)

// This file is the pricing loop (docs/design.md, "The pricing loop";
// docs/method.md, "The sparse exact path"): an assignment too large to
// store, or too costly to solve densely, is solved on candidate edges and
// priced against every dense edge, the violators joining the graph, until
// the potentials hold for all of them. psda's sparse stages run it to that
// certificate; the dense LSAP's warm start (warm.go) runs it on the dense
// matrix for a few passes and lets its exact phase finish. pricing_pass.go
// holds the passes and the bounds that spare them.

// PricedModel is what the pricing loop asks of a problem. The cost of edge
// (a, b) between a priced row a < Pricing.Rows and a priced column
// b < Pricing.Cols, whose cross part is x, is (r[a] + c[b] + Coef·x)·Scale;
// the problem may have more rows and columns (dummies, copies of a column),
// whose edges are all in the graph. The model computes cross parts (from
// features by Gram passes in psda, read from the matrix in warm.go) and
// builds the graph; the loop owns the potentials and the certificate.
type PricedModel interface {
	// Terms returns the row and column terms r and c; fixed during Solve.
	Terms() (r, c []float64)
	// ColPot returns, for each priced column b, the largest potential among
	// the problem's columns that stand for b (its copies), in a new slice.
	ColPot(v []float64) []float64
	// Graph builds the problem's sparse cost matrix from the normalised
	// candidate edges adj with the current terms.
	Graph(adj Edges) *Graph
	// Pass runs a pass over the rows in sub (nil: all) and hands every
	// dense edge's cross part to row (edges (a, b0+k)) or col (edges
	// (a0+k, b), or (idx[a0+k], b) when idx is not nil), concurrently; in
	// float32 with f32 (cross parts then within ER[a] + EC[b]).
	Pass(sub []int, f32 bool, row func(a, b0 int, xs []float64), col func(b, a0 int, xs []float64, idx []int))
	// PassCols runs a pass over the columns in cols and calls visit(a, b, x)
	// for every dense edge into them, concurrently.
	PassCols(cols []int, visit func(a, b int, x float64))
	// At returns the exact cross part of edge (a, b).
	At(a, b int) float64
}

// Pricing is one problem for the pricing loop: its model, its shape, the
// bounds that spare passes, and the policy of the loop.
type Pricing struct {
	Model       PricedModel
	Rows, Cols  int // priced rows and columns
	Scale, Coef float64
	NoDiag      bool // edge (a, a) does not exist
	// Symmetric: the costs and the candidate graph are symmetric (Link adds
	// both orientations), so the potentials can be too (see potentials),
	// and the model's full pass may hand each pair once. A pass over some
	// rows must then hand them by rows (Pass's row): the first screen's
	// hub pass reads each row's entries as its column's too.
	Symmetric bool
	// TauR[a] and TauC[b], when not nil, bound from below the cross part of
	// every edge (a, b) outside the candidate graph: the largest of those
	// kept by a candidate pass for row a and for column b, less the error
	// bounds of a float32 pass (+Inf when a list holds the whole line).
	// They screen rows (Screen); they need Coef·Scale > 0.
	TauR, TauC []float64
	// ER and EC, when not nil, bound a float32 pass's error in the cross
	// part of edge (a, b) by ER[a] + EC[b]; the pricing passes then run in
	// float32 (price).
	ER, EC []float64

	// Keep is the number of edges a pricing pass keeps per row: the most
	// violated ones, checked again after every re-solve.
	Keep int
	// IndexTies keeps, among edges of equal reduced cost, those of smaller
	// column (topk.NewByIndex) instead of a pseudo-random choice (topk.New),
	// which spreads duplicated rows over distinct tied columns so that the
	// kept edges can form a matching. A speed trade-off for the dense warm
	// start, whose exact phase makes it correct whatever it keeps: a model
	// that offers each row in index order then has an edge that ties the
	// bound refused at one comparison, and on tie-heavy costs most edges
	// tie it (BenchmarkWarmAttempt).
	IndexTies bool
	// MaxPasses, when positive, stops the loop after that many pricing
	// passes whether or not the potentials hold everywhere (a warm start
	// whose exact phase finishes the work); 0 runs to the certificate.
	MaxPasses int
	// MaxAdd, when positive, gives up (ErrPricingGaveUp) when one check
	// finds more violators than that: tie-heavy costs, where a warm start
	// would add most of the matrix.
	MaxAdd int
	// Hooks stop the loop (polled after every pass) and report the
	// solves' progress.
	Hooks *Hooks
	// Trace, when set, receives one line per round (benchmarks).
	Trace func(format string, args ...any)
	// BeforePass, when set, is called before each pricing pass with its
	// rows (nil: all) and the solution whose potentials it prices, so
	// that the model can do more in the same pass (warmStart's
	// denseModel).
	BeforePass func(sub []int, sol *Solution)
	// BeforeGraph, when set, is called with the candidate edges before
	// each graph is built from them (Model.Graph; the first included, the
	// last graph already let go of); an error it returns ends Solve with
	// that error. Pricing rounds add edges whose number no estimate made
	// before the solve bounds (psda refuses there a graph that would not
	// fit in the memory left, instead of the process being killed).
	BeforeGraph func(adj Edges) error
}

// ErrPricingGaveUp is returned by Pricing.Solve when a check found more
// than MaxAdd violators.
var ErrPricingGaveUp = errors.New("assign: pricing gave up: too many violated edges")

// PriceTol is the dual-feasibility tolerance of the pricing loop: 1e-9 of
// the largest finite cost in c, with no absolute part, since PSDA's costs
// carry 1/k² and the feature scale (the paper's 2-D experiment with k = 64
// has entries near 1e-7, where an absolute 1e-9 had let the sparse path
// stop 1e-5 above the optimum). +Inf entries (forbidden, in the dense
// warm start) do not count, nor do NaNs (which the solvers refuse). The
// pass is split over the cores (psda calls it on every dense matrix it
// certifies), its result the same whatever their number.
func PriceTol(c []float64) float64 {
	return 1e-9 * maxAbsFinite(c)
}

// lists returns empty kept lists, Keep edges for each row, ties broken
// as IndexTies says.
func (st *Pricing) lists() *topk.Lists {
	if st.IndexTies {
		return topk.NewByIndex(st.Rows, st.Keep)
	}
	return topk.New(st.Rows, st.Keep)
}

func (st *Pricing) trace(format string, args ...any) {
	if st.Trace != nil {
		st.Trace(format, args...)
	}
}

// Solve solves the problem on the candidate edges adj, which it grows, and
// prices until the potentials hold for every dense edge: the result is then
// optimal for the dense problem, with potentials that prove it, and the
// RowBounds the proof leaves. With MaxPasses it may stop before (the result
// is then optimal on adj only, with no RowBounds);
// with MaxAdd it may give up (ErrPricingGaveUp), returning with it the last
// solution, optimal on the graph before the check's violators joined it
// (warmStart seeds its auction with it). It returns ErrNoPerfect
// (wrapped) when adj holds no perfect matching and Hooks' Stop error when
// they stop it.
//
// With z[a] = U[a] − r[a]·Scale and w[b] = V[b] − c[b]·Scale the reduced
// cost of edge (a, b) is Coef·x·Scale − z[a] − w[b], whatever the terms. A
// pricing pass keeps, for each row it visits, the Keep edges of least
// reduced cost outside the graph (kept); every other edge of the row then
// costs at least the largest kept one, top. After a re-solve (whose warm
// start moves few potentials: it only grows shortest paths from the rows it
// frees) the kept edges are checked exactly, violators join the graph, and a
// row stays certified while top − Δz[a] − max_b Δw[b] >= 0 (changes since
// its pricing); only the rows where that fails are priced again, by a pass
// over those rows alone. The candidate lists (TauR, TauC) serve as the
// first pricing (screen): a row whose bound from them is feasible needs no
// pass, so that when the candidates hold the optimum, as they mostly do, no
// full pricing pass runs; after a re-solve the same bound, at the new
// potentials, clears rows whose tails the moves used up. The terms stay
// fixed: pricing passes (float32 where ER bounds their error, see price)
// never change them.
func (st *Pricing) Solve(adj Edges) (*Solution, *RowBounds, error) {
	pr := newPricing(st, adj)
	if err := pr.resolve(); err != nil {
		return nil, nil, err
	}
	st.trace("first solve: %d edges, cost %.12g", len(pr.g.Col), pr.sol.Cost)
	sub := []int(nil) // rows to price; nil: all
	// screens: the candidate lists' thresholds bound the edges outside them.
	screens := st.TauR != nil && st.Coef*st.Scale > 0
	if screens {
		var err error
		if sub, err = pr.screenAll(); err != nil {
			return nil, nil, err
		}
	}
	for pass := 0; ; pass++ {
		if st.Symmetric && len(sub) > st.Rows/2 {
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
			if st.MaxAdd > 0 && added > st.MaxAdd {
				// The solution before the violators: optimal on the
				// graph it was solved on, a seed for the caller's fallback.
				return pr.sol, nil, ErrPricingGaveUp
			}
			dirty, pr.bulk = true, violRows > st.Rows/4 && added > 8*violRows
		}
		if len(sub) == 0 {
			return pr.sol, pr.rowBounds(), nil
		}
		if st.MaxPasses > 0 && pass+1 >= st.MaxPasses {
			return pr.sol, nil, nil
		}
	}
}

// pricing is the state of one Solve: the candidate graph and its current
// solution, and for every row the certificate of its edges outside the
// graph.
type pricing struct {
	st  *Pricing
	adj Edges
	// kept holds each row's Keep edges of least reduced cost outside the
	// graph at its last pricing; tail[a] is a lower bound, at the
	// potentials of pass stamp[a] (z0[a], w0[stamp[a]]), on the reduced cost
	// of every edge of row a outside the graph and its kept list.
	kept *topk.Lists
	// best is the lists a pricing pass fills before its rows are copied
	// to kept (scratch): one Rows × Keep allocation per Solve.
	best     *topk.Lists
	z0, tail []float64
	stamp    []int
	need64   []bool      // rows whose next pricing runs in float64 (see price)
	w0       [][]float64 // w at each pass
	rt, ct   []float64   // the terms, fixed
	sol      *Solution
	g        *Graph
	bulk     bool  // the last check added many violators per row in many rows
	byTau    []int // the columns sorted by TauC (screens), once
	// last holds what the last check proved about each row (rowBounds).
	last struct {
		slack, limit []float64 // the rows' tails' margins and largest rises
		tau          float64   // the largest rise of a column outside cols
		colLow       []float64 // least reduced cost into cols per row (nil: no column pass)
	}
}

func newPricing(st *Pricing, adj Edges) *pricing {
	pr := &pricing{st: st, adj: adj, kept: st.lists(),
		z0: make([]float64, st.Rows), stamp: make([]int, st.Rows), tail: make([]float64, st.Rows),
		need64: make([]bool, st.Rows)}
	pr.rt, pr.ct = st.Model.Terms()
	return pr
}

// resolve builds the graph from adj and solves it: from scratch the first
// time, then warm from the last solution.
func (pr *pricing) resolve() (err error) {
	pr.adj.Normalise()
	// The last graph is garbage once the next is built: let go of it
	// first and, when it is large, collect it and return its pages to the
	// system (the heap may grow to twice its live bytes before the
	// collector runs on its own, and the next graph, a little larger, does
	// not fit in the hole the last one leaves, whose pages stay resident
	// until the scavenger returns them). psda's sparse Stage 1 repeats every
	// edge once per copy of its column: two graphs at once had doubled its
	// peak; after a collection alone the hole still added 100 MB to a peak
	// of 330 MB (16000 × 4000 clustered, a pricing round).
	if old := pr.g; old != nil {
		pr.g = nil
		if len(old.Col) >= collectEdges {
			debug.FreeOSMemory()
		}
	}
	if f := pr.st.BeforeGraph; f != nil {
		if err := f(pr.adj); err != nil {
			return err
		}
	}
	pr.g = pr.st.Model.Graph(pr.adj)
	h := pr.st.Hooks
	switch {
	case pr.sol == nil:
		pr.sol, err = SolveSparse(pr.g, nil, h)
	case pr.bulk:
		// Dozens of violators a row in many rows: their minima dropped
		// far, so their augmenting paths are long, and the potentials
		// move nearly everywhere anyway, sending most rows back to
		// pricing; a warm auction spreads the change at once. With a
		// few violators a row the paths stay short and keep most tails
		// valid, where the auction would move the potentials of rows
		// already priced and cost a full pricing pass (docs/performance.md,
		// "Design decisions and the measurements behind them").
		pr.sol, err = SolveSparse(pr.g, pr.sol, h)
	default:
		pr.sol, err = ResolveSparse(pr.g, pr.sol, h)
	}
	return err
}

// collectEdges is the number of edges (12 bytes each) from which resolve
// collects the last graph before the next is built; a forced collection
// costs milliseconds. Below it the garbage is a few MB (1 << 22, 48 MB, had
// let the graphs of the sparse Stage 1 at 6000 × 6000 pile up to a third
// of its peak).
const collectEdges = 1 << 18

// tauOrder returns the columns sorted by TauC (Pricing.byTauC), sorted at
// the first call: the screens after every re-solve share it.
func (pr *pricing) tauOrder() []int {
	if pr.byTau == nil {
		pr.byTau = pr.st.byTauC()
	}
	return pr.byTau
}

// potentials returns z and w of the current solution.
func (pr *pricing) potentials() (z, w []float64) {
	st := pr.st
	z, w = make([]float64, st.Rows), st.Model.ColPot(pr.sol.V)
	for a := range z {
		z[a] = pr.sol.U[a] - pr.rt[a]*st.Scale
	}
	for b := range w {
		w[b] -= pr.ct[b] * st.Scale
	}
	if st.Symmetric {
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
	st := pr.st
	z, w := pr.potentials()
	tol := PriceTol(pr.g.Cost)
	hubs := st.screenSplit(pr.tauOrder(), z, w, pr.tail, tol)
	if len(hubs) > 0 && st.Symmetric {
		// The edges into the columns of largest w, priced into kept lists
		// (the rows' kept edges are checked after every re-solve, and their
		// tails cover the hubs with margin), by a pass over the hubs' rows:
		// with symmetric costs row b holds the edges into column b, and the
		// same pass prices the hubs' own rows whole (their z is w: they are
		// the rows that fail the screen most). A hub row's list thus takes
		// its row's entries only, not its column's again.
		best := pr.scratch(nil)
		hub := make([]bool, st.Rows)
		for _, b := range hubs {
			hub[b] = true
		}
		for a, t := range pr.tail {
			if !hub[a] {
				// The screen bounds the row's other edges by t: its hub
				// edges of reduced cost t or more leave its tail as it
				// is, so they need not be kept (nor looked up in adj).
				best.Cap(a, t)
			}
		}
		// In float32 where the model bounds the error, as price runs.
		f32 := st.ER != nil
		zl, wl := st.lowered(z, w)
		row, _ := best.Sinks(st.Coef*st.Scale, zl, wl, st.NoDiag, pr.adj.Has)
		_, col := best.Sinks(st.Coef*st.Scale, zl, wl, st.NoDiag, func(a, b int) bool { return hub[a] || pr.adj.Has(a, b) })
		st.Model.Pass(hubs, f32, func(a, b0 int, xs []float64) {
			row(a, b0, xs)
			col(a, b0, xs, nil)
		}, nil)
		if err := st.Hooks.stop(); err != nil {
			return nil, err
		}
		if f32 {
			st.exactKept(best, par.Indices(nil, st.Rows), z, w, pr.need64, tol)
		}
		for a := range pr.tail {
			pr.kept.CopyRow(best, a)
			if hub[a] {
				pr.tail[a] = pr.kept.Limit(a)
			} else {
				pr.tail[a] = min(pr.tail[a], pr.kept.Limit(a))
			}
		}
	} else if len(hubs) > 0 {
		// As above, by a column pass into the kept lists.
		best := pr.scratch(nil)
		cs := st.Coef * st.Scale
		st.Model.PassCols(hubs, func(a, b int, x float64) {
			if st.NoDiag && a == b {
				return
			}
			r := cs*x - z[a] - w[b]
			mu := best.Stripe(a / topk.LockBlock)
			mu.Lock()
			// Beats before Has, as in the sinks: ties with the bound are
			// refused without a search.
			if best.Beats(a, r, int32(b)) && !pr.adj.Has(a, b) {
				best.Offer(a, r, int32(b), x)
			}
			mu.Unlock()
		})
		if err := st.Hooks.stop(); err != nil {
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
	st.trace("screen: %d of %d rows to price, %d hub columns priced", len(sub), st.Rows, len(hubs))
	return sub, nil
}

// scratch returns the lists for a pass over the rows sub (nil: all),
// those rows empty. They are allocated at the first call and reused: a
// new Rows × Keep allocation per pass, however few its rows, was garbage
// that piled up between collections (the sparse Stage 1's peak,
// psda's sparse1Bytes).
func (pr *pricing) scratch(sub []int) *topk.Lists {
	if pr.best == nil {
		pr.best = pr.st.lists()
		return pr.best
	}
	if sub == nil {
		for a := range pr.st.Rows {
			pr.best.Reset(a)
		}
	}
	for _, a := range sub {
		pr.best.Reset(a)
	}
	return pr.best
}

// priceRows runs a pricing pass over the rows sub (nil: all) and restarts
// their certificates from it.
func (pr *pricing) priceRows(sub []int) error {
	st := pr.st
	z, w := pr.potentials()
	best := pr.scratch(sub)
	if st.BeforePass != nil {
		st.BeforePass(sub, pr.sol)
	}
	if err := st.price(best, sub, z, w, pr.adj.Has, pr.need64, PriceTol(pr.g.Cost)); err != nil {
		return err
	}
	for _, a := range par.Indices(sub, st.Rows) {
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
	st := pr.st
	tol := PriceTol(pr.g.Cost)
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
	slack := make([]float64, st.Rows) // top − Δz: the tail's margin
	limit := make([]float64, st.Rows) // the largest rise since its pass
	for a := range slack {
		violated := func(b int, x float64) bool { return st.Coef*x*st.Scale-z[a]-w[b] < -tol && !pr.adj.Has(a, b) }
		grow := 0
		pr.kept.Each(a, func(b int, _, x float64) {
			if violated(b, x) {
				grow++
			}
		})
		if grow > 0 {
			// Counted first, so that the row grows once, to its size: rows
			// built sized ahead (psda's sparse Stage 1) have no room, and
			// append would double thousands of them (at 20000 × 20000
			// clustered, 740,000 violators in 7,300 rows).
			pr.adj.Grow(a, grow)
			pr.kept.Each(a, func(b int, _, x float64) {
				if violated(b, x) {
					st.Link(pr.adj, a, b, x)
					added++
				}
			})
			violRows++
		}
		slack[a], limit[a] = pr.tail[a]-(z[a]-pr.z0[a]), capK[pr.stamp[a]]
	}
	var cols []int
	sub, cols, pr.last.tau = splitCheck(slack, limit, rise, tol)
	if len(sub) > 0 && screens {
		// The candidate lists' bound at the current potentials
		// certifies rows whose tails the potentials' moves used up.
		scr := make([]float64, st.Rows)
		st.screenBy(pr.tauOrder(), z, w, scr, nil)
		n0 := len(sub)
		sub = slices.DeleteFunc(sub, func(a int) bool { return scr[a] >= -tol })
		st.trace("  screen: %d of %d rows cleared", n0-len(sub), n0)
	}
	st.trace("pass %d.%d: %d edges, cost %.12g, %d violating edges added, %d rows and %d columns to price",
		pass, iter, len(pr.g.Col), pr.sol.Cost, added, len(sub), len(cols))
	pr.last.slack, pr.last.limit, pr.last.colLow = slack, limit, nil
	if added == 0 && len(sub) == 0 && len(cols) > 0 {
		// The edges into the columns that rose most, priced now;
		// with the row tails below the others' rise, they complete
		// the certificate.
		pr.last.colLow = slices.Repeat([]float64{math.Inf(1)}, st.Rows)
		added = st.priceCols(cols, z, w, tol, pr.adj, pr.last.colLow)
		if err := st.Hooks.stop(); err != nil {
			return nil, 0, 0, err
		}
		st.trace("  column pass over %d: %d violating edges added", len(cols), added)
	}
	return sub, added, violRows, nil
}

// RowBounds is what a Solve run to its certificate proved about each
// priced row a under its final potentials z, w (symmetric when the problem
// is): every edge (a, b) outside the graph and outside Kept's list of row a
// has reduced cost Coef·x·Scale − z[a] − w[b] >= Low[a]. Kept holds the
// rows' kept edges with their exact cross parts (aux). psda's Stage 2
// starts its blossom rounds' row records from them.
type RowBounds struct {
	Low  []float64
	Kept *topk.Lists
}

// rowBounds returns the RowBounds of the last check (which proved the
// potentials feasible): into the columns whose potential rose by at most τ
// since the row's pass, the row's tail less its potential's change and
// that rise; into the others (cols), the least reduced cost the column pass
// met; or the candidate lists' bound (Screen) when that is higher.
func (pr *pricing) rowBounds() *RowBounds {
	st, l := pr.st, &pr.last
	low := make([]float64, st.Rows)
	for a := range low {
		low[a] = l.slack[a] - min(l.tau, l.limit[a])
		if l.colLow != nil {
			low[a] = min(low[a], l.colLow[a])
		}
	}
	if st.TauR != nil && st.Coef*st.Scale > 0 {
		z, w := pr.potentials()
		scr := make([]float64, st.Rows)
		st.screenBy(pr.tauOrder(), z, w, scr, nil)
		for a, t := range scr {
			low[a] = max(low[a], t)
		}
	}
	return &RowBounds{Low: low, Kept: pr.kept}
}

// Link adds edge (a, b) with cross part x to adj, and (b, a) too when the
// problem is symmetric, whose graph must stay symmetric (see potentials).
func (st *Pricing) Link(adj Edges, a, b int, x float64) {
	adj.Add(a, b, x)
	if st.Symmetric {
		adj.Add(b, a, x)
	}
}
