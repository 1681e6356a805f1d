package assign

import (
	"errors"
	"math"
	"slices"

	"github.com/psda-dev/psda/psda/internal/par"
	"github.com/psda-dev/psda/psda/internal/topk"
)

// warmK is the number of candidate columns warmStart keeps per row and the
// number of candidate rows it keeps per column.
const warmK = 16

// warmMin is the least n at which solveLSAP tries warmStart: below it the
// auction takes milliseconds anyway.
var warmMin = 256

// warmStart is the first warm start of square problems, tried before
// auctionInit: the pricing loop of the sparse path (docs/method.md, "The sparse exact path") run on the
// dense matrix. It solves the sparse problem on a few candidate entries of
// every row and column (SolveSparse), then up to warmRounds times adds each
// row's warmPrice most violated entries under the sparse potentials and
// re-solves (ResolveSparse), and hands the potentials and the assignment
// to tightenWithin and the exact augmentation, which repair whatever the
// rounds left. Candidates are the warmK smallest entries of each row after
// column reduction (c[i][j] − min_i' c[i'][j]) and the warmK smallest of
// each column after the row reduction that follows, plus the cyclic
// permutation i → i+1, so that a perfect matching exists (the Stage 2
// relaxation forbids only the diagonal).
//
// On continuous costs the candidates hold nearly every optimal entry: a
// round or two add few entries and leave no row free, so the exact phase
// has little left to do (BenchmarkSolve; docs/performance.md, "Design
// decisions and the measurements behind them").
//
// The warm start only ever sets potentials and a partial assignment that
// tightenWithin makes feasible, so correctness rests on the exact phase. It
// gives up, returning false with s reset, when the sparse problem has no
// perfect matching (+Inf off the diagonal), when a round finds more than n
// violated entries, or when more than n/warmFree rows end free:
// tie-heavy costs (ReLU features at d = 2) and some 2-D ones give most rows
// cheaper entries outside their candidates round after round, and the
// auction is the better start there. A failed attempt costs the two
// candidate passes over c, up to warmRounds pricing passes over c and as
// many sparse solves: a small fraction of the auction that follows
// (BenchmarkWarmAttempt; figures in docs/performance.md). It returns h's
// Stop error when h stops it.
func (s *lsap) warmStart(h *Hooks) (bool, error) {
	n := s.nr
	if n < warmMin || n != s.nc {
		return false, nil
	}
	g := denseCandidates(s.c, n, warmK)
	if err := h.stop(); err != nil {
		return false, err
	}
	sol, err := SolveSparse(g, nil, h.stopOnly())
	for round := 0; err == nil && round < warmRounds; round++ {
		if err := h.stop(); err != nil {
			return false, err
		}
		var add int
		if g, add = s.priceInto(g, sol); add == 0 {
			break
		}
		if add > n { // more than one a row on average: tie-heavy costs
			return s.reset(), nil
		}
		sol, err = ResolveSparse(g, sol, h.stopOnly())
	}
	if err != nil {
		if errors.Is(err, ErrNoPerfect) {
			return s.reset(), nil // +Inf entries beyond the diagonal: let the auction decide
		}
		return false, err
	}
	copy(s.v, sol.V)
	for i, j := range sol.Col4Row {
		s.col4row[i], s.row4col[j] = j, i
	}
	s.tightenWithin(tightRel)
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

// reset returns s to its cold state and false, for warmStart's give-ups.
func (s *lsap) reset() bool {
	for i := range s.col4row {
		s.col4row[i], s.row4col[i] = -1, -1
	}
	clear(s.u)
	clear(s.v)
	return false
}

// warmRounds is the number of pricing rounds warmStart runs on the sparse
// problem before the exact dense phase takes over.
const warmRounds = 4

// priceInto returns g with, for every row of s.c, up to warmPrice of its
// most violated entries under sol's potentials (reduced cost below −1e-12
// of the magnitudes involved: rounding noise is left to tighten), and the
// number of entries added. Adding only the worst few per row keeps the
// sparse problem small; a later round finds the rest. Time O(n²).
func (s *lsap) priceInto(g *Graph, sol *Solution) (*Graph, int) {
	n := s.nr
	negV := make([]float64, n)
	for j, v := range sol.V {
		negV[j] = -v
	}
	adds := make([][]int32, par.NParts(n)) // pairs (i, j), rows ascending within a part
	par.Parts(n, func(part, lo, hi int) {
		topV, topJ := make([]float64, warmPrice), make([]int, warmPrice)
		var add []int32
		for i := lo; i < hi; i++ {
			row, u := s.c[i*n:i*n+n], sol.U[i]
			m := topk.SmallestK(row, negV, topV, topJ)
			for t, j := range topJ[:m] {
				if r := topV[t] - u; r < -1e-12*(math.Abs(row[j])+math.Abs(u)+math.Abs(negV[j])) {
					add = append(add, int32(i), int32(j))
				}
			}
		}
		adds[part] = add
	})
	add := slices.Concat(adds...)
	if len(add) == 0 {
		return g, 0
	}
	h := &Graph{N: n, Lo: make([]int, n), Hi: make([]int, n)}
	extra := make([]int, n+1)
	for t := 0; t < len(add); t += 2 {
		extra[add[t]+1]++
	}
	e := 0
	for i := 0; i < n; i++ {
		h.Lo[i] = e
		e += g.Hi[i] - g.Lo[i] + extra[i+1]
	}
	h.Col, h.Cost = make([]int32, 0, e), make([]float64, 0, e)
	t := 0
	for i := 0; i < n; i++ {
		h.Col = append(h.Col, g.Col[g.Lo[i]:g.Hi[i]]...)
		h.Cost = append(h.Cost, g.Cost[g.Lo[i]:g.Hi[i]]...)
		for ; t < len(add) && int(add[t]) == i; t += 2 {
			h.Col = append(h.Col, add[t+1])
			h.Cost = append(h.Cost, s.c[i*n+int(add[t+1])])
		}
		h.Hi[i] = len(h.Col)
	}
	return h, len(add) / 2
}

// warmPrice is the number of violated entries per row priceInto adds.
const warmPrice = 8

// warmFree bounds the rows warmStart may leave free, as a fraction 1/warmFree
// of n: beyond it the dense paths cost more than the auction.
const warmFree = 8

// denseCandidates returns the candidate graph of warmStart on the finite
// entries of the row-major n×n matrix c. Time O(n²) in two passes over c,
// each split over the cores by rows, plus O(k) per insertion into a
// column's list, which after the first rows is rare; memory O(n·k) per core.
func denseCandidates(c []float64, n, k int) *Graph {
	k = min(k, n)
	// Column minima, negated, so that row[j] + v[j] is the reduced entry.
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
	v := parts[0]
	for _, w := range parts[1:] {
		for j, x := range w {
			v[j] = max(v[j], x)
		}
	}
	for j, x := range v {
		if x == -inf { // a column of +Inf: no candidate, SolveSparse reports it
			v[j] = 0
		}
	}
	rowJ, rowM := make([]int32, n*(k+1)), make([]int, n) // each row's candidates
	cols := make([]*topk.Columns, len(parts))
	par.Parts(n, func(part, lo, hi int) {
		cl := topk.NewColumns(n, k)
		topV, topJ := make([]float64, k), make([]int, k)
		for i := lo; i < hi; i++ {
			row := c[i*n : i*n+n]
			m := topk.SmallestK(row, v, topV, topJ)
			for t, j := range topJ[:m] {
				rowJ[i*(k+1)+t] = int32(j)
			}
			rowM[i] = m
			if next := (i + 1) % n; row[next] < inf {
				rowJ[i*(k+1)+m] = int32(next)
				rowM[i]++
			}
			if m > 0 {
				cl.Offer(i, row, v, topV[0]) // topV[0]: the row's reduced minimum
			}
		}
		cols[part] = cl
	})
	for _, cl := range cols[1:] {
		for j := 0; j < n; j++ {
			for t := 0; t < cl.M[j]; t++ {
				cols[0].Insert(j, cl.V[j*k+t], cl.I[j*k+t])
			}
		}
	}
	colI, colM := cols[0].I, cols[0].M
	// Compressed rows: row i's own candidates, then the columns that chose it.
	g := &Graph{N: n, Lo: make([]int, n), Hi: make([]int, n)}
	for j := 0; j < n; j++ {
		for _, i := range colI[j*k : j*k+colM[j]] {
			g.Hi[i]++ // picks per row, for now
		}
	}
	e := 0
	for i := 0; i < n; i++ {
		g.Lo[i] = e
		e += rowM[i] + g.Hi[i]
		g.Hi[i] = g.Lo[i] + rowM[i]
	}
	g.Col, g.Cost = make([]int32, e), make([]float64, e)
	for i := 0; i < n; i++ {
		copy(g.Col[g.Lo[i]:], rowJ[i*(k+1):i*(k+1)+rowM[i]])
	}
	for j := 0; j < n; j++ {
		for _, i := range colI[j*k : j*k+colM[j]] {
			g.Col[g.Hi[i]] = int32(j)
			g.Hi[i]++
		}
	}
	for i := 0; i < n; i++ {
		row := c[i*n : i*n+n]
		for e := g.Lo[i]; e < g.Hi[i]; e++ {
			g.Cost[e] = row[g.Col[e]]
		}
	}
	return g
}
