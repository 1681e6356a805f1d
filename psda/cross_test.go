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
			sameWithoutCross(t, pl, src, tgt, cfg)
		})
	}
}

// TestMatchCrossSameImbalanced is TestMatchCrossSame where Stage 2 takes
// the factored model (n_s ≠ n_t, P/n_b >= cost.FactorMin), which reads
// Stage 1's cross kernel as its table K_ab: the source the larger side and
// the target (Stage 1 then keeps it transposed, K_ab itself), Stage 2 dense and sparse
// (its plan's denseLimit below Stage 2's matrix, above Stage 1's), sizes
// over several tiles (odd P: the dummy node).
func TestMatchCrossSameImbalanced(t *testing.T) {
	for _, tc := range []struct {
		kind      string
		ns, nt, d int
		sparse2   bool
	}{
		{"relu", 800, 190, 64, false}, {"gauss", 161, 801, 20, false}, {"clustered", 1000, 200, 40, true},
		{"relu", 150, 1001, 12, true}, {"gauss", 999, 160, 300, false},
	} {
		t.Run(fmt.Sprintf("%s/%dx%d/d=%d/sparse2=%v", tc.kind, tc.ns, tc.nt, tc.d, tc.sparse2), func(t *testing.T) {
			src, tgt := floorFeatures(tc.kind, tc.ns, tc.nt, tc.d, 3)
			cfg := Config{BatchSize: 8, Stages: 2, Discrepancy: MMD, Kernel: RBF}
			pl := defaultPlan()
			if tc.sparse2 {
				_, s2 := stageBytes(tc.ns, tc.nt)
				pl.denseLimit = s2 - 1
			}
			if s1, s2 := pl.sparseStages(src.N, tgt.N, cfg); s1 || s2 != tc.sparse2 {
				t.Fatalf("stages sparse %v, %v; the test wants a dense Stage 1 and %v", s1, s2, tc.sparse2)
			}
			if !pl.keepCross(src.N, tgt.N, cfg, false, tc.sparse2) {
				t.Fatal("keepCross refused a small imbalanced RBF matching")
			}
			sameWithoutCross(t, pl, src, tgt, cfg)
		})
	}
}

// sameWithoutCross runs pl's matching with Stage 1's cross kernel kept
// (the caller has checked that pl keeps it) and again without (noCross),
// and fails unless the pairs, quadruplets, singles and the costs' bits
// agree and the returned Matching no longer holds the kernel.
func sameWithoutCross(t *testing.T, pl *plan, src, tgt Matrix, cfg Config) {
	t.Helper()
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
}

// TestKeepCross checks plan.keepCross's rule: a two-stage RBF MMD with a
// dense Stage 1 keeps the table when balanced with a dense Stage 2, only
// when it fits beside the larger stage matrix, and when imbalanced with
// Stage 2 on the factored model (either path), only when it fits beside
// Stage 1's matrix, with checkMemory's margin (or, memory unknown, within
// denseLimit).
func TestKeepCross(t *testing.T) {
	rbf := Config{BatchSize: 8, Stages: 2, Discrepancy: MMD, Kernel: RBF}
	lin, one := rbf, rbf
	lin.Kernel, one.Stages = Linear, 1
	const n = 1000
	need := int64(2 * 8 * n * n) // the Stage 2 matrix and the table
	// Imbalanced, factored: Stage 1's matrix and the table, whichever side
	// is the larger (no transposing copy); Stage 2's tables take the
	// table's place.
	fac := int64(2 * 8 * n * n / 4)
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
		{"imbalanced, rbf2", n, n - 1, rbf, false, false, 1 << 40, 3 << 30, false},
		{"factored, fits", n, n / 4, rbf, false, false, fac + fac/8, 3 << 30, true},
		{"factored, short by a byte", n, n / 4, rbf, false, false, fac + fac/8 - 1, 3 << 30, false},
		{"factored, target the larger", n / 4, n, rbf, false, false, fac + fac/8, 3 << 30, true},
		{"factored, target the larger, short", n / 4, n, rbf, false, false, fac + fac/8 - 1, 3 << 30, false},
		{"factored, unknown memory", n, n / 4, rbf, false, false, 0, fac, true},
		{"factored, sparse stage 2", n, n / 4, rbf, false, true, 1 << 40, 3 << 30, true},
		{"factored, sparse stage 2, tables over its limit", n, n / 4, rbf, false, true, 1 << 40, 2 * n * n / 4 * 8, false},
		{"factored, sparse stage 1", n, n / 4, rbf, true, true, 1 << 40, 3 << 30, false},
		{"ratio under FactorMin", n, n/4 + 1, rbf, false, false, 1 << 40, 3 << 30, false},
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
