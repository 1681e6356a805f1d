package psda

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/psda-dev/psda/psda/internal/testref"
)

// TestStage1NoTransposedCopy checks that a dense Stage 1 with more targets
// than sources allocates what its mirror allocates (one n_s·n_t matrix,
// and the kept cross kernel), not a transposed copy of its matrix besides
// (main allocated 8·n_s·n_t bytes more and wrote them column by column),
// and that it keeps the cross kernel with the targets' rows first (the
// factored Stage 2's table K_ab as is, A being the targets: Cross.T).
func TestStage1NoTransposedCopy(t *testing.T) {
	const ns, nt, d = 300, 3000, 8
	src, tgt := testref.BenchFeatures(ns, d, 1), testref.BenchFeatures(nt, d, 2)
	cfg := Config{BatchSize: 8, Stages: 2, Discrepancy: MMD, Kernel: RBF}
	run := func(s, g Matrix) (uint64, *Matching) {
		m := &Matching{keepCross: true, sumsPending: true}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if err := defaultPlan().stage1(s, g, cfg, m); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc, m
	}
	more, m := run(src, tgt)
	mirror, mm := run(tgt, src)
	if more > mirror+8*ns*nt/4 {
		t.Errorf("Stage 1 of %d × %d allocated %d bytes, its mirror %d: a copy of its %d-byte matrix?", ns, nt, more, mirror, 8*ns*nt)
	}
	if m.cross == nil || !m.cross.T || mm.cross == nil || mm.cross.T {
		t.Fatalf("kept kernels: %d × %d T = %v, mirror T = %v; want the larger side's rows first in both", ns, nt,
			m.cross != nil && m.cross.T, mm.cross != nil && mm.cross.T)
	}
	for r, pr := range m.Pairs {
		if pr.T != r {
			t.Fatalf("pair %d is %v: the pairs of more targets go by target", r, pr)
		}
	}
}

// TestMatchMirrored checks that a matching of sources S and targets T and
// one of T and S (the mirror) agree on inputs without ties, for every
// discrepancy, dense and sparse, with the targets more and fewer (odd P,
// the RBF mixture's factored Stage 2 at P >= 4·n_small, a single row):
// pair r of one is pair r of the other with its sides swapped, the
// quadruplets and singles are the same, and the costs agree to rounding
// (not bit for bit: the mirror's costs are the same quantities computed
// with the roles of the domains swapped, e.g. ‖(s_i − δ) − t_j‖² against
// ‖(t_j + δ) − s_i‖²). For P <= 12 Stage 2's cost is also the optimum of
// exhaustive enumeration over the pairs' C^MM (bruteStage2).
func TestMatchMirrored(t *testing.T) {
	cfgs := []struct {
		name string
		cfg  Config
	}{
		{"rbf", Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF}},
		{"linear", Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: Linear}},
		{"coral", Config{BatchSize: 4, Stages: 2, Discrepancy: CORAL}},
	}
	for _, sh := range [][3]int{{5, 11, 3}, {9, 12, 4}, {30, 121, 6}, {64, 257, 20}, {1, 40, 5}, {200, 203, 8}} {
		for _, cc := range cfgs {
			for _, solver := range []string{Dense, Sparse} {
				name := fmt.Sprintf("%dx%d/d=%d/%s/%s", sh[0], sh[1], sh[2], cc.name, solver)
				t.Run(name, func(t *testing.T) {
					src, tgt := gaussFeatures(sh[0], sh[2], uint64(sh[0])), gaussFeatures(sh[1], sh[2], uint64(sh[1])+100)
					cfg := cc.cfg
					cfg.Solver = solver
					a, err := Match(src, tgt, cfg)
					if err != nil {
						t.Fatal(err)
					}
					b, err := Match(tgt, src, cfg)
					if err != nil {
						t.Fatal(err)
					}
					for r, pr := range a.Pairs {
						if b.Pairs[r] != (Pair{S: pr.T, T: pr.S}) {
							t.Fatalf("pair %d: %v, the mirror's %v", r, pr, b.Pairs[r])
						}
					}
					if !slices.Equal(a.Quads, b.Quads) || !slices.Equal(a.Singles, b.Singles) {
						t.Fatalf("quadruplets or singles differ from the mirror's:\n%v %v\n%v %v", a.Quads, a.Singles, b.Quads, b.Singles)
					}
					for _, c := range [][3]any{{"Stage1Cost", a.Stage1Cost, b.Stage1Cost}, {"Stage2Cost", a.Stage2Cost, b.Stage2Cost},
						{"Stage2Bound", a.Stage2Bound, b.Stage2Bound}} {
						x, y := c[1].(float64), c[2].(float64)
						if !(math.Abs(x-y) <= 1e-11*max(1, math.Abs(x))) {
							t.Errorf("%s %.17g, the mirror's %.17g", c[0], x, y)
						}
					}
					if p := len(a.Pairs); p <= 12 {
						c, n := stage2Costs(src, tgt, cfg, a.Pairs)
						if want := bruteStage2(c, n); math.Abs(a.Stage2Cost-want) > 1e-9*(1+math.Abs(want)) {
							t.Errorf("Stage2Cost %.15g, enumeration %.15g", a.Stage2Cost, want)
						}
					}
				})
			}
		}
	}
}
