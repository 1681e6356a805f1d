package psda

import (
	"runtime/debug"
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
