package psda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/testref"
)

// The references below evaluate the paper's formulas directly, independently
// of cost.go: MMD costs as the squared RKHS norm of the paper's combination
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

func linearKappa(x, y []float64) float64 {
	s := 0.0
	for i := range x {
		s += x[i] * y[i]
	}
	return s
}

func rowsF64(m Matrix) [][]float64 {
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
func refMMDStage2(h *hSpace, s, t [][]float64, k int, pairs []Pair) ([]float64, int) {
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

func refCORALStage2(s, t [][]float64, k int, pairs []Pair) ([]float64, int) {
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

// randMatrix returns an n×d Matrix of N(0,1) values (rounded to float32 when
// f32), and the same values as float64 rows.
func randMatrix(rng *rand.Rand, n, d int, f32 bool) Matrix {
	m := Matrix{N: n, D: d}
	if f32 {
		m.F32 = make([]float32, n*d)
		for i := range m.F32 {
			m.F32[i] = float32(rng.NormFloat64())
		}
	} else {
		m.F64 = make([]float64, n*d)
		for i := range m.F64 {
			m.F64[i] = rng.NormFloat64()
		}
	}
	return m
}

// coveringPairs returns max(ns, nt) pairs that use every source and every
// target at least once, as Stage 1 does, in a random order.
func coveringPairs(rng *rand.Rand, ns, nt int) []Pair {
	ps, pt := rng.Perm(ns), rng.Perm(nt)
	pairs := make([]Pair, max(ns, nt))
	for r := range pairs {
		pairs[r] = Pair{S: ps[r%ns], T: pt[r%nt]}
	}
	rng.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	return pairs
}

// termScale returns the size of the terms that cancel in a cost (16×, to be
// generous), the floor for the absolute error: |G| for the RBF mixture, the
// largest ‖x‖² for the linear kernel, its square for CORAL; all over k².
func termScale(cfg Config, src, tgt Matrix) float64 {
	n2 := 0.0
	for _, m := range []Matrix{src, tgt} {
		for _, r := range rowsF64(m) {
			n2 = max(n2, linearKappa(r, r))
		}
	}
	switch {
	case cfg.Discrepancy == CORAL:
		n2 *= n2
	case cfg.Kernel == RBF:
		n2 = float64(len(cfg.gammas()))
	}
	return 16 * n2 / float64(cfg.BatchSize*cfg.BatchSize)
}

type costCase struct {
	name string
	cfg  Config
}

var costCases = []costCase{
	{"mmd-linear-k1", Config{BatchSize: 1, Discrepancy: MMD, Kernel: Linear}},
	{"mmd-linear-k4", Config{BatchSize: 4, Discrepancy: MMD, Kernel: Linear}},
	{"mmd-rbf-default-k2", Config{BatchSize: 2, Discrepancy: MMD, Kernel: RBF}},
	{"mmd-rbf-nonint-k4", Config{BatchSize: 4, Discrepancy: MMD, Kernel: RBF, Gammas: []float64{0.7, 0.03, 3}}},
	{"mmd-rbf-pow2-k2", Config{BatchSize: 2, Discrepancy: MMD, Kernel: RBF, Gammas: []float64{0.25, 0.5, 1, 2, 4, 8, 16}}},
	{"coral-k2", Config{BatchSize: 2, Discrepancy: CORAL}},
	{"coral-k3", Config{BatchSize: 3, Discrepancy: CORAL}},
	{"coral-k6", Config{BatchSize: 6, Discrepancy: CORAL}},
}

func references(cfg Config, s, t [][]float64, pairs []Pair) (c1, c2 []float64, m int) {
	if cfg.Discrepancy == CORAL {
		c1 = refCORALStage1(s, t, cfg.BatchSize)
		if cfg.BatchSize%2 == 0 {
			c2, m = refCORALStage2(s, t, cfg.BatchSize, pairs)
		}
		return c1, c2, m
	}
	kappa := linearKappa
	if cfg.Kernel == RBF {
		kappa = testref.RBFKappa(cfg.gammas())
	}
	h := newHSpace(kappa)
	c1 = refMMDStage1(h, s, t, cfg.BatchSize)
	c2, m = refMMDStage2(h, s, t, cfg.BatchSize, pairs)
	return c1, c2, m
}

// checkCosts compares both stages with the references on one input.
func checkCosts(t *testing.T, cfg Config, src, tgt Matrix, pairs []Pair, tol float64) {
	t.Helper()
	s, tg := rowsF64(src), rowsF64(tgt)
	w1, w2, wm := references(cfg, s, tg, pairs)
	floor := termScale(cfg, src, tgt)
	testref.CloseTo(t, "stage 1", stage1Costs(src, tgt, cfg), w1, tol, floor)
	if w2 == nil {
		return
	}
	c2, m := stage2Costs(src, tgt, cfg, pairs)
	if m != wm {
		t.Fatalf("stage 2: m = %d, want %d", m, wm)
	}
	for r := 0; r < m; r++ {
		for q := 0; q < m; q++ {
			if c2[r*m+q] != c2[q*m+r] {
				t.Fatalf("stage 2: not symmetric at (%d, %d): %v vs %v", r, q, c2[r*m+q], c2[q*m+r])
			}
		}
	}
	testref.CloseTo(t, "stage 2", c2, w2, tol, floor)
}

func TestCostsTiny(t *testing.T) {
	for _, tc := range costCases {
		for _, f32 := range []bool{false, true} {
			for d := 1; d <= 3; d++ {
				for ns := 1; ns <= 6; ns++ {
					for nt := 1; nt <= 6; nt++ {
						name := fmt.Sprintf("%s/f32=%v/d=%d/ns=%d/nt=%d", tc.name, f32, d, ns, nt)
						rng := rand.New(rand.NewPCG(uint64(ns*100+nt*10+d), 7))
						src, tgt := randMatrix(rng, ns, d, f32), randMatrix(rng, nt, d, f32)
						pairs := coveringPairs(rng, ns, nt)
						t.Run(name, func(t *testing.T) { checkCosts(t, tc.cfg, src, tgt, pairs, 1e-12) })
					}
				}
			}
		}
	}
}

// TestCostsTiled shrinks the tiles and covariance slabs and sends every
// distance through the GEMM expansion, so that small inputs exercise the
// multi-tile, edge-tile, partial-sum, slab and micro-kernel paths used at
// scale.
func TestCostsTiled(t *testing.T) {
	defer func(ts, dd, cs int) { gram.TileSize, gram.DirectDim, covSlab = ts, dd, cs }(gram.TileSize, gram.DirectDim, covSlab)
	gram.TileSize, gram.DirectDim, covSlab = 24, 0, 16
	sizes := []struct{ ns, nt, d int }{{50, 31, 3}, {25, 49, 7}, {40, 40, 20}, {13, 61, 1}}
	for _, tc := range costCases {
		for _, f32 := range []bool{false, true} {
			for _, sz := range sizes {
				name := fmt.Sprintf("%s/f32=%v/d=%d/ns=%d/nt=%d", tc.name, f32, sz.d, sz.ns, sz.nt)
				rng := rand.New(rand.NewPCG(uint64(sz.ns*1000+sz.nt), 11))
				src, tgt := randMatrix(rng, sz.ns, sz.d, f32), randMatrix(rng, sz.nt, sz.d, f32)
				pairs := coveringPairs(rng, sz.ns, sz.nt)
				t.Run(name, func(t *testing.T) { checkCosts(t, tc.cfg, src, tgt, pairs, 1e-11) })
			}
		}
	}
}

// TestStage1MeanIsUniformError checks the law of total expectation behind the
// paper's Stage 1 (linear kernel): with k = 1 the minibatch is one source and
// one target drawn uniformly, so the mean of C^st over all (i, j) is the
// expected error E‖D̂ − D‖² of uniform sampling, computed here by brute force.
func TestStage1MeanIsUniformError(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	src, tgt := randMatrix(rng, 5, 2, false), randMatrix(rng, 4, 2, false)
	cfg := Config{BatchSize: 1, Discrepancy: MMD, Kernel: Linear}
	c := stage1Costs(src, tgt, cfg)
	ms, mt := colMeans(src), colMeans(tgt)
	want := 0.0
	for i := 0; i < src.N; i++ {
		for j := 0; j < tgt.N; j++ {
			e := 0.0
			for k := 0; k < 2; k++ {
				v := (src.At(i, k) - tgt.At(j, k)) - (ms[k] - mt[k])
				e += v * v
			}
			want += e / float64(src.N*tgt.N)
		}
	}
	if got := sum(c) / float64(len(c)); math.Abs(got-want) > 1e-12*want {
		t.Fatalf("mean C^st = %v, want E‖D̂ − D‖² = %v", got, want)
	}
}
