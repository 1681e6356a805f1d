package cost

import (
	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/par"
	"github.com/psda-dev/psda/psda/internal/topk"
)

// This file holds the RBF mixture's cross kernel κ(s_i, t_j) kept from
// Stage 1's dense pass for Stage 2 (docs/method.md, "Stage 2"): Stage 1
// computes all of it, and Stage 2's V_rq needs κ(s_r, t_q) and κ(t_r, s_q)
// for every two pairs, half the kernel entries of its pass. Read from the
// table, they cost a lookup instead of 2·d multiply-adds and the
// exponentials, and Stage 2's Gram pass shrinks to the sources' and the
// targets' own Gram matrices (gram.GramHalves).
//
// The values read are the bits Stage 2 would compute: a kernel entry
// depends only on the squared distance, and the engine gives the same bits
// for ‖s − t‖² as for ‖t − s‖² wherever the two vectors sit (the sums run
// over the features in the same order, and IEEE products and sums
// commute). So the costs, and the matching, do not depend on whether the
// table was kept (TestCrossBitIdentical).

// Cross is the cross kernel of a dense Stage 1 pass: K[i·NT+j] =
// κ(s_i, t_j) for NS sources and NT targets, or, with T (kept by
// Stage1.DenseT), K[j·NS+i] = κ(s_i, t_j).
type Cross struct {
	K      []float64
	NS, NT int
	T      bool
}

// CrossBytes returns the memory the cross kernel of an n_s × n_t Stage 1
// takes.
func CrossBytes(ns, nt int) int64 { return 8 * int64(ns) * int64(nt) }

// KeepCross makes md's next full float64 pass (Dense) keep the RBF
// mixture's cross kernel, which Cross then returns, at the cost of
// CrossBytes(n_s, n_t) of memory. It reports whether it will: only the RBF
// mixture has one.
func (md *Stage1) KeepCross() bool {
	m, ok := md.model.(*rbf1)
	if ok && m.keep == nil {
		m.keep = make([]float64, md.ns*md.nt)
	}
	return ok
}

// Cross returns the kernel kept by the last full pass (KeepCross), or nil
// when none was kept or the pass was cancelled; md lets go of it.
func (md *Stage1) Cross() *Cross {
	m, ok := md.model.(*rbf1)
	if !ok || m.keep == nil || md.mon.Err() != nil {
		return nil
	}
	c := &Cross{K: m.keep, NS: md.ns, NT: md.nt, T: m.keepT}
	m.keep = nil
	return c
}

// UseCross hands md Stage 1's cross kernel c, which its full float64
// passes then read instead of computing κ between a source and a target.
// It reports whether md takes it: the RBF mixture's rbf2 model on the
// pairs of a balanced Stage 1 (P = n_s = n_t, source r in pair r) and a
// kernel not transposed (a balanced Stage 1 never is). md then
// owns c.K and permutes its columns into pair order in place, in O(P²)
// (c is no longer Stage 1's kernel); otherwise c is left untouched.
//
// For the pairs of an imbalanced Stage 1 the factored model (rbf2Factored)
// takes c as its table K_ab (the larger side A's rows first: c.T where A is
// the target, as Stage 1 keeps it) or as K_ab's transpose, in place of its
// own Gram pass of A against B (tables).
func (md *Stage2) UseCross(c *Cross) bool {
	if f, ok := md.model.(*rbf2Factored); ok && c != nil {
		return f.useCross(c)
	}
	m, ok := md.model.(*rbf2)
	if !ok || c == nil || c.NS != m.p || c.NT != m.p || len(c.K) != m.p*m.p || c.T {
		return false
	}
	for r, pr := range m.pairs {
		if pr.S != r {
			return false
		}
	}
	p := m.p
	// κ(s_r, t_q) = K[r, T_q]: gather each row through the targets of
	// the pairs, one row at a time (it stays in cache).
	par.Rows(p, func(r0, r1 int) {
		tmp := make([]float64, p)
		for r := r0; r < r1; r++ {
			row := c.K[r*p : (r+1)*p]
			for q, pr := range m.pairs {
				tmp[q] = row[pr.T]
			}
			copy(row, tmp)
		}
	})
	m.cross = c.K
	return true
}

// halves returns the paired vectors laid out for gram.GramHalves: tile b
// holds the sources of its pairs and then their targets (the pairs of z's
// tile b, whose interleaved s_r, t_r become s_r at ri and t_r at h+ri).
func (m *rbf2) halves() gram.Vectors {
	src, tgt, pairs, n := m.src, m.tgt, m.pairs, 2*m.p
	ts := gram.TileSize
	return gram.Vectors{N: n, D: src.D, Fill: func(i int, dst []float64) {
		b := i / ts
		i0, h := b*ts, min(ts, n-b*ts)/2
		if off := i - i0; off < h {
			src.Row(pairs[i0/2+off].S, dst)
		} else {
			tgt.Row(pairs[i0/2+off-h].T, dst)
		}
	}}
}

// crossRows returns rbf2.pass's kernelRows for a GramHalves tile: κ(s_r,
// s_q) and κ(t_r, t_q) from the tile's two families, κ(s_r, t_q) and
// κ(t_r, s_q) = κ(s_q, t_r) from the cross table, interleaved as z's.
func (m *rbf2) crossRows(kappa func(out, d, e []float64)) func(t *gram.Tile, ri, j0 int, ks, kt, e []float64) {
	cross, p := m.cross, m.p
	return func(t *gram.Tile, ri, j0 int, ks, kt, e []float64) {
		hi, hj := t.NI/2, t.NJ/2
		r, q0, qi0 := t.I0/2+ri, t.J0/2, j0/2
		// kappa's scratch: the parts of ks and kt overwritten below.
		ss, tt := e[:hj], e[hj:]
		kappa(ss[qi0:], t.G[ri*t.LD+qi0:][:hj-qi0], ks[2*qi0:][:hj-qi0])
		kappa(tt[qi0:], t.G[(hi+ri)*t.LD+hj+qi0:][:hj-qi0], kt[2*qi0:][:hj-qi0])
		row := cross[r*p+q0:][:hj]
		for qi := qi0; qi < hj; qi++ {
			ks[2*qi], ks[2*qi+1] = ss[qi], row[qi]
			kt[2*qi], kt[2*qi+1] = cross[(q0+qi)*p+r], tt[qi]
		}
	}
}

// useCross takes c for the first pass's K_ab (crossTables) when c is the
// kernel of A against B: n_a × n_b with A the source, n_b × n_a otherwise.
// Where c holds the larger side's rows first (c.T with A the target, as a
// Stage 1 of more targets keeps it, or A the source without c.T), it is
// K_ab itself; otherwise K_abᵀ.
func (m *rbf2Factored) useCross(c *Cross) bool {
	ns, nt := m.p, m.nb
	if !m.aIsSrc {
		ns, nt = nt, ns
	}
	if c.NS != ns || c.NT != nt || len(c.K) != m.p*m.nb || m.fT != nil {
		return false
	}
	m.cross, m.crossAB = c.K, m.aIsSrc != c.T
	return true
}

// crossTables returns what abTables computes, from Stage 1's kernel m.cross
// instead of a Gram pass: K_ab is m.cross where it holds A's rows first
// (crossAB: Stage 1 keeps it so in both orientations) and its transpose
// kba otherwise, so one of the two tables takes no new memory and the
// other is one blocked transpose.
// The sums are formed as abTables forms them, so that they are the same
// bits (TestFactoredCrossBitIdentical): the row sum of each row of K_ab
// block by block of gram.TileSize columns, each block from 0 in column
// order, one gram.Partials slot per block; the column sums block by block
// of gram.TileSize rows in row order, one slot per block; Total adds the
// slots in order. Maxima do not depend on the order.
func (m *rbf2Factored) crossTables(near *topk.Max) (kab, kba, rowAB, colAB []float64) {
	p, nb, ts := m.p, m.nb, gram.TileSize
	if m.crossAB {
		kab, kba = m.cross, make([]float64, nb*p)
		transpose(kba, kab, p, nb)
	} else {
		kab, kba = make([]float64, p*nb), m.cross
		transpose(kab, kba, nb, p)
	}
	rs, cs := gram.NewPartials(gram.NBlocks(nb), p), gram.NewPartials(gram.NBlocks(p), nb)
	par.Rows(p, func(r0, r1 int) {
		rmax := make([]float64, r1-r0)
		for r := r0; r < r1; r++ {
			row, mx := kab[r*nb:(r+1)*nb], 0.0
			for bj := range gram.NBlocks(nb) {
				s := 0.0
				for _, v := range row[bj*ts : min(nb, (bj+1)*ts)] {
					s += v
					mx = max(mx, v)
				}
				rs.Slot(bj)[r] = s
			}
			rmax[r-r0] = mx
		}
		near.Raise(r0, rmax)
	})
	par.For(gram.NBlocks(p), func() func(int) {
		cmax := make([]float64, nb)
		return func(bi int) {
			csum := cs.Slot(bi)
			for r := bi * ts; r < min(p, (bi+1)*ts); r++ {
				for j, v := range kab[r*nb : (r+1)*nb] {
					csum[j] += v
					cmax[j] = max(cmax[j], v)
				}
			}
			near.Raise(p, cmax)
		}
	})
	return kab, kba, rs.Total(), cs.Total()
}

// transpose sets dst (c × r) to the transpose of src (r × c), by blocks
// of 64 × 64 so that both stay in the cache.
func transpose(dst, src []float64, r, c int) {
	const bs = 64
	par.Rows(r, func(i0, i1 int) {
		for j0 := 0; j0 < c; j0 += bs {
			j1 := min(c, j0+bs)
			for i := i0; i < i1; i++ {
				row := src[i*c+j0 : i*c+j1]
				for j, v := range row {
					dst[(j0+j)*r+i] = v
				}
			}
		}
	})
}
