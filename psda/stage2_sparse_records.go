package psda

import (
	"cmp"
	"math"
	"slices"

	"github.com/psda-dev/psda/psda/assign"
	"github.com/psda-dev/psda/psda/internal/cost"
	"github.com/psda-dev/psda/psda/internal/topk"
)

// This file lets stage2Blossom's pricing rounds reuse what the
// relaxation's pricing and earlier rounds' passes learned about a row (docs/method.md, "The sparse exact
// path"). Every round solves from the same start y0, so the reduced cost
// under y0,
//
//	s0(a, b) = c_ab − y0_a − y0_b,
//
// does not change between rounds, and under a round's duals (Y, Z), with
// δ = Y − y0 and Shared >= 0,
//
//	rc(a, b) = s0(a, b) − δ_a − δ_b + Shared(a, b) >= s0(a, b) − δ_a − δ_b.
//
// Each row keeps a record: its edges of least s0 outside the graph
// (exactly, with their cross parts) and a lower bound low[a] on s0 of every
// other edge of the row outside the graph. The records start from the
// relaxation's pricing (its reduced costs under its final potentials are
// s0, y0 being their symmetric mean: assign.RowBounds), and a row priced
// by a blossom round (priceBlossom) gets a new one. In a round, with a
// threshold τ >= tol, row a needs no pass when δ_a <= τ and
// low[a] − δ_a − τ >= −tol; its kept edges are checked exactly instead.
// Every edge (a, b) outside the graph is then covered: if both ends rose by
// at most tol, y0's feasibility holds it (as stage2Blossom argues); if a
// rose and was cleared, δ_b <= τ either because b rose and was cleared too
// or because b did not rise, so rc(a, b) >= low[a] − δ_a − τ; and every
// row that rose and was not cleared is priced. The blossom duals move y0
// by little (the largest δ lies far below the gaps between a row's nearest
// neighbours under s0: docs/performance.md, "Stage 2 exact: the exact route
// against the former heuristic"), so the records clear nearly every row
// and the blossom rounds need almost no pass.

// rowRecords are the rows' records (see the file comment).
type rowRecords struct {
	kept *topk.Lists // per row: its edges of least s0, with exact cross parts (aux)
	low  []float64   // low[a] <= s0 of every other edge of row a outside the graph
}

// newRowRecords returns records that start from the relaxation's pricing
// (assign.RowBounds): its reduced costs under its final, symmetric
// potentials are s0, since y0 is their mean.
func newRowRecords(low []float64, kept *topk.Lists) *rowRecords {
	return &rowRecords{kept: kept, low: low}
}

// settle completes row a's record after a pass offered it every edge's s0
// (a lower bound when the pass ran in float32: exact says it did not), and
// makes the kept edges' cross parts exact.
func (rc *rowRecords) settle(a int, md *cost.Stage2, exact bool) {
	if !exact {
		t0, t1 := rc.kept.Entries(a)
		for t := t0; t < t1; t++ {
			rc.kept.Aux[t] = md.At(a, int(rc.kept.Idx[t]))
		}
	}
	rc.low[a] = rc.kept.Limit(a)
}

// split divides the rows that rose (duals y, start y0) into those to price
// and those their records clear, whose kept edges are checked instead, at
// the threshold τ (see the file comment) that prices the fewest rows: τ is
// tried at tol and at the 1st, 2nd, 4th, … largest rise.
func (rc *rowRecords) split(rise []int, y, y0 []float64, tol float64) (price, kept []int) {
	delta := func(a int) float64 { return y[a] - y0[a] }
	cleared := func(a int, tau float64) bool {
		da := delta(a)
		return da <= tau && rc.low[a]-da-tau >= -tol
	}
	order := slices.Clone(rise)
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(delta(b), delta(a)) })
	best, bestN := tol, math.MaxInt
	for c := 0; c <= len(order); c = max(2*c, c+1) {
		tau := tol
		if c < len(order) {
			tau = max(tol, delta(order[c]))
		}
		n := 0
		for _, a := range rise {
			if !cleared(a, tau) {
				n++
			}
		}
		if n < bestN {
			best, bestN = tau, n
		}
	}
	for _, a := range rise {
		if cleared(a, best) {
			kept = append(kept, a)
		} else {
			price = append(price, a)
		}
	}
	return price, kept
}

// check returns the kept edges of the rows given that are outside the graph
// (has) and violated under the duals d (reduced cost below −tol), with
// their cross parts.
func (rc *rowRecords) check(rows []int, d *assign.MatchingDuals, has func(a, b int) bool,
	cost func(a, b int, x float64) float64, tol float64) (found [][2]int, cross []float64) {
	for _, a := range rows {
		rc.kept.Each(a, func(b int, _, x float64) {
			if d.ReducedCost(a, b, cost(a, b, x)) < -tol && !has(a, b) {
				found, cross = append(found, [2]int{a, b}), append(cross, x)
			}
		})
	}
	return found, cross
}
