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

// HasAVX512 reports whether the CPU and OS support AVX-512F (with the ZMM
// and opmask state saved by the OS) besides AVX2/FMA: the 6×16 and 6×32
// micro-kernels need it.
var HasAVX512 = func() bool {
	if !UseFMA {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&0xe6 != 0xe6 { // YMM, opmask, ZMM0-15 upper, ZMM16-31
		return false
	}
	_, b7, _, _ := cpuid(7, 0)
	return b7&(1<<16) != 0 // AVX512F
}()

// archPaths returns the assembly paths this CPU supports, fastest first.
func archPaths() []*kernelPath {
	var ps []*kernelPath
	if HasAVX512 {
		ps = append(ps, &kernelPath{name: "avx512", nr: 16, nr32: 32, k64: microKernel512, k32: microKernel32x512})
	}
	if UseFMA {
		ps = append(ps, &kernelPath{name: "avx2", nr: 8, nr32: 16, k64: microKernel, k32: microKernel32})
	}
	return ps
}

// microKernel512 is microKernel with the AVX-512 kernel, 6×16.
func microKernel512(k int, a, b, c []float64, ldc int) {
	_, _, _ = a[k*mr-1], b[k*16-1], c[(mr-1)*ldc+15]
	kern6x16z(k, &a[0], &b[0], &c[0], ldc)
}

// microKernel32x512 is microKernel32 with the AVX-512 kernel, 6×32.
func microKernel32x512(k int, a, b []float32, c []float64, ldc int) {
	_, _, _ = a[k*mr-1], b[k*32-1], c[(mr-1)*ldc+31]
	kern6x32z(k, &a[0], &b[0], &c[0], ldc)
}

// kern6x16z is microKernel512 in AVX-512 assembly; k >= 1.
//
//go:noescape
func kern6x16z(k int, a, b, c *float64, ldc int)

// kern6x32z is microKernel32x512 in AVX-512 assembly; k >= 1.
//
//go:noescape
func kern6x32z(k int, a, b *float32, c *float64, ldc int)

// microKernel updates c[i*ldc+j] += Σ_p a[p*mr+i]·b[p*8+j] for the mr×8
// block at c with the AVX2/FMA kernel; only on CPUs that have it.
func microKernel(k int, a, b, c []float64, ldc int) {
	// Bounds checks once per call keep the assembly memory-safe.
	_, _, _ = a[k*mr-1], b[k*8-1], c[(mr-1)*ldc+7]
	kern6x8(k, &a[0], &b[0], &c[0], ldc)
}

// microKernel32 updates c[i*ldc+j] += Σ_p a[p*mr+i]·b[p*16+j] for the
// mr×16 block at c, summed in float32 with the AVX2/FMA kernel and added to
// c in float64; only on CPUs that have it.
func microKernel32(k int, a, b []float32, c []float64, ldc int) {
	_, _, _ = a[k*mr-1], b[k*16-1], c[(mr-1)*ldc+15]
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
