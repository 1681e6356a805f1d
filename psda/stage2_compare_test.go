package psda

// Measurement of Stage 2 before and after the exact blossom algorithm, in
// one process: stage2SparseOld is main's stage2Sparse before this change
// (relaxation + RoundRelaxationNear), kept only here for the comparison.
// Run with PSDA_STAGE2_COMPARE=DIR (DIR receives the dense C^MM matrices
// that psda/assign's TestStage2DenseCompare reads):
//
//	PSDA_STAGE2_COMPARE=/tmp/s2 go test ./psda -run TestStage2Compare -v -timeout 1h

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/psda-dev/psda/psda/assign"
)

func TestStage2Compare(t *testing.T) {
	dir := os.Getenv("PSDA_STAGE2_COMPARE")
	if dir == "" {
		t.Skip("set PSDA_STAGE2_COMPARE=DIR to run the before/after measurement")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		src, tgt Matrix
		cfg      Config
	}{
		{"relu4000_d512_rbf", benchFeatures(4000, 512, 1), benchFeatures(4000, 512, 2), Config{BatchSize: 64, Discrepancy: MMD, Kernel: RBF, Stages: 2}},
		{"gauss4000_d2_linear", gaussFeatures(4000, 2, 1), gaussFeatures(4000, 2, 2), Config{BatchSize: 64, Discrepancy: MMD, Kernel: Linear, Stages: 2}},
	}
	for _, tc := range cases {
		m1 := &Matching{}
		if err := stage1(tc.src, tc.tgt, tc.cfg, m1); err != nil {
			t.Fatal(err)
		}
		c, m := stage2Costs(tc.src, tc.tgt, tc.cfg, m1.Pairs)
		buf := make([]byte, 8*len(c))
		for k, x := range c {
			binary.LittleEndian.PutUint64(buf[8*k:], math.Float64bits(x))
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s_%d.f64", tc.name, m)), buf, 0o644); err != nil {
			t.Fatal(err)
		}
		c, buf = nil, nil
		// The sparse path, old and new alternately on the same pairs.
		for rep := 0; rep < 3; rep++ {
			for _, v := range []struct {
				name string
				run  func(src, tgt Matrix, cfg Config, m *Matching) error
			}{{"old", stage2SparseOld}, {"new", stage2Sparse}} {
				got := &Matching{Pairs: m1.Pairs}
				c0, t0 := cpuTime(), time.Now()
				if err := v.run(tc.src, tc.tgt, tc.cfg, got); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s sparse %s: %.2f s wall, %.2f s cpu, cost %.12g, bound %.12g", tc.name, v.name, time.Since(t0).Seconds(), (cpuTime() - c0).Seconds(), got.Stage2Cost, got.Stage2Bound)
			}
		}
	}
}

// stage2SparseOld is stage2 on the sparse path: the symmetric assignment
// relaxation on candidate edges, priced against every dense edge until its
// potentials hold for all (so its optimum is the dense relaxation's and the
// bound the dense path's), then rounded from costs computed on the fly.
func stage2SparseOld(src, tgt Matrix, cfg Config, m *Matching) error {
	mon := cfg.Monitor
	mon.enter(PhaseStage2Costs)
	md := newStage2Model(src, tgt, cfg, m.Pairs, false)
	p, n := md.p, md.m
	adj := make(edges, n)
	both := func(r, q int, v float64) {
		adj.add(r, q, v)
		adj.add(q, r, v)
	}
	near := newNearest(p, min(stage2K(src.D), p-1))
	toRow, toCol := near.candidates(p, p)
	md.pass(scope{}, func(r, q0 int, v []float64) {
		toRow(r, q0, v)
		toCol(r, q0, v, nil)
	})
	if err := mon.err(); err != nil {
		return fmt.Errorf("psda: stage 2 candidates: %w", err)
	}
	trace("stage 2: candidate pass done")
	for r := 0; r < p; r++ {
		near.each(r, func(q int, v, _ float64) { both(r, q, v) })
	}
	tau := near.thresholds()
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
	if md.err32 != nil {
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
	neighbours := func(v int) []int32 {
		out := make([]int32, len(adj[v]))
		for k, e := range adj[v] {
			out[k] = e.b
		}
		return out
	}
	mate, odd, err := assign.RoundRelaxationNear(sol.Col4Row, oracle, neighbours, mon.hooks(PhaseStage2Match))
	if err != nil {
		return fmt.Errorf("psda: stage 2 (sparse): %w", err)
	}
	m.group(mate)
	m.Stage2Cost = 0
	for r, q := range mate {
		if r < q { // the dummy p is the largest node: singles count once too
			m.Stage2Cost += oracle(r, q)
		}
	}
	// The priced potentials hold for every dense edge, so the relaxation
	// optimum sol.Cost is the dense one and half of it bounds the matching.
	m.Stage2Bound = math.Min(sol.Cost/2, m.Stage2Cost)
	if odd == 0 {
		m.Stage2Bound = m.Stage2Cost
	}
	return nil
}
