package psda

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/psda-dev/psda/psda/internal/testref"
)

// TestStage2MappedCancelStress cancels Matches whose Stage 2 matrix is
// mapped outside the Go heap (mapMatrix: dense, imbalanced, P² >=
// freeAbove) at random points of Stage 2's cost pass and matching, many
// times, and checks that each returns ErrCancelled or the uncancelled
// result, that no goroutine outlives it once its matrix is unmapped (one
// still touching the matrix would fault, SIGSEGV, and end the process), and
// that a Match after all these returns the same result: a stale goroutine
// writing into a later matrix mapped at the same address would change it.
// Run it with -race too.
func TestStage2MappedCancelStress(t *testing.T) {
	if testing.Short() {
		t.Skip("dozens of matchings of 2400 × 300 rows")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	const ns, nt = 2400, 300 // P² = 5.76·10⁶ >= freeAbove: mapped
	if ns*ns < freeAbove {
		t.Fatalf("P² = %d < freeAbove = %d: the matrix would not be mapped", ns*ns, freeAbove)
	}
	src, tgt := testref.RandMatrix(rng, ns, 4, false), testref.RandMatrix(rng, nt, 4, false)
	cfg := Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF, Solver: Dense}
	if s1, s2 := SparseStages(src, tgt, cfg); s1 || s2 {
		t.Fatal("want both stages dense")
	}
	want, err := Match(src, tgt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitUnmaps()
	goroutines := runtime.NumGoroutine()
	same := func(m *Matching) bool {
		return slices.Equal(m.Pairs, want.Pairs) && slices.Equal(m.Quads, want.Quads) &&
			slices.Equal(m.Singles, want.Singles) && m.Stage2Cost == want.Stage2Cost &&
			m.Stage1Cost == want.Stage1Cost && m.Stage2Bound == want.Stage2Bound
	}
	iters := 120
	if raceEnabled {
		iters = 30
	}
	hit := map[int]int{}
	for k := range iters {
		target := PhaseStage2Costs + k%2 // the cost pass, then the matching
		mon := &Monitor{}
		c := cfg
		c.Monitor = mon
		done := make(chan struct{})
		var got *Matching
		var err error
		go func() {
			defer close(done)
			got, err = Match(src, tgt, c)
		}()
		// Up to about the length of the phase at this size (the matching
		// takes some 0.2 s, the cost pass less; -race slows both down).
		delay := time.Duration(rng.Int64N(int64(30*time.Millisecond) * int64(1+4*(k%2))))
	wait:
		for {
			select {
			case <-done:
				break wait
			default:
			}
			if _, ph := mon.Progress(); ph >= target {
				time.Sleep(delay)
				_, ph = mon.Progress()
				mon.Cancel()
				hit[ph]++
				<-done
				break
			}
			time.Sleep(50 * time.Microsecond)
		}
		switch {
		case errors.Is(err, ErrCancelled):
		case err != nil:
			t.Fatalf("run %d: %v", k, err)
		case !same(got):
			t.Fatalf("run %d: a Match cancelled too late differs from the uncancelled one", k)
		}
		waitUnmaps()
		// The unmap's goroutine ends just after it releases unmapping.
		for end := time.Now().Add(time.Second); runtime.NumGoroutine() > goroutines && time.Now().Before(end); {
			time.Sleep(time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > goroutines {
			t.Fatalf("run %d: %d goroutines once Match returned and its matrix was unmapped, %d before", k, n, goroutines)
		}
	}
	t.Logf("cancels by phase (3: Stage 2 costs, 4: Stage 2 matching, 5: done): %v", hit)
	if hit[PhaseStage2Costs] == 0 || hit[PhaseStage2Match] == 0 {
		t.Errorf("cancels by phase %v: want some in Stage 2's costs and some in its matching", hit)
	}
	again, err := Match(src, tgt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !same(again) {
		t.Fatal("a Match after the cancelled ones differs from the first")
	}
}

// TestMappedMatchesConcurrent runs Matches with mapped Stage 2 matrices on
// two goroutines at once (a user's loop beside the refresher's thread):
// each must return the result of a Match alone, and neither may block or
// panic on the other's pending unmap (stage2's unmapping, which a Match's
// memory check waits for).
func TestMappedMatchesConcurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("a dozen matchings of 2400 × 300 rows")
	}
	rng := rand.New(rand.NewPCG(13, 14))
	const ns, nt = 2400, 300 // P² >= freeAbove: mapped
	src, tgt := testref.RandMatrix(rng, ns, 4, false), testref.RandMatrix(rng, nt, 4, false)
	cfg := Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF, Solver: Dense}
	want, err := Match(src, tgt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			for range 6 {
				got, err := Match(src, tgt, cfg)
				if err == nil && (!slices.Equal(got.Quads, want.Quads) || got.Stage2Cost != want.Stage2Cost) {
					err = errors.New("a Match beside another differs from one alone")
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestWaitUnmapsBesideStage2 checks that a Match starting beside another's
// Stage 2 waits only for unmaps under way, not for that Stage 2: its
// memory check (waitUnmaps) returns while the other matching still runs.
func TestWaitUnmapsBesideStage2(t *testing.T) {
	if testing.Short() {
		t.Skip("matchings of 4000 × 400 rows")
	}
	rng := rand.New(rand.NewPCG(15, 16))
	const ns, nt = 4000, 400 // P² >= freeAbove: mapped
	src, tgt := testref.RandMatrix(rng, ns, 4, false), testref.RandMatrix(rng, nt, 4, false)
	for try := 0; try < 5; try++ {
		mon := &Monitor{}
		cfg := Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF, Solver: Dense, Monitor: mon}
		done := make(chan error, 1)
		go func() {
			_, err := Match(src, tgt, cfg)
			done <- err
		}()
		for {
			if _, ph := mon.Progress(); ph >= PhaseStage2Match { // its matrix allocated
				break
			}
			time.Sleep(time.Millisecond)
		}
		waitUnmaps()
		_, ph := mon.Progress()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if ph == PhaseStage2Match {
			return // waited for nothing the other Match held
		}
		if ph != PhaseDone {
			t.Fatalf("phase %d after waitUnmaps", ph)
		}
	}
	t.Fatal("waitUnmaps returned only after the other Match had finished, five times in a row: it waits for a Stage 2 in progress")
}
