package cost

import (
	"slices"
	"sync"

	"github.com/psda-dev/psda/psda/internal/feat"
	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/par"
)

// This file holds the CORAL costs of both stages and the covariances they
// need; coral_form.go holds the d×d weighted covariance in either form.

// coral1 is Stage 1 of CORAL: with centred a_i = s_i − s̄, b_j = t_j − t̄,
// the paper's Σ̂_s^(i) = P_s + a_i a_iᵀ/k (P the population covariance)
// and E = Σ_t/n_t − Σ_s/n_s:
// C_ij = ‖E + (a_i a_iᵀ − b_j b_jᵀ)/k‖_F²
// = ‖E‖² + (2/k)(a_iᵀE a_i − b_jᵀE b_j) + (‖a_i‖⁴ + ‖b_j‖⁴ − 2(a_i·b_j)²)/k².
// It has no float32 bound (err32 is never called).
type coral1 struct {
	src, tgt feat.Matrix
	ms, mt   []float64 // the domain means
	qa, qb   []float64 // the row and column terms
	fk       float64   // k
	mon      gram.Progress
}

func newCoral1(src, tgt feat.Matrix, k int, mon gram.Progress) *coral1 {
	ms, mt := colMeans(src), colMeans(tgt)
	// E without a d×d matrix when the rows are fewer than the features (covForm).
	e := newCovForm(src, tgt, ms, mt, -1/float64(src.N), 1/float64(tgt.N), mon)
	a, b := rowsOf(src, nil, ms), rowsOf(tgt, nil, mt)
	qa, qb := e.quad(a, mon), e.quad(b, mon)
	na, nb := sqNorms(a), sqNorms(b)
	e2 := e.frob2(mon)
	fk := float64(k)
	for i := range qa {
		qa[i] = e2 + 2*qa[i]/fk + na[i]*na[i]/(fk*fk)
	}
	for j := range qb {
		qb[j] = -2*qb[j]/fk + nb[j]*nb[j]/(fk*fk)
	}
	return &coral1{src: src, tgt: tgt, ms: ms, mt: mt, qa: qa, qb: qb, fk: fk, mon: mon}
}

func (m *coral1) pass(sc Scope, emit func(i, j0 int, x []float64)) {
	fk := m.fk
	xs, ys := rowsOf(m.src, sc.Rows, m.ms), rowsOf(m.tgt, sc.Cols, m.mt)
	if sc.trans {
		xs, ys = ys, xs
	}
	sc.gram(xs, ys, false, gram.Dots, m.mon, func(t *gram.Tile) {
		x := make([]float64, t.NJ)
		for i := 0; i < t.NI; i++ {
			for j, g := range t.G[i*t.LD:][:t.NJ] {
				x[j] = -2 * g * g / (fk * fk)
			}
			emit(t.I0+i, t.J0, x)
		}
	})
}

func (m *coral1) terms() ([]float64, []float64) { return m.qa, m.qb }

func (m *coral1) at(i, j int) float64 {
	g := 0.0
	for c := range m.ms {
		g += (m.src.At(i, c) - m.ms[c]) * (m.tgt.At(j, c) - m.mt[c])
	}
	return -2 * g * g / (m.fk * m.fk)
}

func (m *coral1) err32() ([]float64, []float64) { return nil, nil }

// coral2 is Stage 2 of CORAL: it evaluates the paper's Stage 2 conditional covariance
// Σ̂_s^(r,q) = [(n_s−1)/n_s·(k−2)Σ_s + a_r a_rᵀ + a_q a_qᵀ − (a_r+a_q)(a_r+a_q)ᵀ/k]/(k−1).
// With A2 = [a_r a_q], B2 = [b_r b_q], β = 1/(k(k−1)) and the 2×2 matrix
// Ca = [[1/k, −β], [−β, 1/k]], the rank-one part is A2 Ca A2ᵀ, so
// Σ̂_s^(r,q) − Σ̂_t^(r,q) − (Σ_s − Σ_t) = F + A2 Ca A2ᵀ − B2 Ca B2ᵀ with
// F = f_s Σ_s − f_t Σ_t, f = (k−2)/(k−1)·(n−1)/n − 1, and
// C_rq = ‖F‖² + 2 tr(Ca (A2ᵀF A2 − B2ᵀF B2)) + tr(Ca Gaa Ca Gaa) + tr(Ca Gbb Ca Gbb)
//
//	− 2 tr(Ca Gab Ca Gabᵀ),
//
// with the 2×2 Gram blocks Gaa = A2ᵀA2, Gbb = B2ᵀB2, Gab = A2ᵀB2. The
// model's cross part is every term of C_rq that involves both pairs, not
// one Gram entry. A pass runs two Gram products per block of
// 2·tileSize pairs: the interleaved vectors (a_q, b_q) against the block's
// (a_r, b_r), and ψ_rq = a_rᵀF a_q − b_rᵀF b_q as
// [F a_q, −F b_q]·[a_r, b_r] (F a is stored: (n_s+n_t)·d float64). The
// block is the narrow side so that the tiles of the other spread over the
// cores; a full pass visits q >= r (the block's first pair) only.
type coral2 struct {
	p, d     int
	fa, fb   []float64 // F a and F b for every source and target, row-major
	is, js   []int     // the pairs' sources and targets
	ap, bp   gram.Vectors
	naa, nbb []float64 // ‖a_r‖², ‖b_r‖²
	nab      []float64 // a_r·b_r
	ca0, ca1 float64   // Ca = [[ca0, ca1], [ca1, ca0]]
	beta     float64
	rank0    []float64
	node     []float64
	single   []float64
	mon      gram.Progress
	bufs     sync.Pool // at's four d-vectors
}

func newCoral2(src, tgt feat.Matrix, k int, pairs []feat.Pair, mon gram.Progress) *coral2 {
	p, d := len(pairs), src.D
	ms, mt := colMeans(src), colMeans(tgt)
	fk := float64(k)
	fcoef := func(n int) float64 { return (fk-2)/(fk-1)*float64(n-1)/float64(n) - 1 }
	// F without a d×d matrix when the rows are fewer than the features (covForm).
	f := newCovForm(src, tgt, ms, mt, fcoef(src.N), -fcoef(tgt.N), mon)
	a, b := rowsOf(src, nil, ms), rowsOf(tgt, nil, mt)
	fa, fb := f.times(a, mon), f.times(b, mon)
	is, js := pairIndex(pairs)
	ap, bp := rowsOf(src, is, ms), rowsOf(tgt, js, mt)
	naa, nbb := sqNorms(ap), sqNorms(bp)
	nab, psi := make([]float64, p), make([]float64, p)
	ra, rb := make([]float64, d), make([]float64, d)
	for r := range pairs {
		ap.Fill(r, ra)
		bp.Fill(r, rb)
		nab[r] = gram.Dot(ra, rb)
		psi[r] = gram.Dot(ra, fa[is[r]*d:(is[r]+1)*d]) - gram.Dot(rb, fb[js[r]*d:(js[r]+1)*d])
	}
	ca0, ca1 := 1/fk, -1/(fk*(fk-1))
	f2, beta := f.frob2(mon), 1/(fk*(fk-1))
	m := &coral2{p: p, d: d, fa: fa, fb: fb, is: is, js: js, ap: ap, bp: bp, naa: naa, nbb: nbb, nab: nab,
		ca0: ca0, ca1: ca1, beta: beta, mon: mon}
	m.bufs.New = func() any { return new([4][]float64) }
	rank0, node, single := make([]float64, p), make([]float64, p), make([]float64, p)
	for r := range rank0 {
		rank0[r] = m.rank(r, 0, 0, 0, 0, 0, 0, 0)
		node[r] = f2/2 + 2*psi[r]/fk + rank0[r]
		single[r] = node[r] + f2/2 // C(r, ∅): a_∅ = b_∅ = 0
	}
	m.rank0, m.node, m.single = rank0, node, single
	return m
}

// rank returns ‖A2 Ca A2ᵀ − B2 Ca B2ᵀ‖_F² from the Gram entries among a_r, a_q, b_r, b_q.
func (m *coral2) rank(r int, aq, bq, arbq, aqbr, aqq, bqq, aqbq float64) float64 {
	ca0, ca1 := m.ca0, m.ca1
	gaa := [4]float64{m.naa[r], aq, aq, aqq}
	gbb := [4]float64{m.nbb[r], bq, bq, bqq}
	gab := [4]float64{m.nab[r], arbq, aqbr, aqbq}
	gba := [4]float64{m.nab[r], aqbr, arbq, aqbq}
	return trCGCH(ca0, ca1, gaa, gaa) + trCGCH(ca0, ca1, gbb, gbb) - 2*trCGCH(ca0, ca1, gab, gba)
}

// cross is the cross part from the Gram entries among a_r, b_r, a_q, b_q
// and ψ_rq = a_rᵀF a_q − b_rᵀF b_q.
func (m *coral2) cross(r, q int, aq, bq, arbq, aqbr, psiRQ float64) float64 {
	return m.rank(r, aq, bq, arbq, aqbr, m.naa[q], m.nbb[q], m.nab[q]) - m.rank0[r] - m.rank0[q] - 4*m.beta*psiRQ
}

// z_2r = a_r, z_2r+1 = b_r; x_r = [a_r, b_r]; y_r = [F a_r, −F b_r].
// z(nil, from) holds the pairs from..p−1, z(idx, 0) the pairs idx.
func (m *coral2) z(idx []int, from int) gram.Vectors {
	p, d, ap, bp := m.p, m.d, m.ap, m.bp
	n := 2 * (p - from)
	if idx != nil {
		n = 2 * len(idx)
	}
	return gram.Vectors{N: n, D: d, Fill: func(i int, dst []float64) {
		r := from + i/2
		if idx != nil {
			r = idx[i/2]
		}
		if i%2 == 0 {
			ap.Fill(r, dst)
		} else {
			bp.Fill(r, dst)
		}
	}}
}

func (m *coral2) x(idx []int) gram.Vectors {
	d, ap, bp := m.d, m.ap, m.bp
	return gram.Vectors{N: len(idx), D: 2 * d, Fill: func(i int, dst []float64) {
		ap.Fill(idx[i], dst[:d])
		bp.Fill(idx[i], dst[d:])
	}}
}

func (m *coral2) y(from int) gram.Vectors {
	p, d, fa, fb, is, js := m.p, m.d, m.fa, m.fb, m.is, m.js
	return gram.Vectors{N: p - from, D: 2 * d, Fill: func(i int, dst []float64) {
		r := from + i
		copy(dst[:d], fa[is[r]*d:(is[r]+1)*d])
		for k, v := range fb[js[r]*d : (js[r]+1)*d] {
			dst[d+k] = -v
		}
	}}
}

func (m *coral2) pass(sc Scope, emit func(r, q0 int, v []float64)) {
	p, beta, mon, cross, z, x, y := m.p, m.beta, m.mon, m.cross, m.z, m.x, m.y
	// Blocks of 2·tileSize pairs: four tiles of z vectors, the buffer
	// 2·tileSize·P float64.
	rows, nb := par.Indices(sc.Rows, p), 2*gram.TileSize
	buf := make([]float64, min(nb, len(rows))*p)
	for b0 := 0; b0 < len(rows); b0 += nb {
		blk := rows[b0:min(len(rows), b0+nb)]
		from := 0
		if sc.Rows == nil {
			from = blk[0]
		}
		nq := p - from
		v := buf[:len(blk)*nq]
		// Tile rows: a_q, b_q (q = from + (t.i0+i)/2); columns: a_r, b_r of the block.
		// The epilogues walk the tiles by column so that they write
		// the buffer's rows in order.
		sc.gram(z(nil, from), z(blk, 0), false, gram.Dots, mon, func(t *gram.Tile) {
			for ri := 0; ri < t.NJ/2; ri++ {
				r, out := blk[t.J0/2+ri], v[(t.J0/2+ri)*nq+t.I0/2:][:t.NI/2]
				for qi := range out {
					q := from + t.I0/2 + qi
					ga, gb := t.G[2*qi*t.LD:], t.G[(2*qi+1)*t.LD:]
					out[qi] = cross(r, q, ga[2*ri], gb[2*ri+1], gb[2*ri], ga[2*ri+1], 0) // ψ below
				}
			}
		})
		sc.gram(y(from), x(blk), false, gram.Dots, mon, func(t *gram.Tile) {
			for j := 0; j < t.NJ; j++ {
				out := v[(t.J0+j)*nq+t.I0:][:t.NI]
				for i := range out {
					out[i] -= 4 * beta * t.G[i*t.LD+j] // cross's ψ term
				}
			}
		})
		if mon.Err() != nil {
			return
		}
		par.Rows(len(blk), func(i0, i1 int) {
			for i := i0; i < i1; i++ {
				r, row := blk[i], v[i*nq:(i+1)*nq]
				if sc.Rows == nil {
					emit(r, r+1, row[r+1-from:])
				} else {
					emit(r, 0, row)
				}
			}
		})
	}
}

func (m *coral2) finish() ([]float64, []float64) { return m.node, m.single }

func (m *coral2) at(r, q int) float64 {
	d, ap, bp, fa, fb, is, js, cross := m.d, m.ap, m.bp, m.fa, m.fb, m.is, m.js, m.cross
	bs := m.bufs.Get().(*[4][]float64)
	defer m.bufs.Put(bs)
	for i := range bs {
		bs[i] = slices.Grow(bs[i][:0], d)[:d]
	}
	ar, br, aq, bq := bs[0], bs[1], bs[2], bs[3]
	ap.Fill(r, ar)
	bp.Fill(r, br)
	ap.Fill(q, aq)
	bp.Fill(q, bq)
	psiRQ := gram.Dot(ar, fa[is[q]*d:(is[q]+1)*d]) - gram.Dot(br, fb[js[q]*d:(js[q]+1)*d])
	return cross(r, q, gram.Dot(ar, aq), gram.Dot(br, bq), gram.Dot(ar, bq), gram.Dot(aq, br), psiRQ)
}

// err32 is never called: CORAL has no float32 bound.
func (m *coral2) err32() []float64 { return nil }

// trCGCH returns tr(C G C H) for 2×2 matrices stored row-major, with
// C = [[c0, c1], [c1, c0]].
func trCGCH(c0, c1 float64, g, h [4]float64) float64 {
	cg := [4]float64{c0*g[0] + c1*g[2], c0*g[1] + c1*g[3], c1*g[0] + c0*g[2], c1*g[1] + c0*g[3]}
	ch := [4]float64{c0*h[0] + c1*h[2], c0*h[1] + c1*h[3], c1*h[0] + c0*h[2], c1*h[1] + c0*h[3]}
	return cg[0]*ch[0] + cg[1]*ch[2] + cg[2]*ch[1] + cg[3]*ch[3]
}

// covariance returns the unbiased d×d covariance of m (divided by n−1) around
// mean; for a single row, where it is undefined, it returns 0 (the
// population covariance of one point).
func covariance(m feat.Matrix, mean []float64, mon gram.Progress) []float64 {
	d := m.D
	cov := make([]float64, d*d)
	if m.N < 2 {
		return cov
	}
	// Accumulate over slabs of rows so that the packed columns (length n)
	// stay small whatever n is.
	for r0 := 0; r0 < m.N; r0 += covSlab {
		cols := colsOf(rowSlab(m, r0, min(m.N, r0+covSlab)), mean)
		gram.Gram(cols, cols, true, gram.Dots, mon, func(t *gram.Tile) {
			for i := 0; i < t.NI; i++ {
				for j := upperFrom(t, i); j < t.NJ; j++ {
					cov[(t.I0+i)*d+t.J0+j] += t.G[i*t.LD+j]
				}
			}
		})
	}
	scale := 1 / float64(m.N-1)
	for a := 0; a < d; a++ {
		for b := a; b < d; b++ {
			cov[a*d+b] *= scale
			cov[b*d+a] = cov[a*d+b]
		}
	}
	return cov
}

// covSlab is the number of rows per slab in covariance; a variable so that
// tests can use several slabs on small inputs.
var covSlab = 4096

// rowSlab returns rows [r0, r1) of m as a Matrix sharing m's data.
func rowSlab(m feat.Matrix, r0, r1 int) feat.Matrix {
	s := feat.Matrix{N: r1 - r0, D: m.D}
	if m.F32 != nil {
		s.F32 = m.F32[r0*m.D : r1*m.D]
	} else {
		s.F64 = m.F64[r0*m.D : r1*m.D]
	}
	return s
}

// quadForms returns xᵀ F x for every vector of x, F symmetric d×d.
func quadForms(x gram.Vectors, f []float64, mon gram.Progress) []float64 {
	d := x.D
	ps := gram.NewPartials(gram.NBlocks(d), x.N)
	gram.Gram(x, gram.DenseRows(f, d, d), false, gram.Dots, mon, func(t *gram.Tile) {
		row := make([]float64, d) // small next to the tile's GEMM
		slot := ps.Slot(t.BJ)
		for i := 0; i < t.NI; i++ {
			x.Fill(t.I0+i, row)
			slot[t.I0+i] = gram.Dot(t.G[i*t.LD:][:t.NJ], row[t.J0:t.J0+t.NJ])
		}
	})
	return ps.Total()
}

// timesSym returns the |x|×d row-major matrix whose row i is F x_i, F
// symmetric d×d.
func timesSym(x gram.Vectors, f []float64, mon gram.Progress) []float64 {
	d := x.D
	out := make([]float64, x.N*d)
	gram.Gram(x, gram.DenseRows(f, d, d), false, gram.Dots, mon, func(t *gram.Tile) {
		for i := 0; i < t.NI; i++ {
			copy(out[(t.I0+i)*d+t.J0:][:t.NJ], t.G[i*t.LD:][:t.NJ])
		}
	})
	return out
}
