package psda

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/psda-dev/psda/psda/internal/testref"
)

// TestMatchAfterMatchSeesFreedPages checks that a Match started right after
// one whose Stage 2 matrix was mapped (mapMatrix) does not see that
// matrix's pages as still in use when it checks its memory: under an
// address-space limit (RLIMIT_AS, `ulimit -v`) with room for one Stage 2
// matrix and checkMemory's margin but not for two, two Matches in a row
// must both succeed (the second used to be refused while the first's
// unmap was pending). It runs in a child process, whose limit the test's
// own process need not share.
func TestMatchAfterMatchSeesFreedPages(t *testing.T) {
	if testing.Short() && os.Getenv(childEnv) == "" {
		t.Skip("a child process matching 4000 × 400 rows three times")
	}
	inChild(t, matchTwiceUnderLimit)
}

// childEnv marks a test binary run by inChild.
const childEnv = "PSDA_TEST_CHILD"

// inChild runs body in a child process (this test binary, running only the
// calling test), whose resource limits the test's own process need not
// share, and fails t unless the child's test passes.
func inChild(t *testing.T, body func(t *testing.T)) {
	t.Helper()
	if os.Getenv(childEnv) == t.Name() {
		body(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v")
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child: %v", err)
	}
}

// matchTwiceUnderLimit is TestMatchAfterMatchSeesFreedPages' child.
func matchTwiceUnderLimit(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const ns, nt = 4000, 400 // Stage 2: 4000² float64 = 128 MB, mapped
	src, tgt := testref.RandMatrix(rng, ns, 4, false), testref.RandMatrix(rng, nt, 4, false)
	cfg := Config{BatchSize: 4, Stages: 2, Discrepancy: MMD, Kernel: RBF, Solver: Dense}
	// A first Match grows the Go heap to what the next ones need, so that
	// the limit below binds on the mapped matrices only.
	if _, err := Match(src, tgt, cfg); err != nil {
		t.Fatal(err)
	}
	waitUnmaps()
	runtime.GC()
	_, s2 := stageBytes(ns, nt)
	vm := procKB("/proc/self/status", "VmSize:") << 10
	// One matrix and checkMemory's eighth, not two; and a heap arena
	// (64 MiB on 64-bit Linux: the Go runtime reserves address space in
	// those), which a Match may still add after the first one's heap
	// (1 run in 5 did: "157 MB of address space is left" for 174 MB). A
	// second Match that counted the first's matrix as used would see
	// at most 0.75·s2 + 64 MiB = 160 MB left.
	lim := uint64(vm + s2 + s2*3/4 + 64<<20)
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: lim, Max: ^uint64(0)}); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	for k := range 2 {
		start := time.Now()
		if _, err := Match(src, tgt, cfg); err != nil {
			t.Fatalf("Match %d of two in a row: %v", k+1, err)
		}
		t.Logf("Match %d: %v", k+1, time.Since(start))
	}
	start := time.Now()
	waitUnmaps()
	t.Logf("then the unmap took %v more", time.Since(start))
}
