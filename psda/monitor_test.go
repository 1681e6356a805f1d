package psda

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/psda-dev/psda/psda/internal/testref"
)

func TestMonitorProgress(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		name   string
		ns, nt int
		cfg    Config
	}{
		{"rbf/imbalanced/2 stages", 300, 120, Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF}},
		{"linear/balanced/1 stage", 200, 200, Config{BatchSize: 4, Stages: 1, Discrepancy: MMD, Kernel: Linear}},
		{"coral/tall target/2 stages", 90, 250, Config{BatchSize: 4, Stages: 2, Discrepancy: CORAL}},
		{"sparse/rbf/imbalanced/2 stages", 300, 120, Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF, Solver: Sparse}},
		{"sparse/linear/balanced/2 stages", 200, 200, Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: Linear, Solver: Sparse}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, tgt := testref.RandMatrix(rng, tc.ns, 6, false), testref.RandMatrix(rng, tc.nt, 6, false)
			mon := &Monitor{}
			cfg := tc.cfg
			cfg.Monitor = mon
			// Poll from another goroutine while Match runs, as a progress bar does.
			stop := make(chan struct{})
			var seen []int64
			var phases []int
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					d, ph := mon.Progress()
					seen, phases = append(seen, d), append(phases, ph)
					select {
					case <-stop:
						return
					default:
						time.Sleep(50 * time.Microsecond)
					}
				}
			}()
			want, err := Match(src, tgt, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Match(src, tgt, cfg)
			close(stop)
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if got.Stage1Cost != want.Stage1Cost || got.Stage2Cost != want.Stage2Cost {
				t.Errorf("with a Monitor: costs %v, %v; without: %v, %v", got.Stage1Cost, got.Stage2Cost, want.Stage1Cost, want.Stage2Cost)
			}
			for i := 1; i < len(seen); i++ {
				if seen[i] < seen[i-1] || phases[i] < phases[i-1] && phases[i] != PhaseIdle {
					t.Fatalf("progress went back: (%d, phase %d) after (%d, phase %d)", seen[i], phases[i], seen[i-1], phases[i-1])
				}
			}
			if d, ph := mon.Progress(); d != ProgressTotal || ph != PhaseDone {
				t.Errorf("after Match: progress (%d, phase %d), want (%d, %d)", d, ph, ProgressTotal, PhaseDone)
			}
		})
	}
}

func TestMonitorCancel(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	src, tgt := testref.RandMatrix(rng, 1500, 16, true), testref.RandMatrix(rng, 1400, 16, true)
	cfg := Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF, Monitor: &Monitor{}}

	// Cancel from another goroutine at several points of the run, on both
	// paths: every phase must notice within a short time.
	for _, run := range []struct {
		solver string
		after  time.Duration
	}{{Dense, 0}, {Dense, 5 * time.Millisecond}, {Dense, 50 * time.Millisecond}, {Dense, 200 * time.Millisecond},
		{Sparse, 5 * time.Millisecond}, {Sparse, 100 * time.Millisecond}, {Sparse, 300 * time.Millisecond}} {
		after := run.after
		cfg.Solver = run.solver
		cfg.Monitor.Reset()
		var at time.Time
		timer := time.AfterFunc(after, func() { at = time.Now(); cfg.Monitor.Cancel() })
		m, err := Match(src, tgt, cfg)
		end := time.Now()
		timer.Stop()
		if err == nil {
			// The run finished before the cancel: nothing to check.
			t.Logf("%s, cancel after %v: Match finished first", cfg.Solver, after)
			continue
		}
		if !errors.Is(err, ErrCancelled) || m != nil {
			t.Fatalf("%s, cancel after %v: got (%v, %v), want (nil, ErrCancelled)", cfg.Solver, after, m, err)
		}
		if lag := end.Sub(at); lag > time.Second {
			t.Errorf("%s, cancel after %v: Match returned %v after the cancel", cfg.Solver, after, lag)
		}
	}
	// A cancel with no Match running stops the next one; Reset clears it.
	cfg.Monitor.Reset()
	cfg.Monitor.Cancel()
	if _, err := Match(src, tgt, cfg); !errors.Is(err, ErrCancelled) {
		t.Errorf("pending cancel: err = %v, want ErrCancelled", err)
	}
	cfg.Monitor.Reset()
	small := Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF, Monitor: cfg.Monitor}
	if _, err := Match(testref.RandMatrix(rng, 40, 3, false), testref.RandMatrix(rng, 30, 3, false), small); err != nil {
		t.Errorf("after Reset: %v", err)
	}
}

// A cancel pending when Stage 2 starts (it came during Stage 1's last
// steps) stops Stage 2 before its P×P matrix is allocated and its pages
// mapped, not after. Where the matrix takes pages outside the Go heap
// (Linux, mapMatrix), which TotalAlloc does not count,
// TestStage2CancelledBeforeItsPages counts them.
func TestStage2CancelledBeforeItsMatrix(t *testing.T) {
	var before, after runtime.MemStats
	p := stage2CancelPending(t, func(run func()) {
		runtime.ReadMemStats(&before)
		run()
		runtime.ReadMemStats(&after)
	})
	if got := after.TotalAlloc - before.TotalAlloc; got >= uint64(8*p*p/2) {
		t.Fatalf("stage2 with a pending cancel allocated %d bytes, want far less than its %d-byte matrix", got, 8*p*p)
	}
}

// stage2CancelPending runs Stage 2 on p = 3000 pairs (9·10⁶ entries: a
// matrix whose pages are mapped ahead) with a cancel already pending, inside
// around so that the caller can measure the run alone, checks that it
// returned ErrCancelled, and returns p.
func stage2CancelPending(t *testing.T, around func(run func())) int {
	t.Helper()
	rng := rand.New(rand.NewPCG(4, 4))
	const p = 3000
	src, tgt := testref.RandMatrix(rng, p, 4, true), testref.RandMatrix(rng, p, 4, true)
	m := &Matching{Pairs: make([]Pair, p)}
	for i := range m.Pairs {
		m.Pairs[i] = Pair{S: i, T: i}
	}
	cfg := Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF, Monitor: &Monitor{}}
	cfg.Monitor.Cancel()
	var err error
	around(func() { err = defaultPlan().stage2(src, tgt, cfg, m) })
	if !errors.Is(err, ErrCancelled) {
		t.Fatalf("stage2 with a pending cancel: err = %v, want ErrCancelled", err)
	}
	return p
}
