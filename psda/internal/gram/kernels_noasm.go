//go:build !amd64 || noasm

package gram

// UseFMA is false without the assembly: Gram then uses gonum's Dgemm and
// Gram32 the portable float32 micro-kernel.
const UseFMA = false

// microKernel is the portable micro-kernel (unused by Gram without the
// assembly; kept as the reference the tests compare the assembly with).
func microKernel(k int, a, b, c []float64, ldc int) { microKernelGeneric(k, a, b, c, ldc) }

// microKernel32 is the portable float32 micro-kernel, which Gram32 uses
// without the assembly.
func microKernel32(k int, a, b []float32, c []float64, ldc int) { microKernelGeneric(k, a, b, c, ldc) }

// SqDiffs is SqDiffsGeneric without the assembly.
func SqDiffs[T float32 | float64](x, y []T) float64 { return SqDiffsGeneric(x, y) }
