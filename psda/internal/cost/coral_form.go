package cost

import (
	"github.com/psda-dev/psda/psda/internal/feat"
	"github.com/psda-dev/psda/psda/internal/gram"
)

// covForm is the symmetric d×d matrix F = c_s Σ_s + c_t Σ_t, a weighted sum of
// the two domains' unbiased covariances, which CORAL's costs use only
// through ‖F‖_F², xᵀF x and F x (coral1's E, coral2's F).
//
// It is held one of two ways. Dense: the d×d matrix, built from the
// covariances in O((n_s+n_t)·d²). Low rank: with z_m the N = n_s+n_t centred
// rows of both domains and w_m = c/(n−1) their weights,
// F = Σ_m w_m z_m z_mᵀ, so
//
//	xᵀF x = Σ_m w_m (z_m·x)²,  F x = Σ_m w_m (z_m·x) z_m,
//	‖F‖_F² = Σ_{m,l} w_m w_l (z_m·z_l)²,
//
// all from Gram products with the rows, in O(N²·d) time and no d×d memory.
// The low-rank form is used when N < d: then it is both the cheaper and the
// smaller (wide features, few rows: d = 16,000 with 8 rows needs 8.2 GB of
// d×d matrices, and 1 MB this way).
type covForm struct {
	d     int
	dense []float64    // d×d, or nil for the low-rank form
	z     gram.Vectors // the N centred rows, source then target (low rank)
	zc    gram.Vectors // the d columns of z, as vectors of length N (low rank)
	w     []float64    // the N weights (low rank)
}

// coralLowRank reports whether covForm uses the low-rank form for N rows of
// dimension d; a variable so that tests can force either form.
var coralLowRank = func(n, d int) bool { return n < d }

// CORALLowRank reports whether the CORAL models hold their covariance
// form in low rank for N = n_s+n_t rows of dimension d, with no d×d matrix
// (covForm); package psda's memory plan counts the d×d matrices otherwise.
func CORALLowRank(n, d int) bool { return coralLowRank(n, d) }

// newCovForm returns F = cs·Σ_s + ct·Σ_t for the rows of src and tgt around
// their means ms and mt. A domain with one row has Σ = 0 (as covariance
// returns).
func newCovForm(src, tgt feat.Matrix, ms, mt []float64, cs, ct float64, mon gram.Progress) *covForm {
	d, n := src.D, src.N+tgt.N
	if !coralLowRank(n, d) {
		return &covForm{d: d, dense: sub(scaled(covariance(src, ms, mon), cs), scaled(covariance(tgt, mt, mon), -ct))}
	}
	w := make([]float64, n)
	for m := range w {
		if m < src.N && src.N > 1 {
			w[m] = cs / float64(src.N-1)
		} else if m >= src.N && tgt.N > 1 {
			w[m] = ct / float64(tgt.N-1)
		}
	}
	z := gram.Vectors{N: n, D: d, Fill: func(m int, dst []float64) {
		if m < src.N {
			src.Row(m, dst)
			for k := range dst {
				dst[k] -= ms[k]
			}
			return
		}
		tgt.Row(m-src.N, dst)
		for k := range dst {
			dst[k] -= mt[k]
		}
	}}
	zc := gram.Vectors{N: d, D: n, Fill: func(c int, dst []float64) {
		for m := range dst {
			if m < src.N {
				dst[m] = src.At(m, c) - ms[c]
			} else {
				dst[m] = tgt.At(m-src.N, c) - mt[c]
			}
		}
	}}
	return &covForm{d: d, z: z, zc: zc, w: w}
}

// quad returns xᵀF x for every vector of x.
func (f *covForm) quad(x gram.Vectors, mon gram.Progress) []float64 {
	if f.dense != nil {
		return quadForms(x, f.dense, mon)
	}
	ps := gram.NewPartials(gram.NBlocks(f.z.N), x.N)
	gram.Gram(x, f.z, false, gram.Dots, mon, func(t *gram.Tile) {
		slot := ps.Slot(t.BJ)
		w := f.w[t.J0 : t.J0+t.NJ]
		for i := 0; i < t.NI; i++ {
			s := 0.0
			for j, g := range t.G[i*t.LD:][:t.NJ] {
				s += w[j] * g * g
			}
			slot[t.I0+i] = s
		}
	})
	return ps.Total()
}

// frob2 returns ‖F‖_F².
func (f *covForm) frob2(mon gram.Progress) float64 {
	if f.dense != nil {
		return gram.Dot(f.dense, f.dense)
	}
	return gram.Dot(f.w, f.quad(f.z, mon))
}

// times returns the |x|×d row-major matrix whose row i is F x_i.
func (f *covForm) times(x gram.Vectors, mon gram.Progress) []float64 {
	if f.dense != nil {
		return timesSym(x, f.dense, mon)
	}
	// H = (X Zᵀ) diag(w), |x|×N; then F x_i = Σ_m H_im z_m = (H Z)_i.
	n := f.z.N
	h := make([]float64, x.N*n)
	gram.Gram(x, f.z, false, gram.Dots, mon, func(t *gram.Tile) {
		for i := 0; i < t.NI; i++ {
			row := h[(t.I0+i)*n+t.J0:][:t.NJ]
			for j, g := range t.G[i*t.LD:][:t.NJ] {
				row[j] = g * f.w[t.J0+j]
			}
		}
	})
	d := f.d
	out := make([]float64, x.N*d)
	gram.Gram(gram.DenseRows(h, x.N, n), f.zc, false, gram.Dots, mon, func(t *gram.Tile) {
		for i := 0; i < t.NI; i++ {
			copy(out[(t.I0+i)*d+t.J0:][:t.NJ], t.G[i*t.LD:][:t.NJ])
		}
	})
	return out
}
