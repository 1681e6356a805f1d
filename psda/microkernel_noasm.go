//go:build !amd64 || noasm

package psda

// microKernel is the portable micro-kernel on platforms without the AVX2
// version (or with the noasm build tag).
func microKernel(k int, a, b, c []float64, ldc int) { microKernelGeneric(k, a, b, c, ldc) }

// expNeg is expNegGeneric on platforms without the AVX2 version.
func expNeg(dst, src []float64, gamma float64, acc bool) { expNegGeneric(dst, src, gamma, acc) }

// vectorExp reports whether expNeg is a fast vector version.
const vectorExp = false
