package gram

import (
	"fmt"
	"sync/atomic"
)

// Micro-kernel shape: each call updates an mr×n block of a tile, n being
// the path's nr (float64) or nr32 (float32); maxNR bounds both.
const (
	mr    = 6
	maxNR = 32
)

// kernelPath is one implementation of the micro-kernels: the AVX-512 and
// AVX2/FMA assembly (kernels_amd64.go) and the portable Go, chosen at run
// time by what the CPU supports.
type kernelPath struct {
	name     string
	nr, nr32 int // micro-kernel widths, float64 and float32
	// k64 is the float64 micro-kernel; nil means gonum's Dgemm on
	// row-major tiles (the portable path: no Go micro-kernel beats it).
	k64 func(k int, a, b, c []float64, ldc int)
	k32 func(k int, a, b []float32, c []float64, ldc int)
}

// portable is the path without assembly, available everywhere.
var portable = &kernelPath{name: "portable", nr: 8, nr32: 16, k32: genericKernel[float32](16)}

// paths lists the paths this CPU supports, fastest first; Gram starts on
// the first.
var paths = append(archPaths(), portable)

var active atomic.Pointer[kernelPath]

func init() { active.Store(paths[0]) }

// Paths returns the names of the micro-kernel paths this CPU and build
// support, the one Gram uses by default first: some of "avx512", "avx2",
// and always "portable" (the only one with the noasm build tag).
func Paths() []string {
	names := make([]string, len(paths))
	for i, p := range paths {
		names[i] = p.name
	}
	return names
}

// ActivePath returns the name of the path Gram and Gram32 use now (one of
// Paths()). The RBF epilogue (psda/internal/rbf) reads it per row and takes
// its AVX-512 exponentials on "avx512" only, so that UsePath switches a
// whole pass and the path is chosen in one place.
func ActivePath() string { return active.Load().name }

// UsePath makes every later Gram and Gram32 call use the micro-kernel path
// name (one of Paths()) and returns the name of the path it replaces, so
// that tests and benchmarks can run each supported path in one process. It
// returns an error naming the supported paths when name is not one.
func UsePath(name string) (prev string, err error) {
	for _, p := range paths {
		if p.name == name {
			return active.Swap(p).name, nil
		}
	}
	return "", fmt.Errorf("gram: kernel path %q is not supported here: want one of %v", name, Paths())
}
