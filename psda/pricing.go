package psda

import "github.com/psda-dev/psda/psda/assign"

// This file ties the sparse stages to the pricing loop, assign.Pricing
// (docs/design.md, "The pricing loop"), which the dense LSAP's warm start
// runs too: psda's side is the models (sparse1, sparse2: cross parts by
// Gram passes, float32 bounds, column copies and dummies) and the policy
// below.

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

// priceTol is the pricing loop's tolerance, assign.PriceTol.
func priceTol(c []float64) float64 { return assign.PriceTol(c) }

// pricedStage is one sparse stage for the pricing loop: the fields of its
// assign.Pricing (see there), which pricing builds, with the policy that
// runs to the certificate (no MaxPasses or MaxAdd) and keeps sparseAdd
// edges a row.
type pricedStage struct {
	model       assign.PricedModel
	rows, cols  int
	scale, coef float64
	noDiag      bool
	symmetric   bool
	phase       int // the Monitor phase of the solves
	tauR, tauC  []float64
	eR, eC      []float64
}

// pricing returns the loop's view of st, stopped and followed by mon.
func (st *pricedStage) pricing(mon *Monitor) *assign.Pricing {
	return &assign.Pricing{Model: st.model, Rows: st.rows, Cols: st.cols, Scale: st.scale, Coef: st.coef,
		NoDiag: st.noDiag, Symmetric: st.symmetric, TauR: st.tauR, TauC: st.tauC, ER: st.eR, EC: st.eC,
		Keep: sparseAdd, Hooks: mon.hooks(st.phase), Trace: sparseTrace}
}

// solve solves the stage on the candidate edges adj, which it grows, and
// prices until the potentials hold for every dense edge (assign.Pricing's
// Solve): the result is then optimal for the dense problem, with
// potentials that prove it, and the bounds on every row the proof leaves.
func (st *pricedStage) solve(adj edges, mon *Monitor) (*assign.Solution, *assign.RowBounds, error) {
	return st.pricing(mon).Solve(assign.Edges(adj))
}

// graph builds the stage's sparse cost matrix from adj.
func (st *pricedStage) graph(adj edges) *assign.Graph { return st.model.Graph(assign.Edges(adj)) }

// screen is assign.Pricing's Screen: the candidate lists' bound on the
// edges of each row outside them.
func (st *pricedStage) screen(z, w, tail []float64, skip []bool) {
	st.pricing(nil).Screen(z, w, tail, skip)
}

// addEdges is assign.Pricing's AddEdges: the violators found, linked in
// (row, column) order.
func (st *pricedStage) addEdges(adj edges, found [][2]int, cross []float64) int {
	return st.pricing(nil).AddEdges(assign.Edges(adj), found, cross)
}

// lowerBy sets tau[i] −= e[i] + emax.
func lowerBy(tau, e []float64, emax float64) {
	for i := range tau {
		tau[i] -= e[i] + emax
	}
}
