package psda

import (
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"

	"github.com/psda-dev/psda/psda/internal/testref"
)

// TestStage2WhenMmapFails checks mapMatrix's fallback: where mmap fails
// (ENOMEM, as under an address-space limit) Stage 2 runs on a matrix from
// the heap and returns the same bits as with a mapped one. The failure is
// mmap's own (the variable mapMatrix calls): an RLIMIT_AS that refused the
// mapping had also to leave the Go heap room for the matrix, which the
// runtime's arenas gave only now and then (CI failed 1 run in 4).
func TestStage2WhenMmapFails(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const ns, nt = 2048, 200 // P² = freeAbove: mapMatrix maps
	src, tgt := testref.RandMatrix(rng, ns, 4, false), testref.RandMatrix(rng, nt, 4, false)
	cfg := Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF, Solver: Dense}
	c1 := cfg
	c1.Stages = 1
	m1, err := Match(src, tgt, c1)
	if err != nil {
		t.Fatal(err)
	}
	run := func() *Matching {
		m := &Matching{Pairs: slices.Clone(m1.Pairs)}
		if err := defaultPlan().stage2(src, tgt, cfg, m); err != nil {
			t.Fatal(err)
		}
		waitUnmaps()
		return m
	}
	want := run() // on a mapped matrix
	calls := 0
	mmap = func(int, int64, int, int, int) ([]byte, error) {
		calls++
		return nil, syscall.ENOMEM
	}
	defer func() { mmap = syscall.Mmap }()
	got := run() // mapMatrix falls back to newMatrix
	if calls == 0 {
		t.Fatal("Stage 2 did not ask for a mapping: the fallback is not exercised")
	}
	if !slices.Equal(got.Quads, want.Quads) || !slices.Equal(got.Singles, want.Singles) ||
		got.Stage2Cost != want.Stage2Cost || got.Stage2Bound != want.Stage2Bound {
		t.Fatalf("Stage 2 on the fallback's heap matrix: cost %v bound %v, on a mapped one %v %v (or other quadruplets)",
			got.Stage2Cost, got.Stage2Bound, want.Stage2Cost, want.Stage2Bound)
	}
}
