package psda

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/psda-dev/psda/psda/internal/testref"
)

// bruteStage2 returns the minimum of Σ c over the perfect matchings of the
// m×m matrix c, by enumerating all (m−1)!! of them.
func bruteStage2(c []float64, m int) float64 {
	used := make([]bool, m)
	best := math.Inf(1)
	var rec func(sum float64)
	rec = func(sum float64) {
		i := 0
		for i < m && used[i] {
			i++
		}
		if i == m {
			best = math.Min(best, sum)
			return
		}
		used[i] = true
		for j := i + 1; j < m; j++ {
			if !used[j] {
				used[j] = true
				rec(sum + c[i*m+j])
				used[j] = false
			}
		}
		used[i] = false
	}
	rec(0)
	return best
}

// TestStage2Brute checks that Stage 2, dense and sparse (one candidate per
// line, so that the blossom pricing must add edges), returns the optimum of
// exhaustive enumeration over C^MM for P <= 12 pairs, odd P (one pair left
// single) included, and that its bound equals its cost up to rounding.
func TestStage2Brute(t *testing.T) {
	pl := defaultPlan()
	pl.sparseK, pl.sparseAdd = 1, 1
	added, cleared := 0, 0
	pl.trace = func(format string, args ...any) {
		if format == "  %d violating edges added" {
			added += args[0].(int)
		}
		if strings.HasPrefix(format, "stage 2 blossom round") {
			cleared += args[4].(int)
		}
	}
	cfgs := []struct {
		name string
		cfg  Config
	}{
		{"rbf", Config{BatchSize: 4, Discrepancy: MMD, Kernel: RBF, Stages: 2}},
		{"linear", Config{BatchSize: 4, Discrepancy: MMD, Kernel: Linear, Stages: 2}},
		{"coral", Config{BatchSize: 4, Discrepancy: CORAL, Stages: 2}},
		{"coralK2", Config{BatchSize: 2, Discrepancy: CORAL, Stages: 2}},
	}
	feats := []struct {
		name string
		feat func(n, d int, seed uint64) Matrix
	}{{"gauss", gaussFeatures}, {"relu", testref.BenchFeatures}}
	for _, p := range []int{3, 4, 7, 9, 11, 12} {
		for _, ns := range []int{p, (p + 1) / 2} {
			for _, ft := range feats {
				for _, d := range []int{2, 5} {
					for seed := uint64(1); seed <= 3; seed++ {
						src, tgt := ft.feat(p, d, seed), ft.feat(ns, d, seed+10)
						for _, cc := range cfgs {
							name := fmt.Sprintf("P=%d/ns=%d/%s/d=%d/%d/%s", p, ns, ft.name, d, seed, cc.name)
							cfg := cc.cfg
							cfg.BatchSize = min(cfg.BatchSize, p)
							m1 := &Matching{}
							if err := pl.stage1(src, tgt, cfg, m1); err != nil {
								t.Fatal(err)
							}
							c, m := stage2Costs(src, tgt, cfg, m1.Pairs)
							want := bruteStage2(c, m)
							for _, run := range []func(src, tgt Matrix, cfg Config, m *Matching) error{pl.stage2, pl.stage2Sparse} {
								got := &Matching{Pairs: m1.Pairs}
								if err := run(src, tgt, cfg, got); err != nil {
									t.Fatal(name, err)
								}
								tol := 1e-9 * (1 + math.Abs(want))
								if math.Abs(got.Stage2Cost-want) > tol || got.Stage2Bound > got.Stage2Cost || got.Stage2Cost-got.Stage2Bound > tol {
									t.Fatalf("%s: cost %.15g, bound %.15g, enumeration %.15g", name, got.Stage2Cost, got.Stage2Bound, want)
								}
								checkQuads(t, got, p)
								if p%2 == 1 && len(got.Singles) != 1 {
									t.Fatalf("%s: %d singles for odd P", name, len(got.Singles))
								}
							}
						}
					}
				}
			}
		}
	}
	if added == 0 {
		t.Fatal("the blossom pricing never added an edge: the sparse path was not exercised")
	}
	if cleared == 0 {
		t.Fatal("no row was cleared by its record: rowRecords was not exercised")
	}
	t.Logf("blossom pricing added %d edges; records cleared %d rows", added, cleared)
}
