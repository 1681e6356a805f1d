package cost

import (
	"slices"
	"sync"

	"github.com/psda-dev/psda/psda/internal/feat"
	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/par"
	"github.com/psda-dev/psda/psda/internal/rbf"
	"github.com/psda-dev/psda/psda/internal/topk"
)

// This file holds the RBF-mixture Stage 2 for the pairs of an imbalanced
// Stage 1 (docs/method.md, "Stage 2", "Imbalanced pairs"): one side's rows
// repeat, so most of rbf2's Gram matrix of the 2P paired vectors repeats
// too.

// FactorMin is the least ratio P/n_b (P pairs, n_b rows on the smaller
// side) at which Stage 2 uses rbf2Factored instead of rbf2: a full pass
// then computes P²/2 + P·n_b + n_b²/2 kernel entries (0.78·P² at
// P = 4·n_b) against rbf2's 2P². At 2 it gains only 1.2× per full pass
// (docs/performance.md, "Stage 2 on imbalanced data"), its tables would
// double the dense path's memory, and both paths should choose alike (the
// models' costs agree to rounding, not bit for bit). A variable so that
// tests and benchmarks can force either model on the same input
// (math.MaxInt: always rbf2).
var FactorMin = 4

// factorable reports whether the pairs are those of an imbalanced Stage 1
// with the larger side A in order (pair r holds row r of A, every row of A
// once) and the smaller side B at least FactorMin times smaller. It returns
// A, B, the B row of each pair and whether A is the source.
func factorable(src, tgt feat.Matrix, pairs []feat.Pair) (a, b feat.Matrix, bIdx []int, aIsSrc, ok bool) {
	p := len(pairs)
	inOrder := func(side func(feat.Pair) int) bool {
		for r, pr := range pairs {
			if side(pr) != r {
				return false
			}
		}
		return true
	}
	few := func(n int) bool { return fewRows(p, n) }
	bIdx = make([]int, p)
	switch {
	case src.N == p && few(tgt.N) && inOrder(func(pr feat.Pair) int { return pr.S }):
		for r, pr := range pairs {
			bIdx[r] = pr.T
		}
		return src, tgt, bIdx, true, true
	case tgt.N == p && few(src.N) && inOrder(func(pr feat.Pair) int { return pr.T }):
		for r, pr := range pairs {
			bIdx[r] = pr.S
		}
		return tgt, src, bIdx, false, true
	}
	return feat.Matrix{}, feat.Matrix{}, nil, false, false
}

// rbf2Factored is rbf2 for pairs (a_r, b_{bIdx[r]}) where a covers one side
// in order and b, the other side, is small. Then
// V_rq = K_aa[r,q] − K_ab[r,b_q] − K_ab[q,b_r] + K_bb[b_r,b_q]
// (V is symmetric in the roles of source and target), so instead of the
// Gram matrix of the 2P paired vectors ((2P)²/2 kernel entries per full
// pass, 4·|rows|·P per partial one) it computes the tables K_bb and K_ab
// once, in float64 (P·n_b + n_b²/2 entries), and then only K_aa in each
// pass (P²/2, or |rows|·P), the rest by lookup: about 4× fewer kernel
// entries when n_b << P, in every kind of pass (full with the sums,
// partial, float32).
//
// With g(z) = mean_i κ(z,s_i) − mean_j κ(z,t_j), hA[r] = rowAA[r]/n_a −
// rowAB[r]/n_b and hB[j] = colAB[j]/n_a − rowBB[j]/n_b, g(a_r) = σ·hA[r]
// and g(b_j) = σ·hB[j] with σ = +1 when A is the source and −1 when it is
// the target, so ρ_r = g(s_r) − g(t_r) = hA[r] − hB[b_r] either way.
// Memory: 2·P·n_b + n_b² float64 for the tables, kept for the later passes,
// and |rows|·n_b during a pass over rows (gatherRows).
type rbf2Factored struct {
	a, b   feat.Matrix
	aIsSrc bool
	bIdx   []int
	uses   []int // pairs per row of b
	kern   *rbf.Mixture
	mon    gram.Progress
	p, nb  int
	A, B   gram.Vectors
	// Set by the first pass (tables): K_bb (n_b×n_b, row-major); for
	// each pair r, f_r = K_bb[b_r, ·] − K_ab[r, ·] stored transposed
	// (fT, n_b×P: fT[j·P + r] = f_r[j]) and K_ab[r, b_r]; K_ab transposed
	// (n_b×P). Both of V_rq's table terms, f_r[b_q] and K_ab[q, b_r], are
	// then read along rows of P entries: K_ab[·, b_r] over a tile's
	// columns q, fT[b_q, ·] over its rows r. Row-major f (P×n_b) was
	// gathered at random b_q across each 16 KiB row (n_b = 2000) once per
	// tile, ~85 bytes from memory per entry at 40000 × 2000, fT reads 8
	// (docs/performance.md, "The sparse Stage 2's candidate pass at 40000 ×
	// 2000"). The row sums of K_bb and
	// K_ab, the column sums of K_ab, and the largest table kernel value of
	// each a (index r) and b (index P+j) with another paired vector
	// (rbfErr32).
	kbb, fT, kba, abDiag, rowBB, rowAB, colAB []float64
	nearTab                                   []float64
	// cross, when set (Stage2.UseCross), is Stage 1's cross kernel, read by
	// the first pass as K_ab (crossAB: A's rows first) or its transpose
	// (crossTables).
	cross   []float64
	crossAB bool
	// Set by a full float64 pass: the row sums of K_aa and the nearest
	// other paired vector of each a and b (nearTab raised by K_aa).
	rowAA []float64
	near  *topk.Max
}

func newRBF2Factored(a, b feat.Matrix, bIdx []int, aIsSrc bool, kern *rbf.Mixture, mon gram.Progress) *rbf2Factored {
	uses := make([]int, b.N)
	for _, j := range bIdx {
		uses[j]++
	}
	return &rbf2Factored{a: a, b: b, aIsSrc: aIsSrc, bIdx: bIdx, uses: uses, kern: kern, mon: mon, p: a.N, nb: b.N,
		A: rowsOf(a, nil, nil), B: rowsOf(b, nil, nil)}
}

// at returns V_rq: V is symmetric in the roles of the two sides, so A may
// pose as the source.
func (m *rbf2Factored) at(r, q int) float64 {
	return pairKernel(m.a, m.b, m.kern, feat.Pair{S: r, T: m.bIdx[r]}, feat.Pair{S: q, T: m.bIdx[q]})
}

// tables computes K_bb and K_ab with their sums, in float64 whatever the
// pass that needs them first; after a cancellation it leaves them unset.
func (m *rbf2Factored) tables() {
	B, kern, mon, p, nb := m.B, m.kern, m.mon, m.p, m.nb
	kbb := make([]float64, nb*nb)
	gram.Gram(B, B, true, gram.SqDists, mon, func(t *gram.Tile) {
		e := make([]float64, t.NJ)
		for i := 0; i < t.NI; i++ {
			j0 := upperFrom(t, i)
			row := kbb[(t.I0+i)*nb+t.J0:][:t.NJ]
			kern.Row(row[j0:], t.G[i*t.LD+j0:][:t.NJ-j0], e[j0:])
			for j := j0; j < t.NJ; j++ {
				kbb[(t.J0+j)*nb+t.I0+i] = row[j]
			}
		}
	})
	var kab, kba, rowAB, colAB []float64
	near := topk.NewMax(p + nb)
	if m.cross != nil {
		kab, kba, rowAB, colAB = m.crossTables(near)
		m.cross = nil
	} else {
		kab, kba, rowAB, colAB = m.abTables(near)
	}
	if mon.Err() != nil {
		return
	}
	rowBB := make([]float64, nb)
	for j := range rowBB {
		row := kbb[j*nb : (j+1)*nb]
		rowBB[j] = sum(row)
		// b_j's partners in V: the other b rows, and b_j itself when
		// another pair shares it (rbf2's z holds it twice then).
		mx := near.K[p+j]
		for j2, v := range row {
			if j2 != j || m.uses[j] > 1 {
				mx = max(mx, v)
			}
		}
		near.K[p+j] = mx
	}
	// K_ab's memory becomes fT, from K_ab's transpose and K_bb's rows
	// (K_bb[b_r, j] = K_bb[j, b_r]: the mirror above copies the values).
	abDiag := make([]float64, p)
	for r, b := range m.bIdx {
		abDiag[r] = kba[b*p+r]
	}
	fT := kab
	par.Rows(nb, func(j0, j1 int) {
		for j := j0; j < j1; j++ {
			row, ab, bb := fT[j*p:(j+1)*p], kba[j*p:(j+1)*p], kbb[j*nb:(j+1)*nb]
			for r, b := range m.bIdx {
				row[r] = bb[b] - ab[r]
			}
		}
	})
	m.kbb, m.fT, m.kba, m.abDiag, m.rowBB, m.rowAB, m.colAB, m.nearTab = kbb, kab, kba, abDiag, rowBB, rowAB, colAB, near.K
}

// abTables computes K_ab by a Gram pass of A against B (the values of
// crossTables when Stage 1 kept none), its transpose, its row and column
// sums by the pass's tile blocks (gram.Partials) and its rows' and
// columns' maxima into near.
func (m *rbf2Factored) abTables(near *topk.Max) (kab, kba, rowAB, colAB []float64) {
	A, B, kern, mon, p, nb := m.A, m.B, m.kern, m.mon, m.p, m.nb
	kab, kba = make([]float64, p*nb), make([]float64, nb*p)
	rs, cs := gram.NewPartials(gram.NBlocks(nb), p), gram.NewPartials(gram.NBlocks(p), nb)
	gram.Gram(A, B, false, gram.SqDists, mon, func(t *gram.Tile) {
		rsum, csum := rs.Slot(t.BJ), cs.Slot(t.BI)
		e := make([]float64, t.NJ)
		rmax, cmax := make([]float64, t.NI), make([]float64, t.NJ)
		for i := 0; i < t.NI; i++ {
			r := t.I0 + i
			row := kab[r*nb+t.J0:][:t.NJ]
			kern.Row(row, t.G[i*t.LD:][:t.NJ], e)
			s, mx := 0.0, 0.0
			for j, v := range row {
				s += v
				mx = max(mx, v)
				csum[t.J0+j] += v
				cmax[j] = max(cmax[j], v)
				kba[(t.J0+j)*p+r] = v
			}
			rsum[r] = s
			rmax[i] = mx
		}
		near.Raise(t.I0, rmax)
		near.Raise(p+t.J0, cmax)
	})
	return kab, kba, rs.Total(), cs.Total()
}

// pass runs the Gram pass of K_aa (symmetric for a full pass; the rows
// sc.Rows against every a otherwise) and adds the table terms per tile.
func (m *rbf2Factored) pass(sc Scope, emit func(r, q0 int, v []float64)) {
	if m.fT == nil {
		if m.tables(); m.fT == nil {
			return // cancelled
		}
	}
	A, bIdx, fT, kba, mon, p, nb := m.A, m.bIdx, m.fT, m.kba, m.mon, m.p, m.nb
	rows, sym := sc.Rows, sc.Rows == nil
	rowOf := func(i int) int { return i }
	x := A
	var fR []float64 // a pass over rows: f_r of its i-th row r at fR[i·n_b:]
	if !sym {
		rowOf = func(i int) int { return rows[i] }
		x = rowsOf(m.a, rows, nil)
		fR = gatherRows(fT, rows, p, nb)
	}
	sums := sc.full() // not from a float32 pass
	var pa gram.Partials
	var near *topk.Max
	if sums {
		pa = gram.NewPartials(gram.NBlocks(p), p)
		near = topk.NewMax(p + nb)
		copy(near.K, m.nearTab)
	}
	kappa := sc.kernelRow(m.kern)
	sc.gram(x, A, sym, gram.SqDists, mon, func(t *gram.Tile) {
		kr, e, out := make([]float64, t.NJ), make([]float64, t.NJ), make([]float64, t.NJ)
		bq := bIdx[t.J0:][:t.NJ]
		// fTile[i·NJ + j] = f_r[b_q] for the tile's rows r = I0+i of a
		// symmetric pass: row b_q of fT read over the tile's rows; a pass
		// over rows reads them from fR in its entries' loop instead.
		var fTile []float64
		if sym {
			buf := tileBufs.Get().(*[]float64)
			defer tileBufs.Put(buf)
			fTile = slices.Grow((*buf)[:0], t.NI*t.NJ)[:t.NI*t.NJ]
			*buf = fTile
			transposeRows(fTile, fT, bq, p, t.I0, t.NI)
		}
		var rsum, csum, rmax, cmax []float64
		if sums {
			rsum, csum = pa.Slot(t.BJ), pa.Slot(t.BI)
			rmax, cmax = make([]float64, t.NI), make([]float64, t.NJ)
		}
		for i := 0; i < t.NI; i++ {
			r := rowOf(t.I0 + i)
			j0 := 0
			if sym {
				j0 = upperFrom(t, i)
			}
			kappa(kr[j0:], t.G[i*t.LD+j0:][:t.NJ-j0], e[j0:])
			bar := kba[bIdx[r]*p+t.J0:][:t.NJ] // bar[j] = K_ab[q, b_r]
			if !sym {
				// A pass over rows (never sums, j0 = from = 0) reads
				// f_r[b_q] in the entries' loop: a separate gather into fq
				// cost as much as the loop (the first screen's hub pass).
				fr := fR[(t.I0+i)*nb:][:nb]
				kq, oq, bb := kr[:len(bq)], out[:len(bq)], bar[:len(bq)]
				for j, b := range bq {
					oq[j] = kq[j] + fr[b] - bb[j]
				}
				emit(r, t.J0, out)
				continue
			}
			fq := fTile[i*t.NJ:][:t.NJ] // f_r[b_q] over the tile's columns
			from := j0
			if sym && t.Diag {
				from++ // the upper triangle only
			}
			if !sums {
				for j := j0; j < t.NJ; j++ {
					out[j] = kr[j] + fq[j] - bar[j]
				}
				emit(r, t.J0+from, out[from:])
				continue
			}
			// One loop for the entries and the sums (a second one over the
			// row cost as much as the first). The diagonal entry (q = r,
			// only at j0 on a diagonal tile) counts in its row sum alone;
			// kernel values are never NaN, so "if v > mx" is max.
			s, mx := 0.0, 0.0
			if from > j0 {
				v := kr[j0]
				out[j0] = v + fq[j0] - bar[j0]
				s += v
			}
			n := t.NJ - from
			kf, of, bf, ff := kr[from:][:n], out[from:][:n], bar[from:][:n], fq[from:][:n]
			cs, cm := csum[t.J0+from:][:n], cmax[from:][:n]
			for j, v := range kf {
				of[j] = v + ff[j] - bf[j]
				s += v
				cs[j] += v // on a diagonal tile csum is rsum: row q's share
				if v > mx {
					mx = v
				}
				if v > cm[j] {
					cm[j] = v
				}
			}
			rsum[r] += s
			rmax[i] = mx
			emit(r, t.J0+from, out[from:])
		}
		if sums {
			near.Raise(t.I0, rmax)
			near.Raise(t.J0, cmax)
		}
	})
	if sums && mon.Err() == nil {
		m.rowAA, m.near = pa.Total(), near
	}
}

// transposeRows sets dst[i·len(bq) + j] = src[bq[j]·p + i0 + i] for i < ni:
// the rows bq of src (p columns), from column i0 on, as the columns of dst.
// Four rows at a time, so that four streams from memory are in flight and
// each row of dst takes four adjacent values per visit.
func transposeRows(dst, src []float64, bq []int, p, i0, ni int) {
	nj := len(bq)
	j := 0
	for ; j+4 <= nj; j += 4 {
		s0, s1 := src[bq[j]*p+i0:][:ni], src[bq[j+1]*p+i0:][:ni]
		s2, s3 := src[bq[j+2]*p+i0:][:ni], src[bq[j+3]*p+i0:][:ni]
		for i := range s0 {
			d := dst[i*nj+j:][:4]
			d[0], d[1], d[2], d[3] = s0[i], s1[i], s2[i], s3[i]
		}
	}
	for ; j < nj; j++ {
		for i, v := range src[bq[j]*p+i0:][:ni] {
			dst[i*nj+j] = v
		}
	}
}

// gatherRows returns the rows f_r, r in rows, of fT (n_b × p, f_r[j] at
// fT[j·p + r]) row-major: out[i·n_b + j] = f_{rows[i]}[j]. A pass over rows
// then gathers f_r[b_q] within one row of n_b values, which stays in the
// cache over a tile row and the tiles after it; gathered from fT per entry,
// each value was a cache line from memory (a float32 pass over 5% of the
// rows at 40000 × 2000 took 3× as long, docs/performance.md). Its
// len(rows)·n_b values are at most P·n_b/2 in a pricing pass (a larger
// one runs the full pass instead).
func gatherRows(fT []float64, rows []int, p, nb int) []float64 {
	out := make([]float64, len(rows)*nb)
	par.Rows(len(rows), func(i0, i1 int) {
		for j := range nb {
			src := fT[j*p:][:p]
			for i, r := range rows[i0:i1] {
				out[(i0+i)*nb+j] = src[r]
			}
		}
	})
	return out
}

// tileBufs holds the symmetric passes' tiles of f values, so that each
// tile does not allocate gram.TileSize² of them afresh.
var tileBufs = sync.Pool{New: func() any { return new([]float64) }}

func (m *rbf2Factored) finish() ([]float64, []float64) {
	abDiag, rowBB, rowAB, colAB, rowAA, bIdx, kern, p, nb := m.abDiag, m.rowBB, m.rowAB, m.colAB, m.rowAA, m.bIdx, m.kern, m.p, m.nb
	fa, fb := float64(p), float64(nb)
	delta2 := sum(rowAA)/(fa*fa) - 2*sum(rowAB)/(fa*fb) + sum(rowBB)/(fb*fb)
	hB := make([]float64, nb)
	for j := range hB {
		hB[j] = colAB[j]/fa - rowBB[j]/fb
	}
	node, w2 := make([]float64, p), make([]float64, p)
	for r := range node {
		rho := rowAA[r]/fa - rowAB[r]/fb - hB[bIdx[r]]
		w2[r] = 2*kern.NTerms - 2*abDiag[r] - 2*rho + delta2
		node[r] = w2[r] - 2*rho + delta2
	}
	return node, w2
}

// err32 bounds, as rbf2's does, each of V_rq's four kernel values by the
// float32 bound of its two vectors (rbfErr32), although only K_aa comes
// from the float32 pass: the tables' float64 values are within that bound
// too (err32Coef and ChainErr32 exceed their float64 counterparts by ~2^29),
// so the bound holds against At, which evaluates all four afresh.
func (m *rbf2Factored) err32() []float64 {
	e := append(err32(m.A), err32(m.B)...)
	k := rbfErr32(e, slices.Max(e), m.near, m.kern)
	out := make([]float64, m.p)
	for r := range out {
		out[r] = 2 * (k[r] + k[m.p+m.bIdx[r]])
	}
	return out
}

// kernelSums returns rbf2's ΣSS, ΣST and ΣTT (every source and target
// counted once): the sums of K_aa, K_ab and K_bb.
func (m *rbf2Factored) kernelSums() (ss, st, tt float64) {
	aa, ab, bb := sum(m.rowAA), sum(m.rowAB), sum(m.rowBB)
	if m.aIsSrc {
		return aa, ab, bb
	}
	return bb, ab, aa
}
