package psda

import (
	"testing"

	"github.com/psda-dev/psda/psda/internal/testref"
)

// BenchmarkStage1, BenchmarkStage2 and BenchmarkMatch time each stage whole
// (costs + exact solve) and the full Double-paired matching, on the inputs of
// the cost benchmarks. Compare with the NumPy + SciPy path through
// `python benchmarks/bench.py`, which runs both in one process.
func BenchmarkStage1(b *testing.B) {
	benchStages(b, func(src, tgt Matrix, cfg Config, _ *Matching) {
		if err := defaultPlan().stage1(src, tgt, cfg, &Matching{}); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkStage2(b *testing.B) {
	benchStages(b, func(src, tgt Matrix, cfg Config, m1 *Matching) {
		m := &Matching{Pairs: m1.Pairs}
		if err := defaultPlan().stage2(src, tgt, cfg, m); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkMatch(b *testing.B) {
	benchStages(b, func(src, tgt Matrix, cfg Config, _ *Matching) {
		if _, err := Match(src, tgt, cfg); err != nil {
			b.Fatal(err)
		}
	})
}

// benchStages runs f for every size and configuration, handing it the Stage 1
// result computed once outside the timed loop.
func benchStages(b *testing.B, f func(src, tgt Matrix, cfg Config, m1 *Matching)) {
	testref.BenchSizes(func(size string, src, tgt Matrix) {
		for _, bc := range benchConfigs {
			cfg := bc.cfg
			cfg.Stages = 2
			b.Run(size+"/"+bc.name, func(b *testing.B) {
				m1 := &Matching{}
				if err := defaultPlan().stage1(src, tgt, cfg, m1); err != nil {
					b.Fatal(err)
				}
				testref.LoopCPU(b, func() { f(src, tgt, cfg, m1) })
			})
		}
	})
}

// benchConfigs are the discrepancies of the benchmarks, at k = 64 (those
// of internal/cost's cost benchmarks).
var benchConfigs = []struct {
	name string
	cfg  Config
}{
	{"rbf", Config{BatchSize: 64, Discrepancy: MMD, Kernel: RBF}},
	{"linear", Config{BatchSize: 64, Discrepancy: MMD, Kernel: Linear}},
	{"coral", Config{BatchSize: 64, Discrepancy: CORAL}},
}
