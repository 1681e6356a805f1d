package cost

import (
	"slices"

	"github.com/psda-dev/psda/psda/internal/feat"
	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/rbf"
	"github.com/psda-dev/psda/psda/internal/topk"
)

// This file holds the RBF-mixture MMD costs of both stages (docs/method.md,
// "Stage 1" and "Stage 2"), the mixture itself being internal/rbf's.

// rbf1 is Stage 1 of the RBF-mixture MMD:
// C_ij·k² = [κ(s,s) − 2g(s_i)] + [κ(t,t) + 2g(t_j)] − 2κ(s_i,t_j) + ‖δ‖²
// with g(z) = mean_i' κ(z,s_i') − mean_j' κ(z,t_j') (docs/method.md, "Stage 1"). The
// self-kernel row sums need the two self Gram matrices (symmetric halves,
// never stored); the cross kernel is stored in the result and finished in
// place once its row and column sums are known.
type rbf1 struct {
	src, tgt  feat.Matrix
	S, T      gram.Vectors
	kern      *rbf.Mixture
	deferSums bool // see NewStage1: all of them (n_s = n_t), or the larger side's
	mon       gram.Progress
	// Set by a full float64 pass: the cross kernel sums by row and column.
	rs, cs gram.Partials
	// Set by every pass over all entries: the nearest target of each
	// source and source of each target (rbfErr32).
	nearS, nearT *topk.Max
	ss, tt       []float64 // self-kernel row sums, computed once (terms)
	// keep, when set (Stage1.KeepCross), receives κ(s_i, t_j) at i·n_t+j
	// from every full float64 pass, for Stage 2 (cross.go), or at
	// j·n_s+i (keepT) from a transposed one (Stage1.DenseT).
	keep  []float64
	keepT bool
}

func newRBF1(src, tgt feat.Matrix, kern *rbf.Mixture, deferSums bool, mon gram.Progress) *rbf1 {
	return &rbf1{src: src, tgt: tgt, S: rowsOf(src, nil, nil), T: rowsOf(tgt, nil, nil), kern: kern, deferSums: deferSums, mon: mon}
}

func (m *rbf1) pass(sc Scope, emit func(i, j0 int, x []float64)) {
	ns, nt := m.src.N, m.tgt.N
	// Every pass over all entries finds the nearest partners (rbfErr32
	// allows for a float32 one); the sums need float64.
	whole := sc.Rows == nil && sc.Cols == nil
	sums := sc.full() && !(m.deferSums && ns == nt) // imbalanced, the smaller side's terms need the cross sums
	if whole {
		m.nearS, m.nearT = topk.NewMax(ns), topk.NewMax(nt)
	}
	if sums {
		m.rs, m.cs = gram.NewPartials(gram.NBlocks(nt), ns), gram.NewPartials(gram.NBlocks(ns), nt)
	}
	kappa := sc.kernelRow(m.kern)
	keep := m.keep
	if !sc.full() {
		keep = nil
	}
	// The tile's rows are the sources and its columns the targets, or
	// the other way round (sc.trans): each side's sums and maxima go to
	// its own, in the same order either way (rs[i] adds its targets' values
	// from 0 in index order per block of targets, as cs[j] its sources').
	xs, ys, ld := rowsOf(m.src, sc.Rows, nil), rowsOf(m.tgt, sc.Cols, nil), nt
	rowSums, colSums, nearRow, nearCol := m.rs, m.cs, m.nearS, m.nearT
	if sc.trans {
		xs, ys, ld = ys, xs, ns
		rowSums, colSums, nearRow, nearCol = m.cs, m.rs, m.nearT, m.nearS
	}
	if keep != nil {
		m.keepT = sc.trans
	}
	sc.gram(xs, ys, false, gram.SqDists, m.mon, func(t *gram.Tile) {
		x, e := make([]float64, t.NJ), make([]float64, t.NJ)
		rmax, cmax := make([]float64, t.NI), make([]float64, t.NJ)
		for i := 0; i < t.NI; i++ {
			kappa(x, t.G[i*t.LD:][:t.NJ], e)
			if keep != nil {
				copy(keep[(t.I0+i)*ld+t.J0:][:t.NJ], x)
			}
			if whole {
				mx := 0.0
				for j, v := range x {
					mx = max(mx, v)
					cmax[j] = max(cmax[j], v)
				}
				rmax[i] = mx
			}
			if sums {
				rsum, csum := rowSums.Slot(t.BJ), colSums.Slot(t.BI)
				s := 0.0
				for j, v := range x {
					s += v
					csum[t.J0+j] += v
				}
				rsum[t.I0+i] = s
			}
			for j, v := range x {
				x[j] = -2 * v
			}
			emit(t.I0+i, t.J0, x)
		}
		if whole {
			nearRow.Raise(t.I0, rmax)
			nearCol.Raise(t.J0, cmax)
		}
	})
}

// termsBeforePass reports that the terms are NTerms: every kernel sum is
// deferred (NewStage1's deferSums with n_s = n_t).
func (m *rbf1) termsBeforePass() bool { return m.deferSums && m.src.N == m.tgt.N }

func (m *rbf1) terms() ([]float64, []float64) {
	ns, nt := m.src.N, m.tgt.N
	fs, ft := float64(ns), float64(nt)
	rowTerm, colTerm := make([]float64, ns), make([]float64, nt)
	for i := range rowTerm {
		rowTerm[i] = m.kern.NTerms
	}
	for j := range colTerm {
		colTerm[j] = m.kern.NTerms
	}
	// Deferred, the terms of a side whose every row is used once (both
	// sides when n_s = n_t, else the larger) stay NTerms, and so does δ²,
	// paid once per pair (NewStage1).
	rows, cols := !m.deferSums || ns < nt, !m.deferSums || nt < ns
	if rows && m.ss == nil {
		m.ss = kernelRowSums(m.S, m.kern, m.mon)
	}
	if cols && m.tt == nil {
		m.tt = kernelRowSums(m.T, m.kern, m.mon)
	}
	ss, tt := m.ss, m.tt
	delta2 := 0.0
	if !m.deferSums {
		delta2 = sum(ss)/(fs*fs) - 2*sum(m.rs.Total())/(fs*ft) + sum(tt)/(ft*ft)
	}
	if rows {
		st := m.rs.Total() // Σ_j κ(s_i, t_j)
		for i := range rowTerm {
			rowTerm[i] = m.kern.NTerms - 2*(ss[i]/fs-st[i]/ft) + delta2
		}
	}
	if cols {
		ts := m.cs.Total() // Σ_i κ(s_i, t_j)
		for j := range colTerm {
			colTerm[j] = m.kern.NTerms + 2*(ts[j]/fs-tt[j]/ft)
		}
	}
	return rowTerm, colTerm
}

func (m *rbf1) at(i, j int) float64 { return -2 * m.kern.Eval(sqDist(m.src, i, nil, m.tgt, j)) }

func (m *rbf1) err32() ([]float64, []float64) {
	// X = −2κ(D).
	es, et := err32(m.S), err32(m.T)
	emax := max(slices.Max(es), slices.Max(et))
	return scaled(rbfErr32(es, emax, m.nearS, m.kern), 2), scaled(rbfErr32(et, emax, m.nearT, m.kern), 2)
}

// kernelRowSums returns Σ_i' κ(x_i, x_i') for every i, from the upper tiles
// of the symmetric self Gram matrix.
func kernelRowSums(x gram.Vectors, kern *rbf.Mixture, mon gram.Progress) []float64 {
	ps := gram.NewPartials(gram.NBlocks(x.N), x.N)
	gram.Gram(x, x, true, gram.SqDists, mon, func(t *gram.Tile) {
		rsum, csum := ps.Slot(t.BJ), ps.Slot(t.BI)
		k, e := make([]float64, t.NJ), make([]float64, t.NJ)
		for i := 0; i < t.NI; i++ {
			j0 := upperFrom(t, i)
			kern.Row(k[j0:], t.G[i*t.LD+j0:][:t.NJ-j0], e[j0:])
			s := 0.0
			for j := j0; j < t.NJ; j++ {
				v := k[j]
				s += v
				if t.I0+i != t.J0+j {
					csum[t.J0+j] += v // on a diagonal tile csum is rsum: row j's share
				}
			}
			rsum[t.I0+i] += s
		}
	})
	return ps.Total()
}

// rbf2 is Stage 2 of the RBF-mixture MMD: C_rq·k² = ‖w_r + w_q‖² = ‖w_r‖² + ‖w_q‖² + 2⟨w_r, w_q⟩ with
// v_r = φ(s_r) − φ(t_r), w_r = v_r − δ, ρ_r = ⟨v_r, δ⟩ = g(s_r) − g(t_r):
// ⟨w_r, w_q⟩ = V_rq − ρ_r − ρ_q + ‖δ‖², ‖w_r‖² = V_rr − 2ρ_r + ‖δ‖², V_rq = ⟨v_r, v_q⟩.
// One symmetric Gram pass over the 2P vectors z_2r = s_r, z_2r+1 = t_r gives
// V, and, weighting each pair by 1/(uses of its source or target), the kernel
// sums behind g and ‖δ‖²: the pairs cover every source and every target, so
// no separate self-kernel pass is needed.
type rbf2 struct {
	src, tgt feat.Matrix
	pairs    []feat.Pair
	kern     *rbf.Mixture
	mon      gram.Progress
	p, nb    int
	ws, wt   []float64    // 1/uses of each pair's source and target (useWeights)
	z        gram.Vectors // z_2r = s_r, z_2r+1 = t_r
	// Set by a full float64 pass, per pair r: SS = Σ_i' κ(s_r, s_i'),
	// ST = Σ_j' κ(s_r, t_j'), TS = Σ_i' κ(t_r, s_i'), TT = Σ_j' κ(t_r, t_j');
	// V_rr, for ‖w_r‖²; the nearest other paired vector of each z.
	pSS, pST, pTS, pTT gram.Partials
	vrr                []float64
	near               *topk.Max
	// cross, when set (Stage2.UseCross), holds κ(s_r, t_q) at r·P+q, read
	// by full float64 passes instead of computing it (cross.go).
	cross []float64
	// Set by finish: the weighted sums of SS, ST and TT (kernelSums).
	sumSS, sumST, sumTT float64
}

func newRBF2(src, tgt feat.Matrix, kern *rbf.Mixture, pairs []feat.Pair, mon gram.Progress) *rbf2 {
	p := len(pairs)
	ws, wt := useWeights(pairs, src.N, tgt.N)
	z := gram.Vectors{N: 2 * p, D: src.D, Fill: func(r int, dst []float64) {
		if r%2 == 0 {
			src.Row(pairs[r/2].S, dst)
		} else {
			tgt.Row(pairs[r/2].T, dst)
		}
	}}
	return &rbf2{src: src, tgt: tgt, pairs: pairs, kern: kern, mon: mon, p: p, nb: gram.NBlocks(2 * p),
		ws: ws, wt: wt, z: z, vrr: make([]float64, p)}
}

func (m *rbf2) pass(sc Scope, emit func(r, q0 int, v []float64)) {
	z, kern, mon, p, nb, ws, wt, vrr := m.z, m.kern, m.mon, m.p, m.nb, m.ws, m.wt, m.vrr
	if sc.Rows != nil {
		rbfPairRows(z, sc, kern, mon, emit)
		return
	}
	sums := sc.full() // not from a float32 pass
	if sums {
		m.pSS, m.pST, m.pTS, m.pTT = gram.NewPartials(nb, p), gram.NewPartials(nb, p), gram.NewPartials(nb, p), gram.NewPartials(nb, p)
		m.near = topk.NewMax(2 * p)
	}
	pSS, pST, pTS, pTT, near := m.pSS, m.pST, m.pTS, m.pTT, m.near
	kappa := sc.kernelRow(kern)
	// kernelRows sets ks and kt, from column j0 on, to the kernel rows of
	// s_r and t_r against the tile's s_q and t_q, interleaved as in z:
	// from the tile itself, or, with the cross kernel, from GramHalves'
	// tile (same family only) and the table.
	kernelRows := func(t *gram.Tile, ri, j0 int, ks, kt, e []float64) {
		kappa(ks[j0:], t.G[2*ri*t.LD+j0:][:t.NJ-j0], e[j0:])
		kappa(kt[j0:], t.G[(2*ri+1)*t.LD+j0:][:t.NJ-j0], e[j0:])
	}
	run := func(epi func(t *gram.Tile)) { sc.gram(z, z, true, gram.SqDists, mon, epi) }
	if m.cross != nil && sums {
		kernelRows = m.crossRows(kappa)
		run = func(epi func(t *gram.Tile)) { gram.GramHalves(m.halves(), mon, epi) }
	}
	run(func(t *gram.Tile) {
		r0, q0 := t.I0/2, t.J0/2
		ks, kt, e := make([]float64, t.NJ), make([]float64, t.NJ), make([]float64, t.NJ)
		out := make([]float64, t.NJ/2)
		rmax, cmax := make([]float64, t.NI), make([]float64, t.NJ) // by z index
		for ri := 0; ri < t.NI/2; ri++ {
			r := r0 + ri
			// Kernel rows of s_r and t_r against the tile's interleaved s_q, t_q.
			j0 := 2 * upperFrom(t, ri)
			kernelRows(t, ri, j0, ks, kt, e)
			from := j0/2 + b2i(t.Diag)
			if !sums {
				for qi := j0 / 2; qi < t.NJ/2; qi++ {
					out[qi] = pairV(ks, kt, qi)
				}
				emit(r, q0+from, out[from:])
				continue
			}
			rSS, rST, rTS, rTT := pSS.Slot(t.BJ), pST.Slot(t.BJ), pTS.Slot(t.BJ), pTT.Slot(t.BJ)
			cSS, cST, cTS, cTT := pSS.Slot(t.BI), pST.Slot(t.BI), pTS.Slot(t.BI), pTT.Slot(t.BI)
			var sSS, sST, sTS, sTT, mS, mT float64
			for qi := j0 / 2; qi < t.NJ/2; qi++ {
				q := q0 + qi
				kss, kst := ks[2*qi], ks[2*qi+1]
				kts, ktt := kt[2*qi], kt[2*qi+1]
				v := pairV(ks, kt, qi)
				out[qi] = v
				sSS += ws[q] * kss
				sST += wt[q] * kst
				sTS += ws[q] * kts
				sTT += wt[q] * ktt
				if q == r { // on a diagonal tile the c slots are the r slots
					vrr[r] = v
					mS, mT = max(mS, kst), max(mT, kst) // κ(s_r, s_r) is not another vector's
					continue
				}
				cSS[q] += ws[r] * kss
				cST[q] += wt[r] * kts
				cTS[q] += ws[r] * kst
				cTT[q] += wt[r] * ktt
				mS, mT = max(mS, kss, kst), max(mT, kts, ktt)
				cmax[2*qi], cmax[2*qi+1] = max(cmax[2*qi], kss, kts), max(cmax[2*qi+1], kst, ktt)
			}
			rSS[r] += sSS
			rST[r] += sST
			rTS[r] += sTS
			rTT[r] += sTT
			rmax[2*ri], rmax[2*ri+1] = mS, mT
			emit(r, q0+from, out[from:])
		}
		if sums {
			near.Raise(t.I0, rmax)
			near.Raise(t.J0, cmax)
		}
	})
}

func (m *rbf2) finish() ([]float64, []float64) {
	src, tgt, p, ws, wt, vrr := m.src, m.tgt, m.p, m.ws, m.wt, m.vrr
	pSS, pST, pTS, pTT := m.pSS, m.pST, m.pTS, m.pTT
	ss, st, ts, tt := pSS.Total(), pST.Total(), pTS.Total(), pTT.Total()
	fs, ft := float64(src.N), float64(tgt.N)
	sumSS, sumST, sumTT := 0.0, 0.0, 0.0
	for r := range ss {
		sumSS += ws[r] * ss[r]
		sumST += ws[r] * st[r]
		sumTT += wt[r] * tt[r]
	}
	m.sumSS, m.sumST, m.sumTT = sumSS, sumST, sumTT
	delta2 := sumSS/(fs*fs) - 2*sumST/(fs*ft) + sumTT/(ft*ft)
	node, w2 := make([]float64, p), make([]float64, p)
	for r := range node {
		rho := (ss[r]/fs - st[r]/ft) - (ts[r]/fs - tt[r]/ft)
		w2[r] = vrr[r] - 2*rho + delta2
		node[r] = w2[r] - 2*rho + delta2 // c_rq·k² = node_r + node_q + 2V_rq
	}
	return node, w2
}

func (m *rbf2) at(r, q int) float64 { return pairKernel(m.src, m.tgt, m.kern, m.pairs[r], m.pairs[q]) }

func (m *rbf2) err32() []float64 {
	z, kern, near, p := m.z, m.kern, m.near, m.p
	// V_rq adds four kernel values, κ(s_r, s_q), κ(s_r, t_q),
	// κ(t_r, s_q), κ(t_r, t_q), each off by at most k[x] + k[y]
	// (rbfErr32): 2(k[s_r] + k[t_r]) per pair.
	e := err32(z)
	k := rbfErr32(e, slices.Max(e), near, kern)
	out := make([]float64, p)
	for r := range out {
		out[r] = 2 * (k[2*r] + k[2*r+1])
	}
	return out
}

func (m *rbf2) kernelSums() (ss, st, tt float64) { return m.sumSS, m.sumST, m.sumTT }

// rbfPairRows is the partial pass of rbf2: V_rq for the pairs r of
// sc.rows against every pair q, from the Gram matrix of their interleaved
// vectors (z_2r = s_r, z_2r+1 = t_r) with all of z.
func rbfPairRows(z gram.Vectors, sc Scope, kern *rbf.Mixture, mon gram.Progress, emit func(r, q0 int, v []float64)) {
	sub := gram.Vectors{N: 2 * len(sc.Rows), D: z.D, Fill: func(i int, dst []float64) { z.Fill(2*sc.Rows[i/2]+i%2, dst) }}
	kappa := sc.kernelRow(kern)
	sc.gram(sub, z, false, gram.SqDists, mon, func(t *gram.Tile) {
		ks, kt, e := make([]float64, t.NJ), make([]float64, t.NJ), make([]float64, t.NJ)
		out := make([]float64, t.NJ/2)
		for ri := 0; ri < t.NI/2; ri++ {
			kappa(ks, t.G[2*ri*t.LD:][:t.NJ], e)
			kappa(kt, t.G[(2*ri+1)*t.LD:][:t.NJ], e)
			for qi := range out {
				out[qi] = pairV(ks, kt, qi)
			}
			emit(sc.Rows[t.I0/2+ri], t.J0/2, out)
		}
	})
}

// pairV returns V_rq from the kernel rows ks of s_r and kt of t_r against
// interleaved (s_q, t_q) at 2·qi and 2·qi+1.
func pairV(ks, kt []float64, qi int) float64 {
	return ks[2*qi] - ks[2*qi+1] - kt[2*qi] + kt[2*qi+1]
}

// pairKernel returns V_rq = ⟨φ(s_r) − φ(t_r), φ(s_q) − φ(t_q)⟩ for the pairs
// pr and pq, in O(d).
func pairKernel(src, tgt feat.Matrix, kern *rbf.Mixture, pr, pq feat.Pair) float64 {
	k := func(a feat.Matrix, i int, b feat.Matrix, j int) float64 { return kern.Eval(sqDist(a, i, nil, b, j)) }
	return k(src, pr.S, src, pq.S) - k(src, pr.S, tgt, pq.T) - k(tgt, pr.T, src, pq.S) + k(tgt, pr.T, tgt, pq.T)
}
