package rbf

import (
	"math"
	"sort"
)

// Mixture evaluates κ(D) = Σ_γ exp(−γ·D) for a squared distance D.
//
// exp is the hot spot after the GEMM (the AVX-512 or AVX2 vector exp,
// within 2 ulps, once per entry and gamma). When a gamma is an integer
// multiple m <= 16 of a smaller one, exp(−γD) is computed as exp(−γ'D)^m
// by binary powering (powNeg, about half the cost of an exp) instead of
// another exp.
// A relative error ε in exp(−γ'D) becomes m·ε after the power, so chains
// are cut (a fresh exp) before the product of the ratios exceeds
// maxAmplify: every term keeps a relative error below about maxAmplify ulps
// (2e-14 for 100). With the paper's gammas {0.001, …, 10} this costs 2 exps
// and 3 powers per entry instead of 5 exps (BenchmarkStage2Costs;
// docs/performance.md, "Design decisions and the measurements behind them").
//
// The float32 passes (row32), whose values only need to lie within err32 of
// the exact ones, take longer chains, up to maxAmplify32: with the paper's
// gammas 1 exp and 4 powers per entry, within chainErr32 of κ, about 1e-10,
// next to float32 rounding's 1e-5.
type Mixture struct {
	gammas []float64 // ascending
	pow    []int     // 0: fresh exp; m: previous term to the m-th power
	pow32  []int     // pow for float32 passes
	NTerms float64   // κ(x, x) = number of gammas
}

const (
	maxAmplify   = 100
	maxAmplify32 = 10000
)

// New returns the mixture of gammas with the exact power chains.
func New(gammas []float64) *Mixture { return Plan(gammas, true) }

// Plan returns the mixture, with power chains for exact values when
// powers is set.
func Plan(gammas []float64, powers bool) *Mixture {
	g := append([]float64(nil), gammas...)
	sort.Float64s(g)
	k := &Mixture{gammas: g, pow: make([]int, len(g)), pow32: powerChains(g, maxAmplify32), NTerms: float64(len(g))}
	if powers {
		k.pow = powerChains(g, maxAmplify)
	}
	return k
}

// powerChains returns, for ascending gammas g, m at i when g[i] = m·g[i−1]
// for an integer m in [2, 16] and the chain's product of ratios stays at
// most maxAmp, 0 (a fresh exp) otherwise.
func powerChains(g []float64, maxAmp int) []int {
	pow := make([]int, len(g))
	amp := 1
	for i := 1; i < len(g); i++ {
		r := g[i] / g[i-1]
		m := int(math.Round(r))
		if m >= 2 && m <= 16 && math.Abs(r-float64(m)) <= 1e-12*r && amp*m <= maxAmp {
			pow[i] = m
			amp *= m
		} else {
			amp = 1
		}
	}
	return pow
}

// ChainErr32 bounds |Row32 − κ| for every D: a term at the end of a chain
// with product of ratios A is within 8·A ulps (2 ulps of its exp, and at most
// 2·log2(16) roundings per power, amplified by the later powers), and every
// term is at most 1.
func (k *Mixture) ChainErr32() float64 { return k.NTerms * 8 * maxAmplify32 * 0x1p-52 }

// expUnderflow is where exp(−x) stops mattering next to κ(x, x) >= 1; past it
// terms are set to 0 (exactly what they are to within 1e-300).
const expUnderflow = 690

// Slope returns Σγ·exp(−γ·max(d, 0)), which bounds |κ'(D)| for every
// D >= d: a squared distance at least d and off by δ moves κ by at most
// slope(d − δ)·δ. slope(0) = Σγ bounds it everywhere.
func (k *Mixture) Slope(d float64) float64 {
	s := 0.0
	for _, g := range k.gammas {
		s += g * math.Exp(-g*max(d, 0))
	}
	return s
}

// DistBelow returns a squared distance D no larger than any D' >= 0 with
// κ(D') <= k, by bisection on the decreasing κ: 0 when k >= κ(0).
func (k *Mixture) DistBelow(kv float64) float64 {
	if kv >= k.NTerms {
		return 0
	}
	lo, hi := 0.0, 1.0
	for k.Eval(hi) > kv && hi < 1e300 {
		lo, hi = hi, 2*hi
	}
	for range 60 {
		mid := lo + (hi-lo)/2
		if k.Eval(mid) > kv {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo // κ(lo) > kv >= κ(D'), so lo < D'
}

// Eval returns κ for the squared distance d (through Row, so that single
// entries and rows agree to the bit).
func (k *Mixture) Eval(d float64) float64 {
	var out, e [1]float64
	k.Row(out[:], []float64{d}, e[:])
	return out[0]
}

// Row sets out[j] = κ(d[j]) for a row of squared distances; e is scratch of
// the same length.
func (k *Mixture) Row(out, d, e []float64) { k.rowWith(k.pow, out, d, e) }

// Row32 is Row for float32 passes: within chainErr32 of κ.
func (k *Mixture) Row32(out, d, e []float64) { k.rowWith(k.pow32, out, d, e) }

func (k *Mixture) rowWith(pow []int, out, d, e []float64) {
	for i, g := range k.gammas {
		switch {
		case pow[i] != 0:
			powNeg(out, e, d, g, pow[i])
		case i+1 < len(pow) && pow[i+1] != 0: // a chain starts here
			expNeg(e, d, g, false)
			if i == 0 {
				copy(out, e)
			} else {
				for j, v := range e {
					out[j] += v
				}
			}
		default:
			expNeg(out, d, g, i > 0)
		}
	}
}

// expNegGeneric is the portable expNeg.
func expNegGeneric(dst, src []float64, gamma float64, acc bool) {
	for i, v := range src {
		e := 0.0
		if x := gamma * v; x <= expUnderflow {
			e = math.Exp(-x)
		}
		if acc {
			dst[i] += e
		} else {
			dst[i] = e
		}
	}
}

// powNegGeneric is the portable powNeg.
func powNegGeneric(dst, e, src []float64, gamma float64, m int) {
	for i, v := range src {
		x := 0.0
		if gamma*v <= expUnderflow {
			x = powInt(e[i], m)
		}
		e[i] = x
		dst[i] += x
	}
}

// powInt returns x^m for m >= 1 by binary powering.
func powInt(x float64, m int) float64 {
	r := 1.0
	for {
		if m&1 != 0 {
			r *= x
		}
		m >>= 1
		if m == 0 {
			return r
		}
		x *= x
	}
}
