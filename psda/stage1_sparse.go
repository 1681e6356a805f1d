package psda

import (
	"fmt"
	"runtime/debug"
	"slices"

	"github.com/psda-dev/psda/psda/assign"
	"github.com/psda-dev/psda/psda/internal/cost"
	"github.com/psda-dev/psda/psda/internal/topk"
)

// This file is Stage 1 on the sparse exact path (sparse.go describes the
// path).

// stage1Sparse is stage1 on the sparse path: the same assignment (docs/method.md's
// square model of eqs. 3–5, the larger side as rows, q or q+1 copies of each
// column and dummy rows on the extra copies), solved on candidate edges and
// certified against every dense edge by pricing passes.
func (pl *plan) stage1Sparse(src, tgt Matrix, cfg Config, m *Matching) error {
	mon := cfg.Monitor
	mon.enter(PhaseStage1Costs)
	md := newStage1Model(src, tgt, cfg, m.sumsPending)
	// Without the kernel sums the candidate pass needs no float64: it runs
	// in float32, its lists' limits lowered by the error bounds, and the
	// candidate edges get exact values (at) afterwards, a float32 Gram
	// pass being cheaper than a float64 one (docs/performance.md, "Design
	// decisions and the measurements behind them").
	f32 := md.DeferSums && md.Bounded
	ns, nt := src.N, tgt.N
	rows, cols := topk.New(ns, min(pl.stage1K(), nt)), topk.New(nt, min(pl.stage1K(), ns))
	toRow, _ := rows.Candidates(ns, nt)
	_, toCol := cols.Candidates(nt, ns)
	md.Pass(cost.Scope{F32: f32}, func(i, j0 int, x []float64) {
		toRow(i, j0, x)
		toCol(i, j0, x, nil)
	})
	if err := mon.err(); err != nil {
		return fmt.Errorf("psda: stage 1 candidates: %w", err)
	}
	var es, et []float64 // float32 error bounds by source and by target
	if md.Bounded {
		es, et = md.Err32()
	}
	tauS, tauT := rows.Thresholds(), cols.Thresholds()
	if f32 {
		// An edge a list did not keep has X̃ >= its limit, so X >= limit −
		// es[i] − et[j] >= limit − es[i] − max(et) (rows; columns alike).
		lowerBy(tauS, es, slices.Max(et))
		lowerBy(tauT, et, slices.Max(es))
	}
	pl.tracef("stage 1: candidate pass done")
	// The pass's buffers (the packed features, the kernel sums' partials)
	// are garbage now, and the edges gathered below outgrow their hole:
	// free them first (sparse1Bytes counts the lists and the edges, not
	// the pass's buffers).
	big := pl.stage1ListBytes(ns, nt) >= releaseBytes
	if big {
		debug.FreeOSMemory()
	}
	mon.enter(PhaseStage1Assign)
	// Solver rows a are the larger side, solver columns b the smaller.
	tr := nt > ns
	nl, nsm := ns, nt
	if tr {
		nl, nsm = nt, ns
	}
	// Each column repeated copies times (n_large/n_small rounded up), the
	// copies that no row fills taken by dummy rows.
	copies := stage1Copies(ns, nt)
	dummies := copies*nsm - nl
	// The edges are counted first so that adj takes one allocation of
	// their exact size (sparse1Bytes counts it beside the lists).
	room := make([]int, nl)
	for a := range room {
		room[a] = 1 // the start edge (below)
	}
	count := func(l *topk.Lists, n int, byIdx bool) {
		for i := 0; i < n; i++ {
			t0, t1 := l.Entries(i)
			if !byIdx {
				room[i] += t1 - t0
				continue
			}
			for _, j := range l.Idx[t0:t1] {
				room[j]++
			}
		}
	}
	count(rows, ns, tr)
	count(cols, nt, !tr)
	adj := assign.NewEdges(room)
	addST := func(i, j int, x float64) {
		if tr {
			adj.Add(j, i, x)
		} else {
			adj.Add(i, j, x)
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
	if big {
		// The lists are garbage: the solve's graph and lists take their
		// place, not more (sparse1Bytes' two phases).
		debug.FreeOSMemory()
	}
	// Row a on column a mod n_small gives every column q or q+1 rows: a
	// complete assignment inside the graph whatever the candidates are. The
	// candidates keep the cross parts of a float64 pass, the dense path's
	// own values (an edge found twice keeps those, normalise); after a
	// float32 pass they get exact ones.
	s1 := &sparse1{md: md, tr: tr, nl: nl, nsm: nsm, copies: copies, dummies: dummies}
	for a := 0; a < nl; a++ {
		adj.Add(a, a%nsm, s1.At(a, a%nsm))
	}
	if f32 {
		adj.Normalise()
		exactCross(adj, s1.At)
		if err := mon.err(); err != nil {
			return fmt.Errorf("psda: stage 1 candidates: %w", err)
		}
	}
	st := &assign.Pricing{Model: s1, Rows: nl, Cols: nsm, Scale: md.Scale, Coef: 1,
		TauR: tauR, TauC: tauC, Keep: pl.sparseAdd, Hooks: mon.hooks(PhaseStage1Assign), Trace: pl.trace}
	// checkMemory counted the first graph, not the edges pricing adds
	// (up to half the candidates again on low-dimensional features):
	// each graph is checked against the memory left before it is built.
	// A cancellation that came before the refusal is reported instead: a
	// caller who asked to stop is not to be sent to another solver or a
	// bigger machine.
	graphs, dense := 0, pl.denseNeed(ns, nt, src.D, cfg)
	st.BeforeGraph = func(adj assign.Edges) error {
		graphs++
		err := pl.graphFits(s1.graphBytes(adj), adj.Bytes(), dense, graphs == 1, ns, nt, copies)
		if cerr := mon.err(); cerr != nil {
			return cerr
		}
		return err
	}
	if md.Bounded {
		st.ER, st.EC = es, et
		if tr {
			st.ER, st.EC = st.EC, st.ER
		}
	}
	sol, _, err := st.Solve(adj)
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

// releaseBytes is the size of the candidate lists from which stage1Sparse
// returns the pages of what dies between its phases to the system
// (debug.FreeOSMemory: a collection, milliseconds) before the next phase
// allocates; below it the garbage is a few MB.
const releaseBytes = 4 << 20

// stage1K is the number of candidate edges the sparse Stage 1 keeps per row
// and per column (at most the other side's size): three times Stage 2's (stage2K),
// its nearest neighbours predicting the optimal partners less well
// (plan.sparseK). stage1Sparse allocates its lists by it and sparse1Bytes
// counts them by it.
func (pl *plan) stage1K() int { return 3 * pl.sparseK }

// stage1ListBytes returns the bytes of the sparse Stage 1's candidate
// lists, each source's and each target's (topk.New by stage1K).
func (pl *plan) stage1ListBytes(ns, nt int) int64 {
	return topk.Bytes(ns, min(pl.stage1K(), nt)) + topk.Bytes(nt, min(pl.stage1K(), ns))
}

// stage1Copies returns how many times the sparse Stage 1 repeats each
// column of the smaller side: n_large/n_small, rounded up.
func stage1Copies(ns, nt int) int {
	nl, nsm := max(ns, nt), min(ns, nt)
	return (nl + nsm - 1) / nsm
}

// sparse1 is Stage 1's assignment as the pricing loop sees it (an
// assign.PricedModel): solver rows
// a are the larger side (sources unless tr), solver columns b the smaller
// side, each standing for copies assignment columns, and dummies dummy rows
// take the extra copies.
type sparse1 struct {
	md              *cost.Stage1
	tr              bool // solver rows are targets
	nl, nsm         int  // the larger and the smaller side
	copies, dummies int
}

func (s *sparse1) At(a, b int) float64 {
	if s.tr {
		return s.md.At(b, a)
	}
	return s.md.At(a, b)
}

func (s *sparse1) Terms() ([]float64, []float64) {
	rt, ct := s.md.Terms()
	if s.tr {
		return ct, rt
	}
	return rt, ct
}

func (s *sparse1) ColPot(v []float64) []float64 {
	copies := s.copies
	vp := make([]float64, s.nsm)
	for b := range vp {
		vp[b] = slices.Max(v[b*copies : (b+1)*copies])
	}
	return vp
}

func (s *sparse1) PassCols(cols []int, visit func(a, b int, x float64)) {
	if s.tr { // solver columns are sources: rows of the model's pass
		s.md.Pass(cost.Scope{Rows: cols}, func(i, j0 int, xs []float64) {
			for k, x := range xs {
				visit(j0+k, cols[i], x)
			}
		})
		return
	}
	s.md.Pass(cost.Scope{Cols: cols}, func(i, j0 int, xs []float64) {
		for k, x := range xs {
			visit(i, cols[j0+k], x)
		}
	})
}

func (s *sparse1) Pass(sub []int, f32 bool, row func(a, b0 int, xs []float64), col func(b, a0 int, xs []float64, idx []int)) {
	if s.tr {
		s.md.Pass(cost.Scope{Cols: sub, F32: f32}, func(i, j0 int, x []float64) { col(i, j0, x, sub) })
		return
	}
	s.md.Pass(cost.Scope{Rows: sub, F32: f32}, func(i, j0 int, x []float64) {
		if sub != nil {
			i = sub[i]
		}
		row(i, j0, x)
	})
}

// graphEdges returns the number of edges of the graph Graph builds from
// adj: each candidate once per copy of its column, and the dummy rows'
// shared list.
func (s *sparse1) graphEdges(adj assign.Edges) int {
	size := 0
	for _, row := range adj {
		size += len(row) * s.copies
	}
	if s.dummies > 0 {
		size += s.nsm
	}
	return size
}

// graphBytes returns the bytes of the graph Graph builds from adj: a
// column (4 bytes) and a cost (8) per edge, two row bounds (16) per row.
func (s *sparse1) graphBytes(adj assign.Edges) int64 {
	return 12*int64(s.graphEdges(adj)) + 16*int64(s.nl+s.dummies)
}

func (s *sparse1) Graph(adj assign.Edges) *assign.Graph {
	nl, nsm, copies, dummies := s.nl, s.nsm, s.copies, s.dummies
	rt, ct := s.Terms()
	n := nl + dummies
	// Sized ahead: the graph repeats every edge copies times (n_large /
	// n_small), so appending would hold up to three times its bytes while
	// growing (sparse1Bytes counts it).
	size := s.graphEdges(adj)
	g := &assign.Graph{N: n, Lo: make([]int, n), Hi: make([]int, n),
		Col: make([]int32, 0, size), Cost: make([]float64, 0, size)}
	for a, row := range adj {
		g.Lo[a] = len(g.Col)
		for _, e := range row {
			c := (rt[a] + ct[e.B] + e.X) * s.md.Scale
			for t := 0; t < copies; t++ {
				g.Col = append(g.Col, int32(int(e.B)*copies+t))
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
