package psda

import (
	"fmt"
	"strings"
	"testing"
)

// TestPlanMirrored checks that a problem and its mirror (source and target
// swapped) plan alike: the same dense bytes, the same path for each stage
// under Auto, Dense and Sparse, the same kept cross kernel and factored
// Stage 2, and the same memory refusal (the message with the sizes
// swapped), for every discrepancy, one stage and two, and machines of
// several sizes. Stage 1's matrix is written in the solver's layout in both
// orientations (stage1), so nothing may depend on which side is the
// source: on main a Stage 1 with more targets counted twice its matrix for
// a transposing copy, and 5000 × 100000 ran Stage 1 sparse where 100000 ×
// 5000 ran it dense.
func TestPlanMirrored(t *testing.T) {
	cfgs := []Config{
		{BatchSize: 32, Stages: 2, Discrepancy: MMD, Kernel: RBF},
		{BatchSize: 32, Stages: 1, Discrepancy: MMD, Kernel: RBF},
		{BatchSize: 32, Stages: 2, Discrepancy: MMD, Kernel: Linear},
		{BatchSize: 32, Stages: 2, Discrepancy: CORAL},
	}
	shapes := [][2]int{{10, 1000}, {200, 300}, {1000, 20000}, {2000, 40000}, {5000, 100000}, {3, 400000}, {30000, 35000}}
	for _, sh := range shapes {
		ns, nt := sh[0], sh[1]
		if got, want := denseBytes(ns, nt, 1), denseBytes(nt, ns, 1); got != want {
			t.Errorf("denseBytes(%d, %d, 1) = %d, its mirror's %d", ns, nt, got, want)
		}
		for _, cfg := range cfgs {
			for _, solver := range []string{Auto, Dense, Sparse} {
				for _, avail := range []int64{0, 1 << 30, 6 << 30, 24 << 30, 1 << 40} {
					cfg := cfg
					cfg.Solver = solver
					name := fmt.Sprintf("%dx%d/stages=%d/%v/%v/%s/avail=%d", ns, nt, cfg.Stages, cfg.Discrepancy, cfg.Kernel, solver, avail)
					pl := defaultPlan()
					pl.available = func() (int64, memLimit) { return avail, limitMachine }
					s1, s2 := pl.sparseStages(ns, nt, cfg)
					m1, m2 := pl.sparseStages(nt, ns, cfg)
					if s1 != m1 || s2 != m2 {
						t.Errorf("%s: sparse stages (%v, %v), the mirror's (%v, %v)", name, s1, s2, m1, m2)
						continue
					}
					if a, b := pl.keepCross(ns, nt, cfg, s1, s2), pl.keepCross(nt, ns, cfg, s1, s2); a != b {
						t.Errorf("%s: keepCross %v, the mirror's %v", name, a, b)
					}
					if a, b := pl.factored(ns, nt, cfg, s2), pl.factored(nt, ns, cfg, s2); a != b {
						t.Errorf("%s: factored %v, the mirror's %v", name, a, b)
					}
					e1, e2 := pl.checkMemory(ns, nt, 256, cfg), pl.checkMemory(nt, ns, 256, cfg)
					if (e1 == nil) != (e2 == nil) {
						t.Errorf("%s: checkMemory %v, the mirror's %v", name, e1, e2)
						continue
					}
					if e1 != nil {
						sizes := func(a, b int) string { return fmt.Sprintf("matching %d source and %d target rows", a, b) }
						if got := strings.Replace(e1.Error(), sizes(ns, nt), sizes(nt, ns), 1); got != e2.Error() {
							t.Errorf("%s: checkMemory says\n%s\nthe mirror's\n%s", name, e1, e2)
						}
					}
				}
			}
		}
	}
}
