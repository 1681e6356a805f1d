package psda

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// TestMatchCrossSame checks that a two-stage RBF matching whose Stage 2
// reads Stage 1's cross kernel (plan.keepCross) returns the matching and
// the costs, to the bit, of one that computes it again (noCross), on
// Gaussian, ReLU-like and clustered features (odd and even n: with and
// without the dummy node; d on both sides of the direct path; two to five
// rows a side), and that the returned Matching holds no kernel.
func TestMatchCrossSame(t *testing.T) {
	for _, tc := range []struct {
		kind string
		n, d int
	}{{"gauss", 301, 40}, {"relu", 200, 12}, {"clustered", 257, 64}, {"clustered", 64, 3}, {"relu", 2, 40}, {"gauss", 3, 20}, {"gauss", 5, 5}} {
		t.Run(fmt.Sprintf("%s/n=%d/d=%d", tc.kind, tc.n, tc.d), func(t *testing.T) {
			src, tgt := floorFeatures(tc.kind, tc.n, tc.n, tc.d, 3)
			cfg := Config{BatchSize: max(2, min(8, tc.n)&^1), Stages: 2, Discrepancy: MMD, Kernel: RBF}
			pl := defaultPlan()
			if !pl.keepCross(src.N, tgt.N, cfg, false, false) {
				t.Fatal("keepCross refused a small balanced RBF matching")
			}
			got, err := pl.match(src, tgt, cfg)
			if err != nil {
				t.Fatal(err)
			}
			pl.noCross = true
			want, err := pl.match(src, tgt, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got.cross != nil {
				t.Fatal("the Matching still holds Stage 1's cross kernel")
			}
			if !slices.Equal(got.Pairs, want.Pairs) || !slices.Equal(got.Quads, want.Quads) || !slices.Equal(got.Singles, want.Singles) {
				t.Fatal("the pairs, quadruplets or singles differ with the cross kernel kept")
			}
			for _, c := range [][2]float64{{got.Stage1Cost, want.Stage1Cost}, {got.Stage2Cost, want.Stage2Cost}, {got.Stage2Bound, want.Stage2Bound}} {
				if math.Float64bits(c[0]) != math.Float64bits(c[1]) {
					t.Fatalf("cost %.17g with the cross kernel kept, %.17g without", c[0], c[1])
				}
			}
		})
	}
}

// TestKeepCross checks plan.keepCross's rule: only a balanced two-stage
// RBF MMD on the dense path keeps the table, and only when it fits beside
// the larger stage matrix with checkMemory's margin (or, memory unknown,
// within denseLimit).
func TestKeepCross(t *testing.T) {
	rbf := Config{BatchSize: 8, Stages: 2, Discrepancy: MMD, Kernel: RBF}
	lin, one := rbf, rbf
	lin.Kernel, one.Stages = Linear, 1
	const n = 1000
	need := int64(2 * 8 * n * n) // the Stage 2 matrix and the table
	for _, tc := range []struct {
		name             string
		ns, nt           int
		cfg              Config
		sparse1, sparse2 bool
		avail, limit     int64
		want             bool
	}{
		{"fits", n, n, rbf, false, false, need + need/8, 3 << 30, true},
		{"short by a byte", n, n, rbf, false, false, need + need/8 - 1, 3 << 30, false},
		{"unknown memory, within the limit", n, n, rbf, false, false, 0, need, true},
		{"unknown memory, over the limit", n, n, rbf, false, false, 0, need - 1, false},
		{"imbalanced", n, n - 1, rbf, false, false, 1 << 40, 3 << 30, false},
		{"linear", n, n, lin, false, false, 1 << 40, 3 << 30, false},
		{"one stage", n, n, one, false, false, 1 << 40, 3 << 30, false},
		{"sparse stage 1", n, n, rbf, true, false, 1 << 40, 3 << 30, false},
		{"sparse stage 2", n, n, rbf, false, true, 1 << 40, 3 << 30, false},
	} {
		pl := &plan{denseLimit: tc.limit, available: func() (int64, memLimit) { return tc.avail, limitMachine }}
		if got := pl.keepCross(tc.ns, tc.nt, tc.cfg, tc.sparse1, tc.sparse2); got != tc.want {
			t.Errorf("%s: keepCross = %v, want %v", tc.name, got, tc.want)
		}
	}
}
