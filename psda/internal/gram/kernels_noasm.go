//go:build !amd64 || noasm

package gram

// UseFMA is false without the assembly: Gram then uses gonum's Dgemm and
// Gram32 the portable float32 micro-kernel.
const UseFMA = false

// archPaths returns no assembly path: only the portable one remains.
func archPaths() []*kernelPath { return nil }

// SqDiffs is SqDiffsGeneric without the assembly.
func SqDiffs[T float32 | float64](x, y []T) float64 { return SqDiffsGeneric(x, y) }
