package testref

import (
	"github.com/psda-dev/psda/psda/internal/feat"
)

// This file holds the references of the cost models: the paper's cost
// matrices evaluated from its formulas, for internal/cost's tests and for
// psda's tests of Match's reported costs.

// Cost names the discrepancy of a reference: the MMD with the linear kernel
// (Gammas nil), the MMD with the RBF mixture of Gammas, or CORAL; K is the
// per-domain batch size k.
type Cost struct {
	K      int
	CORAL  bool
	Gammas []float64
}

// References returns the paper's Stage 1 cost matrix (n_s×n_t, row-major)
// over the rows s and t and its Stage 2 matrix (m×m) over pairs, evaluated
// directly; c2 is nil for CORAL with an odd k (Stage 2 needs an even one).
func References(c Cost, s, t [][]float64, pairs []feat.Pair) (c1, c2 []float64, m int) {
	if c.CORAL {
		c1 = refCORALStage1(s, t, c.K)
		if c.K%2 == 0 {
			c2, m = refCORALStage2(s, t, c.K, pairs)
		}
		return c1, c2, m
	}
	kappa := LinearKappa
	if c.Gammas != nil {
		kappa = RBFKappa(c.Gammas)
	}
	h := newHSpace(kappa)
	c1 = refMMDStage1(h, s, t, c.K)
	c2, m = refMMDStage2(h, s, t, c.K, pairs)
	return c1, c2, m
}

// TermScale returns the size of the terms that cancel in a cost (16×, to be
// generous), the floor for the absolute error: |G| for the RBF mixture, the
// largest ‖x‖² for the linear kernel, its square for CORAL; all over k².
func TermScale(c Cost, src, tgt feat.Matrix) float64 {
	n2 := 0.0
	for _, m := range []feat.Matrix{src, tgt} {
		for _, r := range RowsF64(m) {
			n2 = max(n2, LinearKappa(r, r))
		}
	}
	switch {
	case c.CORAL:
		n2 *= n2
	case c.Gammas != nil:
		n2 = float64(len(c.Gammas))
	}
	return 16 * n2 / float64(c.K*c.K)
}

// The references below evaluate the paper's formulas directly, independently
// of internal/cost: MMD costs as the squared RKHS norm of the paper's combination
// of feature vectors, expanded bilinearly into κ evaluations (naive loops);
// CORAL costs from explicit d×d conditional covariance matrices built exactly
// as the paper writes them.

// hTerm is coef·φ(x) (pt != nil) or coef·μ of a domain (pt == nil).
type hTerm struct {
	coef float64
	pt   []float64
	mu   [][]float64
}

// hSpace evaluates squared RKHS norms of combinations of φ(x) and the
// domain means by expanding every inner product into κ (naive loops);
// ⟨μ_a, μ_b⟩ is memoised per reference computation.
type hSpace struct {
	kappa func(x, y []float64) float64
	mumu  map[[2]*float64]float64
}

func newHSpace(kappa func(x, y []float64) float64) *hSpace {
	return &hSpace{kappa: kappa, mumu: map[[2]*float64]float64{}}
}

func (h *hSpace) ip(a, b hTerm) float64 {
	xs, ys := [][]float64{a.pt}, [][]float64{b.pt}
	if a.pt == nil {
		xs = a.mu
	}
	if b.pt == nil {
		ys = b.mu
	}
	key := [2]*float64{&xs[0][0], &ys[0][0]}
	if a.pt == nil && b.pt == nil {
		if v, ok := h.mumu[key]; ok {
			return v
		}
	}
	s := 0.0
	for _, x := range xs {
		for _, y := range ys {
			s += h.kappa(x, y)
		}
	}
	s /= float64(len(xs) * len(ys))
	if a.pt == nil && b.pt == nil {
		h.mumu[key] = s
	}
	return s
}

// norm2 returns ‖Σ terms‖²_H.
func (h *hSpace) norm2(terms []hTerm) float64 {
	s := 0.0
	for _, a := range terms {
		for _, b := range terms {
			s += a.coef * b.coef * h.ip(a, b)
		}
	}
	return s
}

// LinearKappa is the linear kernel κ(x, y) = xᵀy, evaluated directly.
func LinearKappa(x, y []float64) float64 {
	s := 0.0
	for i := range x {
		s += x[i] * y[i]
	}
	return s
}

// RowsF64 returns the rows of m as float64 slices.
func RowsF64(m feat.Matrix) [][]float64 {
	out := make([][]float64, m.N)
	for i := range out {
		out[i] = m.Row(i, make([]float64, m.D))
	}
	return out
}

// refMMDStage1 is ‖φ(s_i) − φ(t_j) − (μ_s − μ_t)‖²/k².
func refMMDStage1(h *hSpace, s, t [][]float64, k int) []float64 {
	c := make([]float64, len(s)*len(t))
	for i := range s {
		for j := range t {
			c[i*len(t)+j] = h.norm2([]hTerm{{1, s[i], nil}, {-1, t[j], nil}, {-1, nil, s}, {1, nil, t}}) / float64(k*k)
		}
	}
	return c
}

// refMMDStage2 is ‖φ(s_r) + φ(s_q) − φ(t_r) − φ(t_q) − 2(μ_s − μ_t)‖²/k², with
// the dummy node's φ(s_∅) − φ(t_∅) = μ_s − μ_t (w_∅ = 0).
func refMMDStage2(h *hSpace, s, t [][]float64, k int, pairs []feat.Pair) ([]float64, int) {
	p, m := len(pairs), len(pairs)+len(pairs)%2
	c := make([]float64, m*m)
	w := func(r int) []hTerm {
		if r == p {
			return nil
		}
		return []hTerm{{1, s[pairs[r].S], nil}, {-1, t[pairs[r].T], nil}, {-1, nil, s}, {1, nil, t}}
	}
	for r := 0; r < m; r++ {
		for q := 0; q < m; q++ {
			if r != q {
				c[r*m+q] = h.norm2(append(w(r), w(q)...)) / float64(k*k)
			}
		}
	}
	return c, m
}

// Explicit d×d matrices for CORAL.
type dmat [][]float64

func newDmat(d int) dmat {
	m := make(dmat, d)
	for i := range m {
		m[i] = make([]float64, d)
	}
	return m
}

// axpyOuter adds c·x yᵀ to m.
func (m dmat) axpyOuter(c float64, x, y []float64) dmat {
	for i := range m {
		for j := range m[i] {
			m[i][j] += c * x[i] * y[j]
		}
	}
	return m
}

func (m dmat) axpy(c float64, a dmat) dmat {
	for i := range m {
		for j := range m[i] {
			m[i][j] += c * a[i][j]
		}
	}
	return m
}

func (m dmat) frob2() float64 {
	s := 0.0
	for i := range m {
		for _, v := range m[i] {
			s += v * v
		}
	}
	return s
}

// centred returns the rows minus their mean and the unbiased covariance (0
// for one row).
func centred(x [][]float64) ([][]float64, dmat) {
	n, d := len(x), len(x[0])
	mean := make([]float64, d)
	for _, r := range x {
		for k, v := range r {
			mean[k] += v / float64(n)
		}
	}
	z := make([][]float64, n)
	cov := newDmat(d)
	for i, r := range x {
		z[i] = make([]float64, d)
		for k, v := range r {
			z[i][k] = v - mean[k]
		}
		if n > 1 {
			cov.axpyOuter(1/float64(n-1), z[i], z[i])
		}
	}
	return z, cov
}

// condCov1 is the paper's Stage 1 conditional covariance
// [(n−1)/n·(k−1)Σ + (k−1)/k·z zᵀ]/(k−1).
func condCov1(cov dmat, n, k int, z []float64) dmat {
	fk := float64(k)
	m := newDmat(len(z)).axpy(float64(n-1)/float64(n)*(fk-1)/(fk-1), cov)
	return m.axpyOuter((fk-1)/fk/(fk-1), z, z)
}

// condCov2 is the paper's Stage 2 conditional covariance
// [(n−1)/n·(k−2)Σ + z_r z_rᵀ + z_q z_qᵀ − (z_r+z_q)(z_r+z_q)ᵀ/k]/(k−1).
func condCov2(cov dmat, n, k int, zr, zq []float64) dmat {
	fk := float64(k)
	u := make([]float64, len(zr))
	for i := range u {
		u[i] = zr[i] + zq[i]
	}
	m := newDmat(len(zr)).axpy(float64(n-1)/float64(n)*(fk-2)/(fk-1), cov)
	m.axpyOuter(1/(fk-1), zr, zr).axpyOuter(1/(fk-1), zq, zq)
	return m.axpyOuter(-1/fk/(fk-1), u, u)
}

func refCORALStage1(s, t [][]float64, k int) []float64 {
	a, covS := centred(s)
	b, covT := centred(t)
	c := make([]float64, len(s)*len(t))
	for i := range a {
		for j := range b {
			m := condCov1(covS, len(s), k, a[i]).axpy(-1, condCov1(covT, len(t), k, b[j]))
			c[i*len(t)+j] = m.axpy(-1, covS).axpy(1, covT).frob2()
		}
	}
	return c
}

func refCORALStage2(s, t [][]float64, k int, pairs []feat.Pair) ([]float64, int) {
	a, covS := centred(s)
	b, covT := centred(t)
	p, m := len(pairs), len(pairs)+len(pairs)%2
	zero := make([]float64, len(s[0]))
	vec := func(r int) ([]float64, []float64) {
		if r == p {
			return zero, zero
		}
		return a[pairs[r].S], b[pairs[r].T]
	}
	c := make([]float64, m*m)
	for r := 0; r < m; r++ {
		for q := 0; q < m; q++ {
			if r == q {
				continue
			}
			ar, br := vec(r)
			aq, bq := vec(q)
			mm := condCov2(covS, len(s), k, ar, aq).axpy(-1, condCov2(covT, len(t), k, br, bq))
			c[r*m+q] = mm.axpy(-1, covS).axpy(1, covT).frob2()
		}
	}
	return c, m
}
