//go:build !noasm

package rbf

import (
	"syscall"
	"testing"
	"unsafe"

	"github.com/psda-dev/psda/psda/internal/gram"
)

// TestExp512TailsAtPageEnd checks that the AVX-512 routines' tails read and
// write nothing past their slices: each slice ends at the end of a mapped
// page whose next page is not mapped (PROT_NONE), so that a full-width
// load or store of the last vector, where the opmask should hold it back,
// faults. The sentinels of guarded cannot see a read.
func TestExp512TailsAtPageEnd(t *testing.T) {
	if !gram.HasAVX512 {
		t.Skip("no AVX-512 on this CPU")
	}
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 6*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer syscall.Munmap(mem)
	// Pages 1, 3 and 5 are the guards after src, e and dst.
	for _, g := range []int{1, 3, 5} {
		if err := syscall.Mprotect(mem[g*page:(g+1)*page], syscall.PROT_NONE); err != nil {
			t.Skipf("mprotect: %v", err)
		}
	}
	floats := func(p int) []float64 { // page p as float64s
		return unsafe.Slice((*float64)(unsafe.Pointer(&mem[p*page])), page/8)
	}
	srcPage, ePage, dstPage := floats(0), floats(2), floats(4)
	for n := 1; n <= 17; n++ {
		src, e, dst := srcPage[len(srcPage)-n:], ePage[len(ePage)-n:], dstPage[len(dstPage)-n:]
		for i := range src {
			src[i], e[i], dst[i] = float64(i), 0.5, 1
		}
		expNegZ(dst, src, 0.1, true)
		expNegZ(dst, src, 0.1, false)
		powNegZ(dst, e, src, 0.1, 3)
	}
}
