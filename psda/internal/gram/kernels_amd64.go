//go:build !noasm

package gram

// UseFMA reports whether the CPU and OS support AVX2 and FMA3 (with the YMM
// state saved by the OS), which the assembly micro-kernel needs.
var UseFMA = func() bool {
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
	if !UseFMA {
		microKernelGeneric(k, a, b, c, ldc)
		return
	}
	// Bounds checks once per call keep the assembly memory-safe.
	_, _, _ = a[k*mr-1], b[k*nr-1], c[(mr-1)*ldc+nr-1]
	kern6x8(k, &a[0], &b[0], &c[0], ldc)
}

// microKernel32 updates c[i*ldc+j] += Σ_p a[p*mr+i]·b[p*nr32+j] for the
// mr×nr32 block at c, summed in float32 (with the AVX2/FMA kernel when the CPU
// has it) and added to c in float64.
func microKernel32(k int, a, b []float32, c []float64, ldc int) {
	if !UseFMA {
		microKernelGeneric(k, a, b, c, ldc)
		return
	}
	_, _, _ = a[k*mr-1], b[k*nr32-1], c[(mr-1)*ldc+nr32-1]
	kern6x16(k, &a[0], &b[0], &c[0], ldc)
}

// kern6x8 is microKernel in AVX2/FMA assembly; k >= 1.
//
//go:noescape
func kern6x8(k int, a, b, c *float64, ldc int)

// kern6x16 is microKernel32 in AVX2/FMA assembly; k >= 1.
//
//go:noescape
func kern6x16(k int, a, b *float32, c *float64, ldc int)

func cpuid(eax, ecx uint32) (a, b, c, d uint32)

func xgetbv() (eax, edx uint32)

// SqDiffs returns Σ_k (x[k] − y[k])² over len(x) == len(y) elements in
// float64, with AVX2 for the multiple-of-8 head when the CPU has it; the
// result is bit-identical to SqDiffsGeneric's.
func SqDiffs[T float32 | float64](x, y []T) float64 {
	n8 := len(x) &^ 7
	if !UseFMA || n8 == 0 {
		return SqDiffsGeneric(x, y)
	}
	_ = y[len(x)-1]
	var s [4]float64
	switch x := any(x).(type) {
	case []float64:
		sqDiff64(&x[0], &any(y).([]float64)[0], n8, &s)
	case []float32:
		sqDiff32(&x[0], &any(y).([]float32)[0], n8, &s)
	}
	return foldSqDiffs(s, x[n8:], y[n8:len(x)])
}

// sqDiff64 is SqDiffsGeneric's head in AVX2 assembly; n % 8 == 0, n >= 8.
//
//go:noescape
func sqDiff64(x, y *float64, n int, s *[4]float64)

// sqDiff32 is sqDiff64 on float32 inputs.
//
//go:noescape
func sqDiff32(x, y *float32, n int, s *[4]float64)
