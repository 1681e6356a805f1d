//go:build !amd64 || noasm

package psda

// useFMA is false without the assembly: gram then uses gonum's Dgemm and
// gram32 the portable float32 micro-kernel.
const useFMA = false

// microKernel is the portable micro-kernel (unused by gram without the
// assembly; kept as the reference the tests compare the assembly with).
func microKernel(k int, a, b, c []float64, ldc int) { microKernelGeneric(k, a, b, c, ldc) }

// microKernel32 is the portable float32 micro-kernel, which gram32 uses
// without the assembly.
func microKernel32(k int, a, b []float32, c []float64, ldc int) { microKernelGeneric(k, a, b, c, ldc) }

// expNeg is expNegGeneric on platforms without the AVX2 version.
func expNeg(dst, src []float64, gamma float64, acc bool) { expNegGeneric(dst, src, gamma, acc) }

// powNeg is powNegGeneric on platforms without the AVX2 version.
func powNeg(dst, e, src []float64, gamma float64, m int) { powNegGeneric(dst, e, src, gamma, m) }

// sqDiffs is sqDiffsGeneric without the assembly.
func sqDiffs[T float32 | float64](x, y []T) float64 { return sqDiffsGeneric(x, y) }
