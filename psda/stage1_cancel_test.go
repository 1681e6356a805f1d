package psda

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/psda-dev/psda/psda/internal/testref"
)

// TestCancelTransposedStage1 cancels a Match while Stage 1 writes its
// costs with the targets as rows (n_t > n_s: cost.Stage1.DenseT, keeping
// the cross kernel transposed for the factored Stage 2), for every
// discrepancy: Match must return ErrCancelled and no Matching, and the
// same Monitor, reset, must then give the results of a Match that was
// never cancelled, bit for bit (nothing of the cancelled pass, such as
// its half-written kernel, carried over).
func TestCancelTransposedStage1(t *testing.T) {
	const ns, nt, d = 400, 4000, 32
	src, tgt := testref.BenchFeatures(ns, d, 1), testref.BenchFeatures(nt, d, 2)
	for _, cfg := range []Config{
		{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF, Solver: Dense},
		{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: Linear, Solver: Dense},
		{BatchSize: 4, Stages: 2, Discrepancy: CORAL, Solver: Dense},
	} {
		want, err := Match(src, tgt, cfg)
		if err != nil {
			t.Fatal(err)
		}
		mon := &Monitor{}
		cfg.Monitor = mon
		// Cancel from the pass's own progress: once its first tiles are in.
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if done, ph := mon.Progress(); ph == PhaseStage1Costs && done > 0 {
					mon.Cancel()
					return
				}
			}
		}()
		m, err := Match(src, tgt, cfg)
		close(stop)
		if err == nil {
			t.Logf("%v/%v: Match finished before the cancel", cfg.Discrepancy, cfg.Kernel)
		} else if !strings.Contains(err.Error(), "stage 1 costs") {
			t.Logf("%v/%v: the cancel came after Stage 1's pass: %v", cfg.Discrepancy, cfg.Kernel, err)
		}
		if err != nil && (!errors.Is(err, ErrCancelled) || m != nil) {
			t.Fatalf("%v/%v: got (%v, %v), want (nil, ErrCancelled)", cfg.Discrepancy, cfg.Kernel, m, err)
		}
		mon.Reset()
		got, err := Match(src, tgt, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Pairs, want.Pairs) || !slices.Equal(got.Quads, want.Quads) || !slices.Equal(got.Singles, want.Singles) ||
			math.Float64bits(got.Stage1Cost) != math.Float64bits(want.Stage1Cost) ||
			math.Float64bits(got.Stage2Cost) != math.Float64bits(want.Stage2Cost) ||
			math.Float64bits(got.Stage2Bound) != math.Float64bits(want.Stage2Bound) {
			t.Errorf("%v/%v: after a cancelled Match the results differ from an uncancelled one's", cfg.Discrepancy, cfg.Kernel)
		}
	}
}
