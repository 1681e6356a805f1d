package cost

import (
	"math"

	"github.com/psda-dev/psda/psda/internal/feat"
	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/par"
	"github.com/psda-dev/psda/psda/internal/rbf"
	"github.com/psda-dev/psda/psda/internal/topk"
)

// This file holds the float32 error analysis of the cost models: the bounds
// that let the sparse path's pricing passes run in float32 (Scope.F32).

// float32Safe reports whether every value of the matrices is at most 1e17
// in magnitude, so that the squared norms and dot products of a float32
// pass (of the features, centred or paired: at most 4× larger) stay far
// inside float32's range (3.4e38); beyond it the models' err32 bounds do
// not hold and their passes stay in float64. O(n·d).
func float32Safe(ms ...feat.Matrix) bool {
	const lim = 1e17
	for _, m := range ms {
		for _, v := range m.F32 {
			if math.Abs(float64(v)) > lim {
				return false
			}
		}
		for _, v := range m.F64 {
			if math.Abs(v) > lim {
				return false
			}
		}
	}
	return true
}

// err32 returns c·‖v‖² + d·2^-100 for each of the vectors v, c =
// err32Coef(d): a bound on a float32 pass's error in a squared distance
// ‖x − y‖² is then err[x] + err[y] (2‖x‖‖y‖ <= ‖x‖² + ‖y‖²), which is how
// the models state the bounds of their cross parts. The absolute part
// covers values, products and partial sums below float32's normal range
// (2^-126), where rounding is absolute (at most 2^-150 each, 3d of them
// in a squared distance) instead of relative.
func err32(v gram.Vectors) []float64 {
	e := scaled(sqNorms(v), err32Coef(v.D))
	for i := range e {
		e[i] += float64(v.D) * 0x1p-100
	}
	return e
}

// rbfErr32 returns, for vectors v with err32 e whose partners have err32 at
// most emax and whose kernel values with them are at most near.k (nil:
// unknown), e[i]·slope so that a float32 pass moves κ(v_i, y) by at most
// rbfErr32[i] + rbfErr32[y]: the squared distance is at least the D_i with
// κ(D_i) = near.k[i], the float32 one is off by at most e[i] + e[y] <=
// e[i] + emax (and the pass that found near.k, float32 in the sparse Stage
// 1's candidate pass, by as much again), and
// |Δκ| <= (e[i] + e[y])·min(slope_i, slope_y), plus chainErr32 for the
// power chains of the float32 passes (row32), half of it on each side.
// On all cores: each D_i is a bisection of ~65 kernel evaluations, ~0.3 s
// on one core for the 42000 vectors at 40000 × 2000, between the sparse
// Stage 2's candidate pass and its solve (docs/performance.md, "Serial
// sections around the sparse costs"); each entry depends on its own inputs
// alone, so the result is the same for every thread count.
func rbfErr32(e []float64, emax float64, near *topk.Max, kern *rbf.Mixture) []float64 {
	out := make([]float64, len(e))
	par.Rows(len(e), func(i0, i1 int) {
		for i := i0; i < i1; i++ {
			x, d := e[i], 0.0
			if near != nil {
				d = kern.DistBelow(near.K[i]+kern.ChainErr32()) - 2*(x+emax)
			}
			out[i] = x*kern.Slope(d) + kern.ChainErr32()/2
		}
	})
	return out
}

// err32Coef is the c with |D̃ − D| <= c·(‖x‖² + ‖y‖²) for a squared
// distance D̃ from gram32 (its documented bound, (min(d, kBlock)+3)·u·2‖x‖‖y‖
// + 4u·(‖x‖² + ‖y‖²), with 5% to spare for second-order terms), plus the
// float64 rounding of the explicit difference that the exact value (at)
// computes, d·2^-52·(‖x‖² + ‖y‖²).
func err32Coef(d int) float64 {
	const u = 0x1p-24
	return 1.05*float64(min(d, gram.KBlock)+3+4)*u + float64(d)*0x1p-52
}
