package psda

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"syscall"
	"testing"
	"unsafe"
)

// TestPrefaultMaps checks that prefault maps every whole page of a fresh
// matrix (mincore(2) reports it resident), its pages having been handed
// back to the OS just before it was allocated. On a kernel without
// MADV_POPULATE_WRITE (before 5.14), where prefault leaves the pages to
// fault in as before, it is skipped.
func TestPrefaultMaps(t *testing.T) {
	if !populateWriteWorks(t) {
		t.Skip("this kernel lacks MADV_POPULATE_WRITE (Linux 5.14): prefault maps nothing ahead")
	}
	debug.FreeOSMemory()
	c := make([]float64, 16<<20) // 128 MiB
	page := uintptr(syscall.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(c)))
	lo, hi := (start+page-1)&^(page-1), (start+uintptr(len(c))*8)&^(page-1)
	resident := func() int {
		vec := make([]byte, (hi-lo)/page)
		if _, _, e := syscall.Syscall(syscall.SYS_MINCORE, lo, hi-lo, uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
			t.Fatalf("mincore: %v", e)
		}
		n := 0
		for _, v := range vec {
			n += int(v & 1)
		}
		return n
	}
	before := resident()
	prefault(c)
	if after, all := resident(), int((hi-lo)/page); after != all {
		t.Fatalf("%d of %d pages resident after prefault (%d before)", after, all, before)
	} else {
		t.Logf("%d of %d pages resident before prefault, all after", before, all)
	}
}

// populateWriteWorks reports whether madvise(MADV_POPULATE_WRITE) works
// on a fresh anonymous page; EINVAL means the kernel does not know it.
func populateWriteWorks(t *testing.T) bool {
	page := syscall.Getpagesize()
	b, err := syscall.Mmap(-1, 0, page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap of one page: %v", err)
	}
	defer syscall.Munmap(b)
	_, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(unsafe.Pointer(&b[0])), uintptr(page), madvPopulateWrite)
	if e != 0 && e != syscall.EINVAL {
		t.Fatalf("madvise(MADV_POPULATE_WRITE) of a fresh page: %v", e)
	}
	return e == 0
}

// TestMapMatrix checks mapMatrix's large matrix: zero, of the length asked,
// outside the Go heap (the heap's objects do not grow by it: a slice from
// make, which the runtime may zero on one goroutine, would fail), its pages
// resident once returned (where MADV_POPULATE_WRITE works), writable, and
// unmapped by unmap (mincore(2) then fails with ENOMEM). A small matrix
// comes from the heap.
func TestMapMatrix(t *testing.T) {
	heapObjects := func() uint64 {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	const n = 16 << 20 // 128 MiB
	runtime.GC()
	before := heapObjects()
	c, unmap := mapMatrix(n)
	if grew := int64(heapObjects()) - int64(before); grew >= 8*n/2 {
		t.Errorf("the heap's objects grew by %d bytes with a mapped matrix of %d bytes: want it outside the heap", grew, 8*n)
	}
	if len(c) != n {
		t.Fatalf("len = %d, want %d", len(c), n)
	}
	for i, v := range c {
		if v != 0 {
			t.Fatalf("entry %d of a mapped matrix is %v, want 0", i, v)
		}
	}
	page := uintptr(syscall.Getpagesize())
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(c)))
	vec := make([]byte, (8*n+page-1)/page)
	mincore := func() syscall.Errno {
		_, _, e := syscall.Syscall(syscall.SYS_MINCORE, lo, 8*n, uintptr(unsafe.Pointer(&vec[0])))
		return e
	}
	if populateWriteWorks(t) {
		if e := mincore(); e != 0 {
			t.Fatalf("mincore: %v", e)
		}
		for k, v := range vec {
			if v&1 == 0 {
				t.Fatalf("page %d of %d of a mapped matrix is not resident", k, len(vec))
			}
		}
	}
	for i := range c {
		c[i] = float64(i)
	}
	if c[n-1] != n-1 {
		t.Fatalf("last entry %v after writing, want %v", c[n-1], n-1)
	}
	unmap()
	if e := mincore(); e != syscall.ENOMEM {
		t.Errorf("mincore after unmap: %v, want ENOMEM (unmapped)", e)
	}

	small, unmapSmall := mapMatrix(10)
	if len(small) != 10 {
		t.Fatalf("small matrix: len = %d, want 10", len(small))
	}
	unmapSmall() // the collector's
}

// TestStage2CancelledBeforeItsPages is TestStage2CancelledBeforeItsMatrix
// for the pages Stage 2 maps outside the Go heap (mapMatrix), which the
// heap's statistics do not see: a cancel pending when Stage 2 starts must
// leave its P×P matrix unmapped, so the process takes far fewer minor page
// faults (prefault's count as such) than the matrix has pages.
func TestStage2CancelledBeforeItsPages(t *testing.T) {
	if !populateWriteWorks(t) {
		t.Skip("this kernel lacks MADV_POPULATE_WRITE (Linux 5.14): no pages are mapped ahead")
	}
	var before, after syscall.Rusage
	p := stage2CancelPending(t, func(run func()) { // a matrix mapMatrix maps
		syscall.Getrusage(syscall.RUSAGE_SELF, &before)
		run()
		syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	})
	pages := int64(8 * p * p / syscall.Getpagesize())
	if got := after.Minflt - before.Minflt; got >= pages/2 {
		t.Fatalf("stage2 with a pending cancel took %d minor page faults, want far fewer than its matrix's %d pages", got, pages)
	}
}
