//go:build !noasm

package rbf

import "github.com/psda-dev/psda/psda/internal/gram"

// expNeg sets dst[i] = exp(−gamma·src[i]) (adds it with acc) for
// src[i] >= 0, with 0 for the exp where gamma·src[i] > expUnderflow; four
// lanes at a time with AVX2/FMA (within 2 ulps, see exp_amd64.s), padding
// the tail so every element takes the same path.
func expNeg(dst, src []float64, gamma float64, acc bool) {
	if !gram.UseFMA {
		expNegGeneric(dst, src, gamma, acc)
		return
	}
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

// powNeg sets e[i] = e[i]^m and adds it to dst[i], with 0 where
// gamma·src[i] > expUnderflow: the next term exp(−γ·D) = exp(−(γ/m)·D)^m of
// a power chain of the RBF mixture; four lanes at a time with AVX2,
// bit-identical to powNegGeneric.
func powNeg(dst, e, src []float64, gamma float64, m int) {
	if !gram.UseFMA {
		powNegGeneric(dst, e, src, gamma, m)
		return
	}
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

//go:noescape
func powNegAVX2(dst, e, src *float64, n int, gamma float64, m int)

//go:noescape
func expNegAVX2(dst, src *float64, n int, gamma float64, acc bool)
