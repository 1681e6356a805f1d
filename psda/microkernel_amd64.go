//go:build !noasm

package psda

// useFMA reports whether the CPU and OS support AVX2 and FMA3 (with the YMM
// state saved by the OS), which the assembly micro-kernel needs.
var useFMA = func() bool {
	_, _, c1, _ := cpuid(1, 0)
	const fma, osxsave, avx = 1 << 12, 1 << 27, 1 << 28
	if c1&(fma|osxsave|avx) != fma|osxsave|avx {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&6 != 6 {
		return false
	}
	_, b7, _, _ := cpuid(7, 0)
	return b7&(1<<5) != 0 // AVX2
}()

// microKernel updates c[i*ldc+j] += Σ_p a[p*mr+i]·b[p*nr+j] for the mr×nr
// block at c, with the AVX2/FMA kernel when the CPU has it.
func microKernel(k int, a, b, c []float64, ldc int) {
	if !useFMA {
		microKernelGeneric(k, a, b, c, ldc)
		return
	}
	// Bounds checks once per call keep the assembly memory-safe.
	_, _, _ = a[k*mr-1], b[k*nr-1], c[(mr-1)*ldc+nr-1]
	kern6x8(k, &a[0], &b[0], &c[0], ldc)
}

// kern6x8 is microKernel in AVX2/FMA assembly; k >= 1.
//
//go:noescape
func kern6x8(k int, a, b, c *float64, ldc int)

func cpuid(eax, ecx uint32) (a, b, c, d uint32)

func xgetbv() (eax, edx uint32)
