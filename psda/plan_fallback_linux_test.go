package psda

import (
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"syscall"
	"testing"

	"github.com/psda-dev/psda/psda/internal/testref"
)

// TestStage2WhenMmapFails checks mapMatrix's fallback: where mmap fails (here
// an address-space limit, RLIMIT_AS, that leaves no room for a new mapping
// but lets the Go heap reuse pages it already has) Stage 2 runs on a matrix
// from the heap and returns the same bits as with a mapped one. It runs in
// a child process, whose limit the test's own process need not share.
func TestStage2WhenMmapFails(t *testing.T) {
	if testing.Short() && os.Getenv(childEnv) == "" {
		t.Skip("a child process matching 4000 × 400 rows")
	}
	inChild(t, stage2UnderLimit)
}

// stage2UnderLimit is TestStage2WhenMmapFails' child.
func stage2UnderLimit(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	// P² >= freeAbove: mapMatrix maps; the matrix (8·P² bytes, 128 MB)
	// larger than the 64 MB heap arena the runtime may reserve meanwhile.
	const ns, nt = 4000, 400
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
	// A heap slice as large as the matrix, now garbage: the heap keeps its
	// address space, which the fallback's make reuses.
	n := ns * ns
	heap := make([]float64, n)
	heap[n-1] = 1
	heap = nil
	runtime.GC()
	vm := procKB("/proc/self/status", "VmSize:") << 10
	// Room for one more heap arena (the runtime's small allocations; with
	// half the matrix's bytes, 23 MB at P = 2400, it ran out now and then)
	// but not for the matrix's own mapping.
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: uint64(vm + 7*int64(n)), Max: ^uint64(0)}); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	if b, err := syscall.Mmap(-1, 0, 8*n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE); err == nil {
		syscall.Munmap(b)
		t.Fatal("mmap of the matrix's bytes succeeded under the limit: the fallback is not exercised")
	}
	got := run() // mapMatrix falls back to newMatrix
	if !slices.Equal(got.Quads, want.Quads) || !slices.Equal(got.Singles, want.Singles) ||
		got.Stage2Cost != want.Stage2Cost || got.Stage2Bound != want.Stage2Bound {
		t.Fatalf("Stage 2 on the fallback's heap matrix: cost %v bound %v, on a mapped one %v %v (or other quadruplets)",
			got.Stage2Cost, got.Stage2Bound, want.Stage2Cost, want.Stage2Bound)
	}
	t.Logf("same quadruplets and bits with mmap failing")
}
