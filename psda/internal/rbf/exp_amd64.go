//go:build !noasm

package rbf

import "github.com/psda-dev/psda/psda/internal/gram"

// The exponentials follow the Gram engine's active micro-kernel path
// (gram.ActivePath, read once per row): the AVX-512 routines on "avx512",
// the AVX2 ones otherwise (also on "portable", whose Gram differs from the
// FMA paths anyway). Both give the same bits lane by lane, so the choice
// changes the speed only; gram.UsePath switches a whole pass, and the tests
// that run each path exercise both.

// use512 reports whether the AVX-512 routines are to be used now.
func use512() bool { return gram.HasAVX512 && gram.ActivePath() == "avx512" }

// expNeg sets dst[i] = exp(−gamma·src[i]) (adds it with acc) for
// src[i] >= 0, with 0 for the exp where gamma·src[i] > expUnderflow; with
// AVX-512 or AVX2/FMA (within 2 ulps, see exp_amd64.s) when the CPU has
// them.
func expNeg(dst, src []float64, gamma float64, acc bool) {
	switch {
	case !gram.UseFMA:
		expNegGeneric(dst, src, gamma, acc)
	case use512():
		expNegZ(dst, src, gamma, acc)
	default:
		expNegY(dst, src, gamma, acc)
	}
}

// expNegY is expNeg with AVX2, four lanes at a time, padding the tail so
// every element takes the same path.
func expNegY(dst, src []float64, gamma float64, acc bool) {
	if len(src) == 0 {
		return
	}
	_ = dst[len(src)-1]
	n := len(src) &^ 3
	if n > 0 {
		expNegAVX2(&dst[0], &src[0], n, gamma, acc)
	}
	if n < len(src) {
		var a, b [4]float64
		copy(a[:], src[n:])
		copy(b[:], dst[n:len(src)])
		expNegAVX2(&b[0], &a[0], 4, gamma, acc)
		copy(dst[n:len(src)], b[:])
	}
}

// expNegZ is expNeg with AVX-512, eight lanes at a time and the tail under
// an opmask; bit-identical to expNegY.
func expNegZ(dst, src []float64, gamma float64, acc bool) {
	if len(src) == 0 {
		return
	}
	_ = dst[len(src)-1]
	expNeg512(&dst[0], &src[0], len(src), gamma, acc)
}

// powNeg sets e[i] = e[i]^m and adds it to dst[i], with 0 where
// gamma·src[i] > expUnderflow: the next term exp(−γ·D) = exp(−(γ/m)·D)^m of
// a power chain of the RBF mixture; with AVX-512 or AVX2 when the CPU has
// them, bit-identical to powNegGeneric.
func powNeg(dst, e, src []float64, gamma float64, m int) {
	switch {
	case !gram.UseFMA:
		powNegGeneric(dst, e, src, gamma, m)
	case use512():
		powNegZ(dst, e, src, gamma, m)
	default:
		powNegY(dst, e, src, gamma, m)
	}
}

// powNegY is powNeg with AVX2, four lanes at a time, the tail in Go.
func powNegY(dst, e, src []float64, gamma float64, m int) {
	if len(src) == 0 {
		return
	}
	_, _ = dst[len(src)-1], e[len(src)-1]
	n := len(src) &^ 3
	if n > 0 {
		powNegAVX2(&dst[0], &e[0], &src[0], n, gamma, m)
	}
	powNegGeneric(dst[n:len(src)], e[n:len(src)], src[n:], gamma, m)
}

// powNegZ is powNeg with AVX-512, eight lanes at a time and the tail under
// an opmask.
func powNegZ(dst, e, src []float64, gamma float64, m int) {
	if len(src) == 0 {
		return
	}
	_, _ = dst[len(src)-1], e[len(src)-1]
	powNeg512(&dst[0], &e[0], &src[0], len(src), gamma, m)
}

//go:noescape
func powNegAVX2(dst, e, src *float64, n int, gamma float64, m int)

//go:noescape
func expNegAVX2(dst, src *float64, n int, gamma float64, acc bool)

// powNeg512 is powNegAVX2 on eight lanes, for any n >= 0; AVX-512F only.
//
//go:noescape
func powNeg512(dst, e, src *float64, n int, gamma float64, m int)

// expNeg512 is expNegAVX2 on eight lanes, for any n >= 0; AVX-512F only.
//
//go:noescape
func expNeg512(dst, src *float64, n int, gamma float64, acc bool)
