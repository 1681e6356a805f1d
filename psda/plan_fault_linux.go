//go:build linux

package psda

import (
	"runtime"
	"syscall"
	"unsafe"

	"github.com/psda-dev/psda/psda/internal/par"
)

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14): map the pages of
// a range writable, as writes to them would, in one call.
const madvPopulateWrite = 23

// prefault maps the pages of c, a matrix its cost pass is about to write
// whole, ahead of the pass, on all cores, by madvise(MADV_POPULATE_WRITE)
// over chunks of 8 MiB: the kernel then faults the pages in a loop instead
// of taking one trap per page as the pass first touches it (a fresh
// P×P matrix, P = 20,000, is 780,000 pages: its faults cost as much as
// the Gram products of its pass, docs/performance.md "Stage 2 on
// imbalanced data"). The contents stay what they are (zero). Only whole
// pages inside c are advised. Errors (kernels before 5.14: EINVAL) are
// ignored: the pages then fault in as before.
func prefault(c []float64) {
	if len(c) == 0 {
		return
	}
	const chunk = 8 << 20 // a multiple of every page size
	// The kernel's page size, not 4 KiB: with 16 or 64 KiB pages (arm64,
	// ppc64le kernels), a start rounded to 4 KiB is seldom aligned and
	// every call would fail with EINVAL.
	page := uintptr(syscall.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(c)))
	lo, hi := (start+page-1)&^(page-1), (start+uintptr(len(c))*8)&^(page-1)
	if hi <= lo {
		return
	}
	n := int((hi - lo + chunk - 1) / chunk)
	par.For(n, func() func(int) {
		return func(k int) {
			a := lo + uintptr(k)*chunk
			syscall.Syscall(syscall.SYS_MADVISE, a, min(chunk, hi-a), madvPopulateWrite)
		}
	})
	runtime.KeepAlive(c) // the calls above hold only its address
}

// mmap is syscall.Mmap, a variable so that a test can make it fail and
// reach mapMatrix's fallback (TestStage2WhenMmapFails): an address-space
// limit made it fail only as long as the Go heap had room of its own, which
// its runtime does not promise.
var mmap = syscall.Mmap

// mapMatrix returns a zero matrix of n float64 for a cost pass that writes
// it whole, and the function that hands its memory back once the matrix is
// no longer used (the matrix must not be touched after it). From freeAbove
// entries on the matrix gets pages of its own (mmap), outside the Go heap,
// mapped ahead on all cores (prefault), and unmap returns them to the OS.
// A large slice from the Go heap (newMatrix) is zeroed by the runtime
// whenever any of its arenas was used before (a previous matrix, Stage 1's
// pages handed back between the stages): one goroutine then writes the
// whole matrix, taking every page fault itself before prefault could map
// them (in perf profiles of 20000 × 1000 matchings, about one run in two:
// 3 CPU s more for Stage 2's 3.2 GB, docs/performance.md). Fresh anonymous
// pages are zero, so a mapped matrix never needs that pass. A smaller
// matrix, or one where mmap fails, is newMatrix's, and unmap does nothing.
func mapMatrix(n int) (c []float64, unmap func()) {
	if n >= freeAbove {
		b, err := mmap(-1, 0, 8*n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err == nil {
			c = unsafe.Slice((*float64)(unsafe.Pointer(unsafe.SliceData(b))), n)
			prefault(c)
			return c, func() { syscall.Munmap(b) }
		}
	}
	return newMatrix(n, n), func() {}
}
