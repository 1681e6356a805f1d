package psda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/psda-dev/psda/psda/internal/cost"
	"github.com/psda-dev/psda/psda/internal/par"
)

// TestStage2HubsEqualsDense compares the sparse Stage 2 (forced, on the
// dense path's pairs) with the dense one on random inputs of which about a
// fifth make the relaxation's first screen run its hub pass (about 240
// pairs, balanced or imbalanced, few candidates): Gaussian or ReLU
// features, at times with far outliers (some clustered) or duplicated
// rows, odd and even pair counts, short kept lists (sorted and buffered),
// the linear and RBF MMD and CORAL. It checks the relaxation's
// certificate edge by edge at the first blossom round (the start y0
// feasible, the rows' records true), and that both exact paths agree on
// Stage 2's cost and certified bound up to the pricing's tolerance, P
// times 1e-9 of the largest cost (on CORAL with outliers that exceeds
// 1e-9 of the objective). Where the hub pass ran, the sparse Stage 2 runs
// again on one and on four workers and must give the same bits.
func TestStage2HubsEqualsDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	cfgs := []Config{
		{BatchSize: 4, Discrepancy: MMD, Kernel: RBF, Stages: 2},
		{BatchSize: 4, Discrepancy: MMD, Kernel: Linear, Stages: 2},
		{BatchSize: 4, Discrepancy: CORAL, Stages: 2},
	}
	instances := 60
	if testing.Short() {
		instances = 12
	}
	withHubs := 0
	for it := range instances {
		ns := 150 + rng.IntN(150)
		nt := ns / []int{1, 1, 4, 12}[rng.IntN(4)]
		if rng.IntN(2) == 0 {
			ns, nt = nt, ns
		}
		if rng.IntN(3) == 0 { // an odd pair count
			ns, nt = ns|1, nt|1
		}
		d := []int{2, 8, 24, 64}[rng.IntN(4)]
		src, tgt := outlierFeatures(rng, ns, d), outlierFeatures(rng, nt, d)
		cfg := cfgs[rng.IntN(len(cfgs))]
		pl := defaultPlan()
		pl.sparseK = []int{2, 4, 8}[rng.IntN(3)]
		pl.sparseAdd = []int{1, 2, 8, 30}[rng.IntN(4)]
		name := fmt.Sprintf("instance %d (%dx%d, d=%d, %s/%s, K=%d, add=%d)", it, ns, nt, d, cfg.Discrepancy, cfg.Kernel, pl.sparseK, pl.sparseAdd)
		cfg.Solver = Dense
		want, err := pl.match(src, tgt, cfg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		hubs := 0
		pl.trace = func(f string, args ...any) {
			if strings.HasPrefix(f, "screen: ") && args[2].(int) > 0 {
				hubs++
			}
		}
		// The relaxation's certificate, which the blossom rounds rest on,
		// checked edge by edge at their first round: the start y0 is
		// feasible for every dense edge, and each row's record bounds s0
		// of its edges outside the graph and its kept list.
		var fail error
		rounds := 0
		pl.records = func(rec *rowRecords, md *cost.Stage2, has func(a, b int) bool, y0 []float64, costOf func(a, b int, x float64) float64) {
			if rounds++; rounds > 1 {
				return
			}
			p := md.P
			scale := 0.0
			for a := 0; a < p; a++ {
				for b := 0; b < p; b++ {
					if a != b {
						scale = max(scale, math.Abs(costOf(a, b, md.At(a, b))))
					}
				}
			}
			for a := 0; a < p && fail == nil; a++ {
				kept := map[int]bool{}
				rec.kept.Each(a, func(b int, _, _ float64) { kept[b] = true })
				for b := 0; b < p; b++ {
					if b == a {
						continue
					}
					s0 := costOf(a, b, md.At(a, b)) - y0[a] - y0[b]
					if s0 < -2e-9*scale {
						fail = fmt.Errorf("edge (%d, %d) has reduced cost %v under the relaxation's start", a, b, s0)
						break
					}
					if !has(a, b) && !kept[b] && s0 < rec.low[a]-1e-9*scale {
						fail = fmt.Errorf("row %d edge to %d: s0 %v below the record's bound %v", a, b, s0, rec.low[a])
						break
					}
				}
			}
		}
		cfg.Solver = Sparse
		sp := &Matching{Pairs: want.Pairs}
		if err := pl.stage2Sparse(src, tgt, cfg, sp); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fail != nil {
			t.Fatalf("%s (hub pass %t): %v", name, hubs > 0, fail)
		}
		if hubs > 0 {
			withHubs++
		}
		// The pricing's tolerance is 1e-9 of the largest cost (PriceTol) an
		// edge, so the paths agree to P of those, not to 1e-9 relative.
		c2, _ := newStage2Model(src, tgt, cfg, want.Pairs, math.MaxInt64).Dense()
		big := 0.0
		for _, v := range c2 {
			big = max(big, math.Abs(v))
		}
		tol := 1e-9*math.Max(math.Abs(want.Stage2Cost), 1e-300) + 1e-9*big*float64(len(want.Pairs))
		if dc, db := math.Abs(sp.Stage2Cost-want.Stage2Cost), math.Abs(sp.Stage2Bound-want.Stage2Bound); max(dc, db) > 1e-9*math.Abs(want.Stage2Cost) {
			t.Logf("%s: cost differs by %.3g, bound by %.3g, relative %.3g; P·PriceTol %.3g", name, dc, db, dc/want.Stage2Cost, 1e-9*big*float64(len(want.Pairs)))
		}
		if math.Abs(sp.Stage2Cost-want.Stage2Cost) > tol || math.Abs(sp.Stage2Bound-want.Stage2Bound) > tol {
			t.Fatalf("%s (hub pass %t): stage 2 cost %.15g, bound %.15g; dense %.15g, %.15g",
				name, hubs > 0, sp.Stage2Cost, sp.Stage2Bound, want.Stage2Cost, want.Stage2Bound)
		}
		checkQuads(t, sp, len(want.Pairs))
		if hubs > 0 {
			// The hub pass fills the lists from two sinks at once: on one
			// worker and on four the result must be the same to the bit.
			pl.records = nil
			for _, w := range []int{1, 4} {
				par.SetWorkers(w)
				again := &Matching{Pairs: want.Pairs}
				err := pl.stage2Sparse(src, tgt, cfg, again)
				par.SetWorkers(0)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !slices.Equal(again.Quads, sp.Quads) || math.Float64bits(again.Stage2Bound) != math.Float64bits(sp.Stage2Bound) {
					t.Fatalf("%s: on %d workers stage 2 bound %v (or other quads), %v before", name, w, again.Stage2Bound, sp.Stage2Bound)
				}
			}
		}
	}
	if withHubs < instances/8 {
		t.Fatalf("only %d of %d instances ran the hub pass (the test needs it)", withHubs, instances)
	}
	t.Logf("%d of %d instances ran the hub pass", withHubs, instances)
}

// outlierFeatures returns n Gaussian or ReLU-like feature rows of
// dimension d, some of them far outliers (a few repeated) and some
// duplicated.
func outlierFeatures(rng *rand.Rand, n, d int) Matrix {
	m := Matrix{N: n, D: d, F64: make([]float64, n*d)}
	relu := rng.IntN(2) == 0
	for i := range m.F64 {
		v := rng.NormFloat64()
		if relu {
			v = max(0, v)
		}
		m.F64[i] = v
	}
	row := func(i int) []float64 { return m.F64[i*d : (i+1)*d] }
	far, last := []int{0, 0, 0, 1 + rng.IntN(max(1, n/20))}[rng.IntN(4)], 0
	for k := range far {
		i := rng.IntN(n)
		if k > 0 && rng.IntN(2) == 0 { // near the last outlier
			for j := range row(i) {
				row(i)[j] = row(last)[j] + 0.01*rng.NormFloat64()
			}
			continue
		}
		last = i
		s := 5 + 20*rng.Float64()
		for j := range row(i) {
			row(i)[j] *= s
			if math.Abs(row(i)[j]) < 1 {
				row(i)[j] += s
			}
		}
	}
	for range []int{0, 0, 0, rng.IntN(n / 5)}[rng.IntN(4)] {
		copy(row(rng.IntN(n)), row(rng.IntN(n)))
	}
	return m
}
