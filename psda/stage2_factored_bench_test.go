package psda

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/psda-dev/psda/psda/internal/cost"
	"github.com/psda-dev/psda/psda/internal/testref"
)

// BenchmarkStage2Factored times whole Double-paired MMD-RBF matchings (k =
// 32) on imbalanced shapes, for ReLU-like, Gaussian and clustered features
// (floorFeatures), with Stage 2's RBF model forced each way
// (cost.FactorMin): "rbf2", the Gram matrix of the 2P paired vectors, and
// "factored", the larger side's Gram matrix plus tables against the smaller
// side. Besides the whole (ns/op, cpu-s/op) it reports each phase's wall
// and CPU seconds (the CPU ones stay meaningful on a shared machine), read
// from the Monitor as a progress bar would: s1costs, s1assign, s2costs (on
// the sparse path its candidate pass only) and s2match (on the sparse path
// with its pricing passes). 4000 × 160 is the DomainBed
// protocol's shape; 20000 × 1000 runs on both paths and on "split", Stage 1
// dense and Stage 2 sparse (plan.denseLimit just below Stage 2's
// matrix); 40000 × 2000, d = 512, takes minutes: name it in -bench to run it
// alone.
func BenchmarkStage2Factored(b *testing.B) {
	defer func(old int) { cost.FactorMin = old }(cost.FactorMin)
	apart := func(feat func(n, d int, seed uint64) Matrix) func(ns, nt, d int) (Matrix, Matrix) {
		return func(ns, nt, d int) (Matrix, Matrix) { return feat(ns, d, 1), feat(nt, d, 2) }
	}
	feats := []struct {
		name string
		feat func(ns, nt, d int) (Matrix, Matrix)
	}{{"relu", apart(testref.BenchFeatures)}, {"gauss", apart(gaussFeatures)},
		{"clustered", func(ns, nt, d int) (Matrix, Matrix) { return floorFeatures("clustered", ns, nt, d, 1) }}}
	for _, sh := range []struct {
		ns, nt, d int
		solver    string
	}{
		{4000, 160, 64, Auto}, {4000, 160, 256, Auto}, {4000, 160, 256, split}, {12000, 480, 256, Auto},
		{12000, 480, 256, split}, {20000, 1000, 256, Auto}, {20000, 1000, 256, Sparse}, {20000, 1000, 256, split},
		{40000, 2000, 512, Auto},
	} {
		for _, ft := range feats {
			for _, md := range []struct {
				name      string
				factorMin int
			}{{"rbf2", math.MaxInt}, {"factored", 4}} {
				solver := map[string]string{Auto: "auto", Sparse: "sparse", split: split}[sh.solver]
				b.Run(fmt.Sprintf("%dx%d/d=%d/%s/%s/%s", sh.ns, sh.nt, sh.d, solver, ft.name, md.name), func(b *testing.B) {
					src, tgt := ft.feat(sh.ns, sh.nt, sh.d)
					cost.FactorMin = md.factorMin
					cfg := Config{BatchSize: 32, Stages: 2, Discrepancy: MMD, Kernel: RBF, Solver: sh.solver, Monitor: &Monitor{}}
					pl := defaultPlan()
					if sh.solver == split {
						// Below Stage 2's matrix, above Stage 1's and the
						// factored model's tables (plan.stage2Table).
						_, s2 := stageBytes(sh.ns, sh.nt)
						cfg.Solver, pl.denseLimit = Auto, s2-1
					}
					benchPhases(b, pl, src, tgt, cfg)
				})
			}
		}
	}
}

// split names BenchmarkStage2Factored's Stage 1 dense, Stage 2 sparse.
const split = "split"

// benchPhases runs pl.match(src, tgt, cfg) as benchmark b's loop and
// reports, besides its CPU seconds, each phase's wall and CPU seconds per
// matching, read from cfg.Monitor.
func benchPhases(b *testing.B, pl *plan, src, tgt Matrix, cfg Config) {
	var phases [PhaseDone + 1][2]time.Duration
	testref.LoopCPU(b, func() {
		stop := clockPhases(cfg.Monitor, &phases)
		defer stop()
		if _, err := pl.match(src, tgt, cfg); err != nil {
			b.Fatal(err)
		}
	})
	for ph, unit := range map[int]string{PhaseStage1Costs: "s1costs", PhaseStage1Assign: "s1assign",
		PhaseStage2Costs: "s2costs", PhaseStage2Match: "s2match"} {
		b.ReportMetric(phases[ph][0].Seconds()/float64(b.N), unit+"-s/op")
		b.ReportMetric(phases[ph][1].Seconds()/float64(b.N), unit+"-cpu-s/op")
	}
}

// clockPhases adds the wall and CPU time of each phase of the Match that
// mon follows to phases, polling every millisecond, until stop is called.
func clockPhases(mon *Monitor, phases *[PhaseDone + 1][2]time.Duration) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		last, t0, c0 := PhaseIdle, time.Now(), testref.CPUTime()
		add := func() {
			now, c := time.Now(), testref.CPUTime()
			phases[last][0] += now.Sub(t0)
			phases[last][1] += c - c0
			t0, c0 = now, c
		}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				add()
				return
			case <-tick.C:
				if _, ph := mon.Progress(); ph != last {
					add()
					last = ph
				}
			}
		}
	}()
	return func() { close(quit); <-done }
}
