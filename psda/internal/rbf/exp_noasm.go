//go:build !amd64 || noasm

package rbf

// expNeg is expNegGeneric on platforms without the AVX2 version.
func expNeg(dst, src []float64, gamma float64, acc bool) { expNegGeneric(dst, src, gamma, acc) }

// powNeg is powNegGeneric on platforms without the AVX2 version.
func powNeg(dst, e, src []float64, gamma float64, m int) { powNegGeneric(dst, e, src, gamma, m) }
