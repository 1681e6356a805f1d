package psda

import (
	"runtime/debug"
	"syscall"
	"testing"
	"unsafe"
)

// TestPrefaultMaps checks that prefault maps every whole page of a fresh
// matrix (mincore(2) reports it resident), its pages having been handed
// back to the OS just before it was allocated.
func TestPrefaultMaps(t *testing.T) {
	debug.FreeOSMemory()
	c := make([]float64, 16<<20) // 128 MiB
	const page = 4096
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
