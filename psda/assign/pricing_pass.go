package assign

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/psda-dev/psda/psda/internal/par"
	"github.com/psda-dev/psda/psda/internal/topk"
)

// This file holds the pricing passes of pricing.go's loop and the bounds
// that decide which rows and columns need one: the candidate lists'
// thresholds (Screen, screenSplit) and the potentials' moves (splitCheck).

// price runs a pricing pass over the rows sub (nil: all) into best: each
// row keeps the Keep edges outside adj (has) of least reduced cost under
// (z, w). When the problem has float32 bounds (ER), the pass runs in
// float32 (the cheaper kernel) and offers lower bounds,
// cs·x̃ − z[a] − w[b] − cs·(ER[a] + EC[b]), so that every edge a row does
// not keep still costs at least its list's limit; the kept edges then get
// their exact cross parts (aux, from At), which the violator checks read.
// A row whose float32 list holds no violator and yet cannot certify it
// (limit below −tol: more than Keep edges within the error bound of
// tight) is marked in need64 and priced in float64 the next time, as are
// the rows marked before.
func (st *Pricing) price(best *topk.Lists, sub []int, z, w []float64, has func(a, b int) bool, need64 []bool, tol float64) error {
	cs, m := st.Coef*st.Scale, st.Model
	if st.ER == nil {
		row, col := best.Sinks(cs, z, w, st.NoDiag, has)
		m.Pass(sub, false, row, col)
		return st.Hooks.stop()
	}
	zl, wl := st.lowered(z, w)
	row, col := best.Sinks(cs, zl, wl, st.NoDiag, has)
	m.Pass(sub, true, row, col)
	if err := st.Hooks.stop(); err != nil {
		return err
	}
	rows := par.Indices(sub, st.Rows)
	redo := []int{}
	for _, a := range rows {
		if need64[a] {
			redo = append(redo, a)
			best.Reset(a)
		}
	}
	st.exactKept(best, rows, z, w, need64, tol)
	if len(redo) > 0 {
		st.trace("  %d rows priced in float64", len(redo))
		row, col := best.Sinks(cs, z, w, st.NoDiag, has)
		m.Pass(redo, false, row, col)
		for _, a := range redo {
			need64[a] = false
		}
	}
	return st.Hooks.stop()
}

// lowered returns z and w raised by the float32 error bounds, cs·ER and
// cs·EC (cs = Coef·Scale > 0), so that a float32 cross part x̃ offered at
// cs·x̃ − zl[a] − wl[b] is a lower bound on the edge's reduced cost; z and
// w themselves when the model has no bounds.
func (st *Pricing) lowered(z, w []float64) (zl, wl []float64) {
	if st.ER == nil {
		return z, w
	}
	cs := st.Coef * st.Scale
	zl, wl = slices.Clone(z), slices.Clone(w)
	for a, e := range st.ER {
		zl[a] += cs * e
	}
	for b, e := range st.EC {
		wl[b] += cs * e
	}
	return zl, wl
}

// exactKept gives the kept edges of the rows, filled by a float32 pass
// (lowered), their exact cross parts (aux, from At), which the violator
// checks read, and marks in need64 the rows whose lists hold no violator
// and yet cannot certify them (limit below −tol: more than Keep edges
// within the error bound of tight), for a float64 pricing next.
func (st *Pricing) exactKept(best *topk.Lists, rows []int, z, w []float64, need64 []bool, tol float64) {
	cs, m := st.Coef*st.Scale, st.Model
	par.Rows(len(rows), func(k0, k1 int) {
		for _, a := range rows[k0:k1] {
			clean := true // no violator among the kept edges
			t0, t1 := best.Entries(a)
			for t := t0; t < t1; t++ {
				b := int(best.Idx[t])
				best.Aux[t] = m.At(a, b)
				clean = clean && cs*best.Aux[t]-z[a]-w[b] >= -tol
			}
			need64[a] = clean && best.Limit(a) < -tol
		}
	})
}

// priceCols runs a column pass over cols, adds to adj every edge into them
// whose reduced cost under (z, w) is below −tol and returns their number.
// When low is not nil it also lowers low[a] to the least reduced cost of
// the edges (a, b) into cols outside adj.
func (st *Pricing) priceCols(cols []int, z, w []float64, tol float64, adj Edges, low []float64) int {
	var mu sync.Mutex
	var found [][2]int
	var cross []float64
	var bits []uint64 // low as bits, lowered by compare-and-swap
	if low != nil {
		bits = make([]uint64, len(low))
		for a, v := range low {
			bits[a] = math.Float64bits(v)
		}
	}
	cs := st.Coef * st.Scale
	st.Model.PassCols(cols, func(a, b int, x float64) {
		if st.NoDiag && a == b {
			return
		}
		r := cs*x - z[a] - w[b]
		if bits != nil && r < math.Float64frombits(atomic.LoadUint64(&bits[a])) && !adj.Has(a, b) {
			for {
				old := atomic.LoadUint64(&bits[a])
				if r >= math.Float64frombits(old) || atomic.CompareAndSwapUint64(&bits[a], old, math.Float64bits(r)) {
					break
				}
			}
		}
		if r >= -tol {
			return
		}
		mu.Lock()
		found, cross = append(found, [2]int{a, b}), append(cross, x)
		mu.Unlock()
	})
	for a := range low {
		low[a] = math.Float64frombits(bits[a])
	}
	added := st.AddEdges(adj, found, cross)
	if added > 0 {
		adj.Normalise()
	}
	return added
}

// Screen sets tail[a] to a lower bound on the reduced cost of every edge of
// row a outside the candidate graph into the columns b with !skip[b] (skip
// nil: all), min_b cs·max(TauR[a], TauC[b]) − z[a] − w[b] with cs =
// Coef·Scale > 0 (such an edge is in neither its row's nor its column's
// list), in O((Rows + Cols)·log Cols): over the columns sorted by TauC, a
// prefix maximum of w serves those with TauC[b] <= TauR[a] and a suffix
// minimum of cs·TauC[b] − w[b] the others.
func (st *Pricing) Screen(z, w, tail []float64, skip []bool) {
	st.screenBy(st.byTauC(), z, w, tail, skip)
}

// byTauC returns the columns sorted by TauC, which Solve computes once
// (TauC is fixed) for its many screens.
func (st *Pricing) byTauC() []int {
	order := make([]int, len(st.TauC))
	for b := range order {
		order[b] = b
	}
	slices.SortFunc(order, func(p, q int) int { return cmp.Compare(st.TauC[p], st.TauC[q]) })
	return order
}

// screenBy is Screen over the columns sorted by TauC (byTauC). Its result
// does not depend on the order among equal TauC: row a reads the maximum of
// w over the columns with TauC[b] < TauR[a] and the minimum over the
// others, sets that ties do not change.
func (st *Pricing) screenBy(byTau []int, z, w, tail []float64, skip []bool) {
	cs := st.Coef * st.Scale
	order := byTau
	if skip != nil {
		order = make([]int, 0, len(byTau))
		for _, b := range byTau {
			if !skip[b] {
				order = append(order, b)
			}
		}
	}
	pre := make([]float64, len(order)+1) // max w over order[:k]
	pre[0] = math.Inf(-1)
	for k, b := range order {
		pre[k+1] = max(pre[k], w[b])
	}
	suf := make([]float64, len(order)+1) // min of cs·TauC − w over order[k:]
	suf[len(order)] = math.Inf(1)
	for k := len(order) - 1; k >= 0; k-- {
		b := order[k]
		suf[k] = min(suf[k+1], cs*st.TauC[b]-w[b])
	}
	for a, ta := range st.TauR {
		k, _ := slices.BinarySearchFunc(order, ta, func(b int, t float64) int { return cmp.Compare(st.TauC[b], t) })
		// For k = 0 the first term is +Inf; for ta = +Inf the tail is +Inf.
		tail[a] = min(cs*ta-pre[k], suf[k]) - z[a]
	}
}

// screenSplit fills tail from the candidate lists (Screen over the columns
// byTau, sorted by TauC), leaving out the columns it returns, which the
// caller prices by a column pass: the 0, 1, 2, 4, … (at most a quarter)
// columns of largest w, whose potential fails
// most rows, chosen so that the column pass (Rows entries a column) and the
// row pass over the rows that still fail (Cols entries a row; all rows
// beyond a quarter) price the fewest entries. With Symmetric the column
// pass prices the hubs' rows too (screenAll), so they do not count as
// failing.
func (st *Pricing) screenSplit(byTau []int, z, w, tail []float64, tol float64) []int {
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
		st.screenBy(byTau, z, w, tail, skip)
		fail := 0
		for a, t := range tail {
			// Symmetric: the hubs' rows are priced by the hubs' pass.
			if t < -tol && !(st.Symmetric && skip[a]) {
				fail++
			}
		}
		if fail > st.Rows/4 {
			fail = st.Rows
		}
		return int64(c)*int64(st.Rows) + int64(fail)*int64(len(w))
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

// splitCheck decides how to certify the rows' tails after the potentials
// moved: row a's edges outside the graph and its kept list cost at least
// slack[a] − rise[b] now, and rise[b] <= limit[a] (the largest rise since
// the row's pass). With a threshold τ, the columns whose rise exceeds τ are
// priced by a column pass and the rows with slack[a] − min(τ, limit[a]) <
// −tol by a row pass. It tries τ at the 0th, 1st, 2nd, 4th, 8th, …
// largest rise (at most a quarter of the columns in the column pass),
// keeps the one that prices the fewest lines, and returns the rows, the
// columns and τ, the largest rise of a column not among them (−Inf if
// none).
func splitCheck(slack, limit, rise []float64, tol float64) (rows, cols []int, tau float64) {
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
	tau = tauAt(bestC)
	rows, _ = failing(tau, []int{})
	return rows, order[:bestC], tau
}

// AddEdges links the violators found (with their cross parts) that adj
// does not hold yet and returns how many. They were collected concurrently:
// added in (row, column) order, the graph, and with it the matching among
// equal-cost optima and the last bits of the bound, do not depend on the
// goroutines' schedule.
func (st *Pricing) AddEdges(adj Edges, found [][2]int, cross []float64) int {
	found, cross = byEdge(found, cross)
	added := 0
	for k, e := range found {
		if !adj.Has(e[0], e[1]) {
			st.Link(adj, e[0], e[1], cross[k])
			added++
		}
	}
	return added
}

// byEdge returns found and cross sorted by (row, column).
func byEdge(found [][2]int, cross []float64) ([][2]int, []float64) {
	order := make([]int, len(found))
	for k := range order {
		order[k] = k
	}
	slices.SortFunc(order, func(p, q int) int {
		if c := cmp.Compare(found[p][0], found[q][0]); c != 0 {
			return c
		}
		return cmp.Compare(found[p][1], found[q][1])
	})
	f, x := make([][2]int, len(found)), make([]float64, len(found))
	for k, o := range order {
		f[k], x[k] = found[o], cross[o]
	}
	return f, x
}
