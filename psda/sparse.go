package psda

// This file is the sparse exact path (docs/method.md, "The sparse exact path"):
// for sizes whose dense cost matrices do not fit, each stage keeps only
// candidate edges (the sparseK cheapest of every row and column under the
// cross part of the cost, found in one float64 Gram pass that also yields
// the exact row and column terms), solves the assignment on them, checks
// every other edge against the lists' thresholds, and prices the rows that
// check cannot clear from the features in further passes, adding the
// violators until the duals are feasible for the full problem. The
// result is then the dense optimum, certified, and no n_s×n_t or P×P matrix
// is ever stored: memory is O((n_s+n_t)·(d + sparseK)). This file holds
// the two stages; the pricing loop they share is pricing.go's, the
// candidate lists are internal/topk's and the edge set is edges.go's.

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/psda-dev/psda/psda/assign"
	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/topk"
)

// stage2K is the number of Stage 2 candidates per row and column for
// features of dimension d: sparseK, and three times that (Stage 1's) when
// d <= directDim, where the candidate pass costs little and 64 nearest
// reflections −w_r miss the partners of the points at the rim of the cloud
// (the paper's 2-D experiment, n = 4000, six seeds: Stage 2 0.56–2.13 s with
// 64, the worst seed after three full pricing rounds, 1.09–1.64 s with 192,
// 1.21–1.79 s with 256, 2.2–2.4 s with 384).
func stage2K(d int) int {
	if d <= gram.DirectDim {
		return 3 * sparseK
	}
	return sparseK
}

// stage1Sparse is stage1 on the sparse path: the same assignment (docs/method.md's
// square model of eqs. 3–5, the larger side as rows, q or q+1 copies of each
// column and dummy rows on the extra copies), solved on candidate edges and
// certified against every dense edge by pricing passes.
func stage1Sparse(src, tgt Matrix, cfg Config, m *Matching) error {
	mon := cfg.Monitor
	mon.enter(PhaseStage1Costs)
	md := newStage1Model(src, tgt, cfg, m.sumsPending)
	// Without the kernel sums the candidate pass needs no float64: it runs
	// in float32, its lists' limits lowered by the error bounds, and the
	// candidate edges get exact values (at) afterwards (n = 50,000
	// clustered: 64 s -> 44 s, plus 4 s for the exact values).
	f32 := md.deferSums && md.bounded
	ns, nt := src.N, tgt.N
	rows, cols := topk.New(ns, min(3*sparseK, nt)), topk.New(nt, min(3*sparseK, ns))
	toRow, _ := candidates(rows, ns, nt)
	_, toCol := candidates(cols, nt, ns)
	md.pass(scope{f32: f32}, func(i, j0 int, x []float64) {
		toRow(i, j0, x)
		toCol(i, j0, x, nil)
	})
	if err := mon.err(); err != nil {
		return fmt.Errorf("psda: stage 1 candidates: %w", err)
	}
	var es, et []float64 // float32 error bounds by source and by target
	if md.bounded {
		es, et = md.err32()
	}
	tauS, tauT := rows.Thresholds(), cols.Thresholds()
	if f32 {
		// An edge a list did not keep has X̃ >= its limit, so X >= limit −
		// es[i] − et[j] >= limit − es[i] − max(et) (rows; columns alike).
		lowerBy(tauS, es, slices.Max(et))
		lowerBy(tauT, et, slices.Max(es))
	}
	trace("stage 1: candidate pass done")
	mon.enter(PhaseStage1Assign)
	// Solver rows a are the larger side, solver columns b the smaller.
	tr := nt > ns
	nl, nsm := ns, nt
	if tr {
		nl, nsm = nt, ns
	}
	q, r := nl/nsm, nl%nsm
	copies, dummies := q, 0
	if r > 0 {
		copies, dummies = q+1, nsm-r
	}
	adj := make(edges, nl)
	addST := func(i, j int, x float64) {
		if tr {
			adj.add(j, i, x)
		} else {
			adj.add(i, j, x)
		}
	}
	for i := 0; i < ns; i++ {
		rows.Each(i, func(j int, x, _ float64) { addST(i, j, x) })
	}
	for j := 0; j < nt; j++ {
		cols.Each(j, func(i int, x, _ float64) { addST(i, j, x) })
	}
	tauR, tauC := tauS, tauT
	if tr {
		tauR, tauC = tauC, tauR
	}
	rows, cols = nil, nil
	// Row a on column a mod n_small gives every column q or q+1 rows: a
	// complete assignment inside the graph whatever the candidates are. The
	// candidates keep the cross parts of a float64 pass, the dense path's
	// own values (an edge found twice keeps those, normalise); after a
	// float32 pass they get exact ones.
	at := func(a, b int) float64 {
		if tr {
			return md.at(b, a)
		}
		return md.at(a, b)
	}
	for a := 0; a < nl; a++ {
		adj.add(a, a%nsm, at(a, a%nsm))
	}
	if f32 {
		adj.normalise()
		exactCross(adj, at)
		if err := mon.err(); err != nil {
			return fmt.Errorf("psda: stage 1 candidates: %w", err)
		}
	}
	st := &pricedStage{
		rows: nl, cols: nsm, scale: md.scale, coef: 1, phase: PhaseStage1Assign,
		tauR: tauR, tauC: tauC, at: at,
		terms: func() ([]float64, []float64) {
			rt, ct := md.terms()
			if tr {
				return ct, rt
			}
			return rt, ct
		},
		colPot: func(v []float64) []float64 {
			vp := make([]float64, nsm)
			for b := range vp {
				vp[b] = slices.Max(v[b*copies : (b+1)*copies])
			}
			return vp
		},
		passCols: func(cols []int, visit func(a, b int, x float64)) {
			if tr { // solver columns are sources: rows of the model's pass
				md.pass(scope{rows: cols}, func(i, j0 int, xs []float64) {
					for k, x := range xs {
						visit(j0+k, cols[i], x)
					}
				})
				return
			}
			md.pass(scope{cols: cols}, func(i, j0 int, xs []float64) {
				for k, x := range xs {
					visit(i, cols[j0+k], x)
				}
			})
		},
		pass: func(sub []int, f32 bool, row func(a, b0 int, xs []float64), col func(b, a0 int, xs []float64, idx []int)) {
			if tr {
				md.pass(scope{cols: sub, f32: f32}, func(i, j0 int, x []float64) { col(i, j0, x, sub) })
				return
			}
			md.pass(scope{rows: sub, f32: f32}, func(i, j0 int, x []float64) {
				if sub != nil {
					i = sub[i]
				}
				row(i, j0, x)
			})
		},
	}
	if md.bounded {
		st.eR, st.eC = es, et
		if tr {
			st.eR, st.eC = st.eC, st.eR
		}
	}
	st.graph = func(adj edges) *assign.Graph {
		rt, ct := st.terms()
		n := nl + dummies
		g := &assign.Graph{N: n, Lo: make([]int, n), Hi: make([]int, n)}
		for a, row := range adj {
			g.Lo[a] = len(g.Col)
			for _, e := range row {
				c := (rt[a] + ct[e.b] + e.x) * md.scale
				for t := 0; t < copies; t++ {
					g.Col = append(g.Col, int32(int(e.b)*copies+t))
					g.Cost = append(g.Cost, c)
				}
			}
			g.Hi[a] = len(g.Col)
		}
		if dummies > 0 { // identical rows share one list: the extra copies at cost 0
			lo := len(g.Col)
			for b := 0; b < nsm; b++ {
				g.Col = append(g.Col, int32(b*copies+copies-1))
				g.Cost = append(g.Cost, 0)
			}
			for a := nl; a < n; a++ {
				g.Lo[a], g.Hi[a] = lo, len(g.Col)
			}
		}
		return g
	}
	sol, err := st.solve(adj, mon)
	if err != nil {
		return fmt.Errorf("psda: stage 1 (sparse): %w", err)
	}
	m.Pairs = make([]Pair, nl)
	for a, c := range sol.Col4Row[:nl] {
		if b := c / copies; tr {
			m.Pairs[a] = Pair{S: b, T: a}
		} else {
			m.Pairs[a] = Pair{S: a, T: b}
		}
	}
	m.Stage1Cost = sol.Cost // dummy rows cost 0
	return nil
}

// stage2Sparse is stage2 on the sparse path: the symmetric assignment
// relaxation on candidate edges, priced against every dense edge until its
// potentials hold for all (so its optimum is the dense relaxation's), then
// the exact blossom algorithm on the candidate graph from the relaxation's
// halved potentials, priced against every dense edge in turn
// (stage2Blossom).
func stage2Sparse(src, tgt Matrix, cfg Config, m *Matching) error {
	mon := cfg.Monitor
	mon.enter(PhaseStage2Costs)
	md := newStage2Model(src, tgt, cfg, m.Pairs, false)
	p, n := md.p, md.m
	adj := make(edges, n)
	both := func(r, q int, v float64) {
		adj.add(r, q, v)
		adj.add(q, r, v)
	}
	near := topk.New(p, min(stage2K(src.D), p-1))
	toRow, toCol := candidates(near, p, p)
	md.pass(scope{}, func(r, q0 int, v []float64) {
		toRow(r, q0, v)
		toCol(r, q0, v, nil)
	})
	if err := mon.err(); err != nil {
		return fmt.Errorf("psda: stage 2 candidates: %w", err)
	}
	trace("stage 2: candidate pass done")
	for r := 0; r < p; r++ {
		near.Each(r, func(q int, v, _ float64) { both(r, q, v) })
	}
	tau := near.Thresholds()
	var node, single []float64
	mon.enter(PhaseStage2Match)
	// cost is C^MM(r, q) from the cross part v; the dummy node p (odd P)
	// stands for "no partner".
	cost := func(r, q int, v float64) float64 {
		switch {
		case r == p:
			return single[q] * md.scale
		case q == p:
			return single[r] * md.scale
		}
		return (node[r] + node[q] + md.coef*v) * md.scale
	}
	// Consecutive nodes paired off: a perfect matching inside the graph
	// (an edge that is also a candidate keeps the pass's value, as in
	// stage1Sparse).
	for r := 0; r+1 < p; r += 2 {
		both(r, r+1, md.at(r, r+1))
	}
	if n > p { // the dummy may be anyone's partner
		for r := 0; r < p; r++ {
			both(r, p, 0)
		}
	}
	adj.normalise()
	st := &pricedStage{
		rows: p, cols: p, scale: md.scale, coef: md.coef, noDiag: true, symmetric: true, phase: PhaseStage2Match,
		tauR: tau, tauC: tau, at: md.at,
		terms: func() ([]float64, []float64) {
			node, single = md.finish()
			return node, node
		},
		colPot: func(v []float64) []float64 { return slices.Clone(v[:p]) },
		graph: func(adj edges) *assign.Graph {
			g := &assign.Graph{N: n, Lo: make([]int, n), Hi: make([]int, n)}
			for a, row := range adj {
				g.Lo[a] = len(g.Col)
				for _, e := range row {
					g.Col = append(g.Col, e.b)
					g.Cost = append(g.Cost, cost(a, int(e.b), e.x))
				}
				g.Hi[a] = len(g.Col)
			}
			return g
		},
		passCols: func(cols []int, visit func(a, b int, x float64)) {
			// V is symmetric: the rows of cols give the edges into them.
			md.pass(scope{rows: cols}, func(q, r0 int, v []float64) {
				for k, x := range v {
					visit(r0+k, q, x)
				}
			})
		},
		pass: func(sub []int, f32 bool, row func(a, b0 int, xs []float64), col func(b, a0 int, xs []float64, idx []int)) {
			md.pass(scope{rows: sub, f32: f32}, func(r, q0 int, v []float64) {
				row(r, q0, v)
				if sub == nil { // the full pass visits the upper triangle only
					col(r, q0, v, nil)
				}
			})
		},
	}
	if md.bounded {
		st.eR = md.err32()
		st.eC = st.eR
	}
	sol, err := st.solve(adj, mon)
	if err != nil {
		return fmt.Errorf("psda: stage 2 (sparse): %w", err)
	}
	m.addDeferred(md)
	oracle := func(r, q int) float64 {
		if r == p || q == p {
			return cost(r, q, 0)
		}
		return cost(r, q, md.at(r, q))
	}
	em, err := stage2Blossom(st, adj, sol, n, p, md, node, cost, oracle, mon)
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
// whose dual rose above y0. Only those vertices' rows are passed over, in
// float64, and every edge of a row is checked with its blossom term; rows
// whose edges outside the candidate lists are bounded feasible by the
// lists' thresholds (pricedStage.screen, at the current duals) are skipped.
// Large blossoms (clustered data) raise the vertex duals of all their
// vertices, so a round may then price every row. The
// dummy node p (odd P) has all its edges in the graph. The duals returned are
// thus feasible for every dense edge up to tol, tight on the matching, and
// their objective is the certified Stage2Bound; CertifyMatchingGraph checks
// them on the final graph.
func stage2Blossom(st *pricedStage, adj edges, sol *assign.Solution, n, p int, md *stage2Model, node []float64,
	cost func(r, q int, v float64) float64, oracle func(r, q int) float64, mon *Monitor) (*assign.ExactMatching, error) {
	hooks := mon.hooks(PhaseStage2Match)
	start := assign.RelaxationStart(sol.Col4Row, sol.U, sol.V, oracle)
	y0 := start.Y
	for round := 0; ; round++ {
		adj.normalise()
		g := st.graph(adj)
		tol := priceTol(g.Cost)
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
		if len(rise) > 0 && st.tauR != nil && st.coef*st.scale > 0 {
			// The candidate lists' thresholds bound every edge outside them
			// at the current duals (screen, with z = w = y − node·scale);
			// rows whose bound holds need no pass.
			z, tail := make([]float64, p), make([]float64, p)
			for a := range z {
				z[a] = d.Y[a] - node[a]*st.scale
			}
			st.screen(z, z, tail, nil)
			rise = slices.DeleteFunc(rise, func(a int) bool { return tail[a] >= -tol })
		}
		trace("stage 2 blossom round %d: %d edges, cost %.12g, %d rows to price", round, len(g.Col), em.Cost, len(rise))
		if len(rise) == 0 {
			return em, nil
		}
		var mu sync.Mutex
		var found [][2]int
		var cross []float64
		md.pass(scope{rows: rise}, func(r, q0 int, v []float64) {
			for k, x := range v {
				q := q0 + k
				if q == r || q >= p {
					continue
				}
				if d.ReducedCost(r, q, cost(r, q, x)) < -tol && !adj.has(r, q) {
					mu.Lock()
					found, cross = append(found, [2]int{r, q}), append(cross, x)
					mu.Unlock()
				}
			}
		})
		if err := mon.err(); err != nil {
			return nil, err
		}
		added := 0
		for k, e := range found {
			if !adj.has(e[0], e[1]) {
				st.link(adj, e[0], e[1], cross[k])
				added++
			}
		}
		trace("  %d violating edges added", added)
		if added == 0 {
			return em, nil
		}
	}
}
