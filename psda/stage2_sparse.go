package psda

// This file is Stage 2 on the sparse exact path (sparse.go describes the
// path): the relaxation on candidate edges, then the exact blossom
// algorithm priced against every dense edge.

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/psda-dev/psda/psda/assign"
	"github.com/psda-dev/psda/psda/internal/cost"
	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/topk"
)

// stage2K is the number of Stage 2 candidates per row and column for
// features of dimension d: pl.sparseK, and three times that (Stage 1's) when
// d <= directDim, where the candidate pass costs little and 64 nearest
// reflections −w_r miss the partners of the points at the rim of the cloud,
// so that a seed can need several full pricing rounds (one seed of six needed
// three with 64). On the same seeds 256 and 384 candidates made Stage 2
// slower, not faster, than 192 (docs/performance.md, "Design decisions and
// the measurements behind them"; BenchmarkMatchGauss times the whole
// matching, not this choice).
func (pl *plan) stage2K(d int) int {
	if d <= gram.DirectDim {
		return pl.stage1K()
	}
	return pl.sparseK
}

// stage2Sparse is stage2 on the sparse path: the symmetric assignment
// relaxation on candidate edges, priced against every dense edge until its
// potentials hold for all (so its optimum is the dense relaxation's), then
// the exact blossom algorithm on the candidate graph from the relaxation's
// halved potentials, priced against every dense edge in turn
// (stage2Blossom).
func (pl *plan) stage2Sparse(src, tgt Matrix, cfg Config, m *Matching) error {
	mon := cfg.Monitor
	mon.enter(PhaseStage2Costs)
	// The RBF mixture's tables against the smaller side may take what the
	// dense path's matrix may (plan.stage2Table: by the sizes alone, which
	// checkMemory has checked); beyond, the paired vectors' model runs, in
	// O(P·d).
	md := newStage2Model(src, tgt, cfg, m.Pairs, pl.stage2Table(true))
	md.UseCross(m.cross) // the factored model's K_ab (plan.keepCross)
	m.cross = nil
	p, n := md.P, md.M
	adj := make(assign.Edges, n)
	both := func(r, q int, v float64) {
		adj.Add(r, q, v)
		adj.Add(q, r, v)
	}
	near := topk.New(p, min(pl.stage2K(src.D), p-1))
	toRow, toCol := near.Candidates(p, p)
	md.Pass(cost.Scope{}, func(r, q0 int, v []float64) {
		toRow(r, q0, v)
		toCol(r, q0, v, nil)
	})
	if err := mon.err(); err != nil {
		return fmt.Errorf("psda: stage 2 candidates: %w", err)
	}
	pl.tracef("stage 2: candidate pass done")
	for r := 0; r < p; r++ {
		near.Each(r, func(q int, v, _ float64) { both(r, q, v) })
	}
	tau := near.Thresholds()
	mon.enter(PhaseStage2Match)
	s2 := &sparse2{md: md, p: p, n: n}
	// Consecutive nodes paired off: a perfect matching inside the graph
	// (an edge that is also a candidate keeps the pass's value, as in
	// stage1Sparse).
	for r := 0; r+1 < p; r += 2 {
		both(r, r+1, md.At(r, r+1))
	}
	if n > p { // the dummy may be anyone's partner
		for r := 0; r < p; r++ {
			both(r, p, 0)
		}
	}
	adj.Normalise()
	st := &assign.Pricing{Model: s2, Rows: p, Cols: p, Scale: md.Scale, Coef: md.Coef, NoDiag: true, Symmetric: true,
		TauR: tau, TauC: tau, Keep: pl.sparseAdd, Hooks: mon.hooks(PhaseStage2Match), Trace: pl.trace}
	if md.Bounded {
		st.ER = md.Err32()
		st.EC = st.ER
	}
	sol, relax, err := st.Solve(adj)
	if err != nil {
		return fmt.Errorf("psda: stage 2 (sparse): %w", err)
	}
	m.addDeferred(md, src.N, tgt.N)
	cost := s2.cost
	oracle := func(r, q int) float64 {
		if r == p || q == p {
			return cost(r, q, 0)
		}
		return cost(r, q, md.At(r, q))
	}
	em, err := pl.stage2Blossom(st, adj, sol, relax, n, p, md, s2.node, cost, oracle, mon)
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

// sparse2 is Stage 2's relaxation as the pricing loop sees it (an
// assign.PricedModel): the P
// pairs as rows and as columns, and the dummy node p (odd P: n = P+1),
// which stands for "no partner" and has all its edges in the graph.
type sparse2 struct {
	md   *cost.Stage2
	p, n int
	// node and single are md's terms, set by Terms (the first thing Solve
	// does) and fixed after it.
	node, single []float64
}

// cost is C^MM(r, q) from the cross part v.
func (s *sparse2) cost(r, q int, v float64) float64 {
	md, p := s.md, s.p
	switch {
	case r == p:
		return s.single[q] * md.Scale
	case q == p:
		return s.single[r] * md.Scale
	}
	return (s.node[r] + s.node[q] + md.Coef*v) * md.Scale
}

func (s *sparse2) At(a, b int) float64 { return s.md.At(a, b) }

func (s *sparse2) Terms() ([]float64, []float64) {
	s.node, s.single = s.md.Finish()
	return s.node, s.node
}

func (s *sparse2) ColPot(v []float64) []float64 { return slices.Clone(v[:s.p]) }

func (s *sparse2) Graph(adj assign.Edges) *assign.Graph { return adj.Graph(s.cost) }

func (s *sparse2) PassCols(cols []int, visit func(a, b int, x float64)) {
	// V is symmetric: the rows of cols give the edges into them.
	s.md.Pass(cost.Scope{Rows: cols}, func(q, r0 int, v []float64) {
		for k, x := range v {
			visit(r0+k, q, x)
		}
	})
}

func (s *sparse2) Pass(sub []int, f32 bool, row func(a, b0 int, xs []float64), col func(b, a0 int, xs []float64, idx []int)) {
	s.md.Pass(cost.Scope{Rows: sub, F32: f32}, func(r, q0 int, v []float64) {
		row(r, q0, v)
		if sub == nil { // the full pass visits the upper triangle only
			col(r, q0, v, nil)
		}
	})
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
// lists' thresholds (assign.Pricing.Screen, at the current duals) are skipped.
// Large blossoms (clustered data) raise the vertex duals of all their
// vertices, so a round may then price every row. The
// dummy node p (odd P) has all its edges in the graph. The duals returned are
// thus feasible for every dense edge up to tol, tight on the matching, and
// their objective is the certified Stage2Bound; CertifyMatchingGraph checks
// them on the final graph.
func (pl *plan) stage2Blossom(st *assign.Pricing, adj assign.Edges, sol *assign.Solution, relax *assign.RowBounds, n, p int, md *cost.Stage2, node []float64,
	cost func(r, q int, v float64) float64, oracle func(r, q int) float64, mon *Monitor) (*assign.ExactMatching, error) {
	hooks := mon.hooks(PhaseStage2Match)
	start := assign.RelaxationStart(sol.Col4Row, sol.U, sol.V, oracle)
	y0 := start.Y
	rec := newRowRecords(relax.Low, relax.Kept)
	for round := 0; ; round++ {
		adj.Normalise()
		g := st.Model.Graph(adj)
		tol := assign.PriceTol(g.Cost)
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
		if len(rise) > 0 && st.TauR != nil && st.Coef*st.Scale > 0 {
			// The candidate lists' thresholds bound every edge outside them
			// at the current duals (screen, with z = w = y − node·scale);
			// rows whose bound holds need no pass.
			z, tail := make([]float64, p), make([]float64, p)
			for a := range z {
				z[a] = d.Y[a] - node[a]*st.Scale
			}
			st.Screen(z, z, tail, nil)
			rise = slices.DeleteFunc(rise, func(a int) bool { return tail[a] >= -tol })
		}
		if pl.records != nil {
			pl.records(rec, md, adj.Has, y0, cost)
		}
		price, kept := rec.split(rise, d.Y, y0, tol)
		pl.tracef("stage 2 blossom round %d: %d edges, cost %.12g, %d rows to price, %d cleared by their records",
			round, len(g.Col), em.Cost, len(price), len(kept))
		if len(price) == 0 && len(kept) == 0 {
			return em, nil
		}
		found, cross := rec.check(kept, d, adj.Has, cost, tol)
		if len(price) > 0 {
			f, x, err := pl.priceBlossom(md, price, d, y0, rec, st.ER, adj.Has, cost, tol, mon)
			if err != nil {
				return nil, err
			}
			found, cross = append(found, f...), append(cross, x...)
		}
		added := st.AddEdges(adj, found, cross)
		pl.tracef("  %d violating edges added", added)
		if added == 0 {
			return em, nil
		}
	}
}

// priceBlossom returns the edges (r, q) outside the graph (has), r in rows,
// whose reduced cost under the blossom duals d is below −tol, with their
// exact cross parts, and records for each row its edges of least s0 (the
// reduced cost under y0, see rowRecords) in rec. Shared >= 0, so Shared is
// only looked up for edges negative without it. With error bounds e
// (|Ṽ_rq − V_rq| <= e[r] + e[q] for a float32 pass, cost.Stage2.Err32)
// the pass runs in float32, and an edge the bound cannot clear is
// recomputed exactly (md.At); a row where more than 1/pl.blossomBudget of the
// edges need that is priced again in float64.
func (pl *plan) priceBlossom(md *cost.Stage2, rows []int, d *assign.MatchingDuals, y0 []float64, rec *rowRecords, e []float64,
	has func(r, q int) bool, costOf func(r, q int, v float64) float64, tol float64, mon *Monitor) (found [][2]int, cross []float64, err error) {
	p := md.P
	cs := math.Abs(md.Coef * md.Scale)
	budget := int32(max(p/pl.blossomBudget, 16))
	if pl.blossomBudget > p {
		budget = 0
	}
	checks := make([]int32, p) // exact recomputations per row; past budget: row handed to float64
	var mu sync.Mutex
	var redo []int
	price := func(sub []int, f32 bool) {
		for _, r := range sub {
			rec.kept.Reset(r)
		}
		md.Pass(cost.Scope{Rows: sub, F32: f32}, func(r, q0 int, v []float64) {
			yr, y0r := d.Y[r], y0[r]
			lock := rec.kept.Stripe(r / topk.LockBlock)
			lock.Lock()
			for k, x := range v {
				q := q0 + k
				if q == r || q >= p {
					continue
				}
				c := costOf(r, q, x)
				if f32 {
					c -= cs * (e[r] + e[q]) // a lower bound on the exact cost
				}
				if s0 := c - y0r - y0[q]; s0 < rec.kept.Bound(r) && !has(r, q) {
					rec.kept.Offer(r, s0, int32(q), x)
				}
				rc := c - yr - d.Y[q]
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
					x = md.At(r, q)
					if costOf(r, q, x)-yr-d.Y[q]+sh >= -tol {
						continue
					}
				}
				mu.Lock()
				found, cross = append(found, [2]int{r, q}), append(cross, x)
				mu.Unlock()
			}
			lock.Unlock()
		})
	}
	price(rows, e != nil)
	if e != nil {
		n := 0
		for _, c := range checks {
			n += int(min(max(c, 0), budget))
		}
		pl.tracef("  float32 pass: %d edges recomputed exactly", n)
	}
	if len(redo) > 0 {
		// The float64 pass finds every violated edge of these rows, with
		// its own cross parts: drop what their float32 pass found first.
		// Which edges those were depends on the order in which the
		// goroutines visited a row's tiles, and their cross parts (At's)
		// may differ from the pass's in the last bits, so that AddEdges,
		// which links the first of two copies, would give a Match whose
		// costs depend on the schedule (TestPriceBlossomSameEveryRun).
		k := 0
		for i, f := range found {
			if checks[f[0]] <= budget {
				found[k], cross[k] = f, cross[i]
				k++
			}
		}
		found, cross = found[:k], cross[:k]
		// In row order for the trace's sake; a row pass gives the same
		// cross parts whatever the order of its rows.
		slices.Sort(redo)
		pl.tracef("  %d rows priced again in float64", len(redo))
		price(redo, false)
	}
	if err := mon.err(); err != nil {
		return nil, nil, err
	}
	for _, r := range rows {
		// Rows past the budget were priced again in float64: exact.
		rec.settle(r, md, e == nil || checks[r] > budget)
	}
	return found, cross, nil
}
