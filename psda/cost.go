package psda

import (
	"math"
	"slices"
	"sync"

	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/par"
	"github.com/psda-dev/psda/psda/internal/rbf"
	"github.com/psda-dev/psda/psda/internal/topk"
)

// This file computes the paper's cost matrices (section "Cost computation"):
// Stage 1 C^st (n_s×n_t) and Stage 2 C^MM (pairs×pairs), for the MMD with a
// linear or RBF-mixture kernel and for CORAL. Every entry is the full
// conditional expected error E[‖D̂ − D‖² | …], with all constant, row and
// column terms, so that sums of entries are the objective reported to users.
// The identities used are derived in docs/method.md and checked in
// cost_test.go against the paper's formulas evaluated directly.
//
// Precision: float64 throughout (see kernel.go); float32 input is converted
// one vector at a time.

// stage1Costs returns the n_s×n_t row-major matrix C^st_ij of the paper
// (equation after "Thus, we have" for the MMD; the Stage 1 conditional
// covariances for CORAL).
//
// The time complexity is O(n_s·n_t·d) for the linear kernel,
// O((n_s+n_t)²·d) for the RBF mixture (the self-kernel means are part of the
// full cost) and O(n_s·n_t·d + N·d·min(N, d)) for CORAL, N = n_s+n_t; memory
// is the result plus O(N·n/tileSize + min(N, d)²) (CORAL's d×d matrices only
// when N >= d, see covForm).
func stage1Costs(src, tgt Matrix, cfg Config) []float64 {
	return newStage1Model(src, tgt, cfg).dense(src.N, tgt.N, cfg.Monitor)
}

// dense returns the n_s×n_t row-major cost matrix of the model.
func (m *stage1Model) dense(ns, nt int, mon *Monitor) []float64 {
	c := make([]float64, ns*nt)
	m.pass(scope{}, func(i, j0 int, x []float64) { copy(c[i*nt+j0:], x) })
	if mon.err() != nil {
		return c
	}
	row, col := m.terms()
	par.Rows(ns, func(i0, i1 int) {
		for i := i0; i < i1; i++ {
			r := c[i*nt : (i+1)*nt]
			for j, x := range r {
				r[j] = (row[i] + col[j] + x) * m.scale
			}
		}
	})
	return c
}

// stage1Model is C^st split as c_ij = (row[i] + col[j] + X_ij)·scale, where
// only the cross part X needs a Gram pass over all (i, j): the dense path
// stores X, the sparse path (sparse.go) keeps a few entries per row and
// column and runs the pass again to price.
type stage1Model struct {
	scale float64
	// pass runs one Gram pass over the sources sc.rows and targets sc.cols
	// and calls emit(i, j0, x) with x[j] = X_{i,j0+j}, i and j indexing
	// sc.rows and sc.cols, for every tile row, concurrently from several
	// goroutines (two calls never share an i at the same time); x is only
	// valid during the call.
	pass func(sc scope, emit func(i, j0 int, x []float64))
	// terms returns row and col; valid once a full pass has completed.
	terms func() (row, col []float64)
	// at returns X_ij from the features alone (O(d)), for single entries.
	at func(i, j int) float64
	// err32, nil when the model has no float32 pass, returns es and et with
	// |X̃_ij − X_ij| <= es[i] + et[j] for X̃ from a float32 pass and X from at.
	err32 func() (es, et []float64)
	// deferSums, set before the first pass, leaves every kernel sum out of
	// the RBF mixture's terms: the self-kernel sums Σ_i' κ(s_i, s_i') and
	// Σ_j' κ(t_j, t_j'), which cost a Gram pass over each domain, and the
	// cross sums Σ_j κ(s_i, t_j) and Σ_i κ(s_i, t_j), which tie the pass to
	// float64. When n_s = n_t they only shift rows and columns, so the
	// optimal assignment is the same (and the sparse path's candidate pass
	// may run in float32); the objective misses (2ΣST − ΣSS − ΣTT)/n·scale,
	// which Stage 2's float64 pass supplies (stage2Model.kernelSums,
	// Matching.addDeferred).
	deferSums bool
}

// newStage1Model returns the split of C^st for cfg's discrepancy.
func newStage1Model(src, tgt Matrix, cfg Config) *stage1Model {
	var md *stage1Model
	switch {
	case cfg.Discrepancy == CORAL:
		md = coralStage1(src, tgt, cfg.BatchSize, cfg.Monitor)
	case cfg.Kernel == Linear:
		md = linearStage1(src, tgt, cfg.BatchSize, cfg.Monitor)
	default:
		md = rbfStage1(src, tgt, cfg.BatchSize, rbf.New(cfg.gammas()), cfg.Monitor)
	}
	if !float32Safe(src, tgt) {
		md.err32 = nil
	}
	return md
}

// float32Safe reports whether every value of the matrices is at most 1e17
// in magnitude, so that the squared norms and dot products of a float32
// pass (of the features, centred or paired: at most 4× larger) stay far
// inside float32's range (3.4e38); beyond it the models' err32 bounds do
// not hold and their passes stay in float64. O(n·d).
func float32Safe(ms ...Matrix) bool {
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

// scope restricts a Gram pass of a cost model to some rows and columns
// (nil: all) and may run it in float32 (gram32), about 1.5× faster with
// the epilogue; its values are then within the model's err32 bound of the
// float64 ones. The sparse path's pricing passes run in float32 (sparse.go);
// its candidate pass runs in float64 where it also yields the exact sums
// behind the terms, which a float32 pass never updates (Stage 1 of a
// balanced two-stage RBF matching defers them, stage1Model.deferSums, and
// runs it in float32).
type scope struct {
	rows, cols []int
	f32        bool
}

// full reports whether the pass covers every entry in float64, so that it
// may update the sums behind the model's row and column terms.
func (sc scope) full() bool { return sc.rows == nil && sc.cols == nil && !sc.f32 }

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
func rbfErr32(e []float64, emax float64, near *topk.Max, kern *rbf.Mixture) []float64 {
	out := make([]float64, len(e))
	for i, x := range e {
		d := 0.0
		if near != nil {
			d = kern.DistBelow(near.K[i]+kern.ChainErr32()) - 2*(x+emax)
		}
		out[i] = x*kern.Slope(d) + kern.ChainErr32()/2
	}
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

// kernelRow returns the RBF mixture's row evaluation in sc's precision:
// row32 in float32 passes.
func (sc scope) kernelRow(k *rbf.Mixture) func(out, d, e []float64) {
	if sc.f32 {
		return k.Row32
	}
	return k.Row
}

// gram is the engine in sc's precision.
func (sc scope) gram(x, y gram.Vectors, sym bool, kind gram.Kind, mon *Monitor, epi func(t *gram.Tile)) {
	if sc.f32 {
		gram.Gram32(x, y, sym, kind, progress{mon}, epi)
	} else {
		gram.Gram(x, y, sym, kind, progress{mon}, epi)
	}
}

// emitRows hands every row of a tile to emit: the pass of a cross part that
// is the Gram entry itself.
func emitRows(emit func(i, j0 int, x []float64)) func(t *gram.Tile) {
	return func(t *gram.Tile) {
		for i := 0; i < t.NI; i++ {
			emit(t.I0+i, t.J0, t.G[i*t.LD:][:t.NJ])
		}
	}
}

// stage2Costs returns the m×m symmetric row-major matrix C^MM_rq of the paper
// over the Stage 1 pairs, and m: m = len(pairs) when that is even, otherwise
// len(pairs)+1 with node m−1 a dummy pair sitting at the domain means (for
// the MMD w_∅ = 0; for CORAL centred vectors a_∅ = b_∅ = 0), so that C(r, ∅)
// is the cost of leaving pair r single. The diagonal is 0 (ignored by the
// matching). Pairs may repeat a source or a target, but must use every
// source and every target at least once, as Stage 1's pairs do: the RBF
// mixture takes the domain kernel means from the pairs' own Gram matrix.
//
// The time complexity is O(P²·d) for the linear kernel, O(P²·d) with a 4×
// larger constant for the RBF mixture (the Gram matrix of the 2P paired
// vectors) and O(P²·d + N·d·min(N, d)) for CORAL, N = n_s+n_t; memory is the
// result plus O(P·P/tileSize) for the RBF mixture and O(N·d + min(N, d)²) for
// CORAL (see covForm).
func stage2Costs(src, tgt Matrix, cfg Config, pairs []Pair) ([]float64, int) {
	c, m, _ := stage2Dense(src, tgt, cfg, pairs)
	return c, m
}

// stage2Dense is stage2Costs that also returns the model, whose sums Match
// reads after the pass.
func stage2Dense(src, tgt Matrix, cfg Config, pairs []Pair) ([]float64, int, *stage2Model) {
	md := newStage2Model(src, tgt, cfg, pairs, true)
	c, m := md.dense(cfg.Monitor)
	return c, m, md
}

// dense returns the m×m symmetric row-major cost matrix of the model, and m.
func (md *stage2Model) dense(mon *Monitor) ([]float64, int) {
	m := md.m
	c := make([]float64, m*m)
	md.pass(scope{}, func(r, q0 int, v []float64) { copy(c[r*m+q0:], v) })
	if mon.err() != nil {
		return c, m
	}
	node, single := md.finish()
	finishStage2(c, m, md.p, md.scale, func(r, q int, v float64) float64 {
		return node[r] + node[q] + md.coef*v
	}, single, mon)
	return c, m
}

// stage2Model is C^MM over the P pairs as
// c_rq = (node[r] + node[q] + coef·V_rq)·scale, where the cross part V needs
// a Gram pass over all pairs; single[r]·scale is the cost of leaving pair r
// alone (the dummy node when P is odd). CORAL's cross part takes two Gram
// products per block of pairs (coralStage2).
type stage2Model struct {
	p, m        int
	scale, coef float64
	// pass runs one Gram pass and calls emit(r, q0, v) with v[k] = V_{r,q0+k},
	// concurrently from several goroutines (two calls never share an r at
	// the same time); v is only valid during the call. A full pass (sc.rows
	// nil) emits the upper triangle q0+k > r only; with sc.rows it emits
	// every q (r itself included) for the pairs r of sc.rows. sc.cols must be
	// nil, and so must sc.rows for the factored model (dense path only).
	pass func(sc scope, emit func(r, q0 int, v []float64))
	// finish returns node and single; valid once a full pass has completed
	// (approximate after a float32 one).
	finish func() (node, single []float64)
	// at returns V_rq from the features alone (O(d)), for single entries;
	// safe for concurrent use.
	at func(r, q int) float64
	// err32, nil when the model has no float32 pass, returns e with
	// |Ṽ_rq − V_rq| <= e[r] + e[q] for Ṽ from a float32 pass and V from at.
	err32 func() []float64
	// kernelSums, when not nil, returns the sums over all pairs of the
	// kernel sums of their sources with all sources, of their sources with
	// all targets and of their targets with all targets, each weighted by
	// 1/uses (ΣSS, ΣST and ΣTT: every source and target counted once); valid
	// once a float64 full pass has completed.
	kernelSums func() (ss, st, tt float64)
}

// newStage2Model returns the split of C^MM; factored allows the
// RBF mixture to store the kernel against the smaller side when that saves
// work (dense path only: it holds P·n_small values).
func newStage2Model(src, tgt Matrix, cfg Config, pairs []Pair, factored bool) *stage2Model {
	var md *stage2Model
	switch {
	case cfg.Discrepancy == CORAL:
		md = coralStage2(src, tgt, cfg.BatchSize, pairs, cfg.Monitor)
	case cfg.Kernel == Linear:
		md = linearStage2(src, tgt, cfg.BatchSize, pairs, cfg.Monitor)
	default:
		kern := rbf.New(cfg.gammas())
		if a, b, bIdx, ok := factorable(src, tgt, pairs); ok && factored {
			md = rbfStage2Factored(a, b, bIdx, cfg.BatchSize, kern, cfg.Monitor)
		} else {
			md = rbfStage2(src, tgt, cfg.BatchSize, kern, pairs, cfg.Monitor)
		}
	}
	if !float32Safe(src, tgt) {
		md.err32 = nil
	}
	return md
}

// stage2Size returns the number of nodes of the Stage 2 matching.
func stage2Size(p int) int { return p + p%2 }

// pairIndex returns the source and target rows of the pairs.
func pairIndex(pairs []Pair) (is, js []int) {
	is, js = make([]int, len(pairs)), make([]int, len(pairs))
	for r, p := range pairs {
		is[r], js[r] = p.S, p.T
	}
	return is, js
}

// linearStage1: with φ(x) = x, C_ij = ‖(s_i − δ) − t_j‖²/k², δ = s̄ − t̄.
func linearStage1(src, tgt Matrix, k int, mon *Monitor) *stage1Model {
	delta := sub(colMeans(src), colMeans(tgt))
	zr, zc := make([]float64, src.N), make([]float64, tgt.N)
	return &stage1Model{
		scale: 1 / float64(k*k),
		pass: func(sc scope, emit func(i, j0 int, x []float64)) {
			sc.gram(rowsOf(src, sc.rows, delta), rowsOf(tgt, sc.cols, nil), false, gram.SqDists, mon, emitRows(emit))
		},
		terms: func() ([]float64, []float64) { return zr, zc },
		at:    func(i, j int) float64 { return sqDist(src, i, delta, tgt, j) },
		err32: func() ([]float64, []float64) { return err32(rowsOf(src, nil, delta)), err32(rowsOf(tgt, nil, nil)) },
	}
}

// linearStage2: C_rq = ‖w_r + w_q‖²/k² with explicit w_r = s_r − t_r − δ,
// computed as the squared distance between w_r and −w_q.
func linearStage2(src, tgt Matrix, k int, pairs []Pair, mon *Monitor) *stage2Model {
	delta := sub(colMeans(src), colMeans(tgt))
	p := len(pairs)
	w := func(sign float64) gram.Vectors {
		return gram.Vectors{N: p, D: src.D, Fill: func(r int, dst []float64) {
			src.Row(pairs[r].S, dst)
			for k := range dst {
				dst[k] = sign * (dst[k] - tgt.At(pairs[r].T, k) - delta[k])
			}
		}}
	}
	wp := w(1)
	return &stage2Model{
		p: p, m: stage2Size(p), scale: 1 / float64(k*k), coef: 1,
		pass: func(sc scope, emit func(r, q0 int, v []float64)) {
			if sc.rows != nil {
				sub := gram.Vectors{N: len(sc.rows), D: src.D, Fill: func(i int, dst []float64) { wp.Fill(sc.rows[i], dst) }}
				sc.gram(sub, w(-1), false, gram.SqDists, mon, func(t *gram.Tile) {
					for i := 0; i < t.NI; i++ {
						emit(sc.rows[t.I0+i], t.J0, t.G[i*t.LD:][:t.NJ])
					}
				})
				return
			}
			sc.gram(wp, w(-1), true, gram.SqDists, mon, func(t *gram.Tile) {
				for i := 0; i < t.NI; i++ {
					j := upperFrom(t, i) + b2i(t.Diag)
					emit(t.I0+i, t.J0+j, t.G[i*t.LD+j:][:t.NJ-j])
				}
			})
		},
		finish: func() ([]float64, []float64) {
			single := make([]float64, p)
			row := make([]float64, src.D)
			for r := range single {
				wp.Fill(r, row)
				single[r] = gram.Dot(row, row)
			}
			return make([]float64, p), single
		},
		err32: func() []float64 { return err32(wp) },
		at: func(r, q int) float64 {
			// ‖w_r + w_q‖² = ‖(s_r + s_q − 2δ) − (t_r + t_q)‖².
			v := 0.0
			for c, dc := range delta {
				x := src.At(pairs[r].S, c) + src.At(pairs[q].S, c) - 2*dc - tgt.At(pairs[r].T, c) - tgt.At(pairs[q].T, c)
				v += x * x
			}
			return v
		},
	}
}

// b2i returns 1 for true and 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rbfStage1: C_ij·k² = [κ(s,s) − 2g(s_i)] + [κ(t,t) + 2g(t_j)] − 2κ(s_i,t_j) + ‖δ‖²
// with g(z) = mean_i' κ(z,s_i') − mean_j' κ(z,t_j') (docs/method.md, "Stage 1"). The
// self-kernel row sums need the two self Gram matrices (symmetric halves,
// never stored); the cross kernel is stored in the result and finished in
// place once its row and column sums are known.
func rbfStage1(src, tgt Matrix, k int, kern *rbf.Mixture, mon *Monitor) *stage1Model {
	S, T := rowsOf(src, nil, nil), rowsOf(tgt, nil, nil)
	ns, nt := src.N, tgt.N
	var rs, cs gram.Partials
	var nearS, nearT *topk.Max // nearest target of each source and source of each target
	md := &stage1Model{scale: 1 / float64(k*k)}
	md.pass = func(sc scope, emit func(i, j0 int, x []float64)) {
		// Every pass over all entries finds the nearest partners (rbfErr32
		// allows for a float32 one); the sums need float64.
		whole := sc.rows == nil && sc.cols == nil
		sums := sc.full() && !md.deferSums
		if whole {
			nearS, nearT = topk.NewMax(ns), topk.NewMax(nt)
		}
		if sums {
			rs, cs = gram.NewPartials(gram.NBlocks(nt), ns), gram.NewPartials(gram.NBlocks(ns), nt)
		}
		kappa := sc.kernelRow(kern)
		sc.gram(rowsOf(src, sc.rows, nil), rowsOf(tgt, sc.cols, nil), false, gram.SqDists, mon, func(t *gram.Tile) {
			x, e := make([]float64, t.NJ), make([]float64, t.NJ)
			rmax, cmax := make([]float64, t.NI), make([]float64, t.NJ)
			for i := 0; i < t.NI; i++ {
				kappa(x, t.G[i*t.LD:][:t.NJ], e)
				if whole {
					m := 0.0
					for j, v := range x {
						m = max(m, v)
						cmax[j] = max(cmax[j], v)
					}
					rmax[i] = m
				}
				if sums {
					rsum, csum := rs.Slot(t.BJ), cs.Slot(t.BI)
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
				nearS.Raise(t.I0, rmax)
				nearT.Raise(t.J0, cmax)
			}
		})
	}
	var ss, tt []float64 // self-kernel row sums, computed once
	md.terms = func() ([]float64, []float64) {
		fs, ft := float64(ns), float64(nt)
		rowTerm, colTerm := make([]float64, ns), make([]float64, nt)
		if md.deferSums {
			for i := range rowTerm {
				rowTerm[i] = kern.NTerms
			}
			for j := range colTerm {
				colTerm[j] = kern.NTerms
			}
			return rowTerm, colTerm
		}
		if ss == nil {
			ss, tt = kernelRowSums(S, kern, mon), kernelRowSums(T, kern, mon)
		}
		st, ts := rs.Total(), cs.Total() // Σ_j κ(s_i, t_j), Σ_i κ(s_i, t_j)
		delta2 := sum(ss)/(fs*fs) - 2*sum(st)/(fs*ft) + sum(tt)/(ft*ft)
		for i := range rowTerm {
			rowTerm[i] = kern.NTerms - 2*(ss[i]/fs-st[i]/ft) + delta2
		}
		for j := range colTerm {
			colTerm[j] = kern.NTerms + 2*(ts[j]/fs-tt[j]/ft)
		}
		return rowTerm, colTerm
	}
	md.at = func(i, j int) float64 { return -2 * kern.Eval(sqDist(src, i, nil, tgt, j)) }
	md.err32 = func() ([]float64, []float64) {
		// X = −2κ(D).
		es, et := err32(S), err32(T)
		emax := max(slices.Max(es), slices.Max(et))
		return scaled(rbfErr32(es, emax, nearS, kern), 2), scaled(rbfErr32(et, emax, nearT, kern), 2)
	}
	return md
}

// kernelRowSums returns Σ_i' κ(x_i, x_i') for every i, from the upper tiles
// of the symmetric self Gram matrix.
func kernelRowSums(x gram.Vectors, kern *rbf.Mixture, mon *Monitor) []float64 {
	ps := gram.NewPartials(gram.NBlocks(x.N), x.N)
	gram.Gram(x, x, true, gram.SqDists, progress{mon}, func(t *gram.Tile) {
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

// rbfStage2 evaluates C_rq·k² = ‖w_r + w_q‖² = ‖w_r‖² + ‖w_q‖² + 2⟨w_r, w_q⟩ with
// v_r = φ(s_r) − φ(t_r), w_r = v_r − δ, ρ_r = ⟨v_r, δ⟩ = g(s_r) − g(t_r):
// ⟨w_r, w_q⟩ = V_rq − ρ_r − ρ_q + ‖δ‖², ‖w_r‖² = V_rr − 2ρ_r + ‖δ‖², V_rq = ⟨v_r, v_q⟩.
// One symmetric Gram pass over the 2P vectors z_2r = s_r, z_2r+1 = t_r gives
// V, and, weighting each pair by 1/(uses of its source or target), the kernel
// sums behind g and ‖δ‖²: the pairs cover every source and every target, so
// no separate self-kernel pass is needed.
func rbfStage2(src, tgt Matrix, k int, kern *rbf.Mixture, pairs []Pair, mon *Monitor) *stage2Model {
	p := len(pairs)
	ws, wt := useWeights(pairs, src.N, tgt.N)
	z := gram.Vectors{N: 2 * p, D: src.D, Fill: func(r int, dst []float64) {
		if r%2 == 0 {
			src.Row(pairs[r/2].S, dst)
		} else {
			tgt.Row(pairs[r/2].T, dst)
		}
	}}
	nb := gram.NBlocks(2 * p)
	// Per pair r: SS = Σ_i' κ(s_r, s_i'), ST = Σ_j' κ(s_r, t_j'), TS = Σ_i' κ(t_r, s_i'), TT = Σ_j' κ(t_r, t_j').
	var pSS, pST, pTS, pTT gram.Partials
	vrr := make([]float64, p) // V_rr, for ‖w_r‖²
	var near *topk.Max        // nearest other paired vector of each z
	pass := func(sc scope, emit func(r, q0 int, v []float64)) {
		if sc.rows != nil {
			rbfPairRows(z, sc, kern, mon, emit)
			return
		}
		sums := sc.full() // not from a float32 pass
		if sums {
			pSS, pST, pTS, pTT = gram.NewPartials(nb, p), gram.NewPartials(nb, p), gram.NewPartials(nb, p), gram.NewPartials(nb, p)
			near = topk.NewMax(2 * p)
		}
		kappa := sc.kernelRow(kern)
		sc.gram(z, z, true, gram.SqDists, mon, func(t *gram.Tile) {
			r0, q0 := t.I0/2, t.J0/2
			ks, kt, e := make([]float64, t.NJ), make([]float64, t.NJ), make([]float64, t.NJ)
			out := make([]float64, t.NJ/2)
			rmax, cmax := make([]float64, t.NI), make([]float64, t.NJ) // by z index
			for ri := 0; ri < t.NI/2; ri++ {
				r := r0 + ri
				// Kernel rows of s_r and t_r against the tile's interleaved s_q, t_q.
				j0 := 2 * upperFrom(t, ri)
				kappa(ks[j0:], t.G[2*ri*t.LD+j0:][:t.NJ-j0], e[j0:])
				kappa(kt[j0:], t.G[(2*ri+1)*t.LD+j0:][:t.NJ-j0], e[j0:])
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
	var sumSS, sumST, sumTT float64
	finish := func() ([]float64, []float64) {
		ss, st, ts, tt := pSS.Total(), pST.Total(), pTS.Total(), pTT.Total()
		fs, ft := float64(src.N), float64(tgt.N)
		sumSS, sumST, sumTT = 0, 0, 0
		for r := range ss {
			sumSS += ws[r] * ss[r]
			sumST += ws[r] * st[r]
			sumTT += wt[r] * tt[r]
		}
		delta2 := sumSS/(fs*fs) - 2*sumST/(fs*ft) + sumTT/(ft*ft)
		node, w2 := make([]float64, p), make([]float64, p)
		for r := range node {
			rho := (ss[r]/fs - st[r]/ft) - (ts[r]/fs - tt[r]/ft)
			w2[r] = vrr[r] - 2*rho + delta2
			node[r] = w2[r] - 2*rho + delta2 // c_rq·k² = node_r + node_q + 2V_rq
		}
		return node, w2
	}
	return &stage2Model{p: p, m: stage2Size(p), scale: 1 / float64(k*k), coef: 2, pass: pass, finish: finish,
		at: func(r, q int) float64 { return pairKernel(src, tgt, kern, pairs[r], pairs[q]) },
		err32: func() []float64 {
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
		},
		kernelSums: func() (float64, float64, float64) { return sumSS, sumST, sumTT }}
}

// factorMin is the least ratio P/n_b at which rbfStage2 stores the cross
// kernel instead of computing the Gram matrix of all 2P paired vectors; a
// variable so that tests can force either path.
var factorMin = 4

// factorable reports whether the pairs are those of an imbalanced Stage 1
// with the larger side A in order (pair r holds row r of A, every row of A
// once) and the smaller side B at least factorMin times smaller. It returns
// A, B and the B row of each pair.
func factorable(src, tgt Matrix, pairs []Pair) (a, b Matrix, bIdx []int, ok bool) {
	p := len(pairs)
	inOrder := func(side func(Pair) int) bool {
		for r, pr := range pairs {
			if side(pr) != r {
				return false
			}
		}
		return true
	}
	bIdx = make([]int, p)
	switch {
	case src.N == p && tgt.N*factorMin <= p && inOrder(func(pr Pair) int { return pr.S }):
		for r, pr := range pairs {
			bIdx[r] = pr.T
		}
		return src, tgt, bIdx, true
	case tgt.N == p && src.N*factorMin <= p && inOrder(func(pr Pair) int { return pr.T }):
		for r, pr := range pairs {
			bIdx[r] = pr.S
		}
		return tgt, src, bIdx, true
	}
	return Matrix{}, Matrix{}, nil, false
}

// rbfStage2Factored is rbfStage2 for pairs (a_r, b_{bIdx[r]}) where a covers
// one side in order and b, the other side, is small. Then
// V_rq = K_aa[r,q] − K_ab[r,b_q] − K_ab[q,b_r] + K_bb[b_r,b_q]
// (V is symmetric in the roles of source and target), so instead of the
// Gram matrix of the 2P paired vectors ((2P)²/2 kernel entries) it computes
// K_bb and K_ab once and stores them (2·P·n_b + n_b² values), then K_aa tile
// by tile (P²/2 entries): about 4× fewer kernel entries when n_b << P.
// With g(z) = mean_i κ(z,s_i) − mean_j κ(z,t_j), hA[r] = rowAA[r]/n_a −
// rowAB[r]/n_b and hB[j] = colAB[j]/n_a − rowBB[j]/n_b, g(a_r) = σ·hA[r]
// and g(b_j) = σ·hB[j] with σ = +1 when A is the source and −1 when it is
// the target, so ρ_r = g(s_r) − g(t_r) = hA[r] − hB[b_r] either way.
// Memory: the result plus 2·P·n_b + n_b² float64.
func rbfStage2Factored(a, b Matrix, bIdx []int, k int, kern *rbf.Mixture, mon *Monitor) *stage2Model {
	// V is symmetric in the roles of the two sides, so A may pose as the source.
	at := func(r, q int) float64 { return pairKernel(a, b, kern, Pair{r, bIdx[r]}, Pair{q, bIdx[q]}) }
	p, nb := a.N, b.N
	A, B := rowsOf(a, nil, nil), rowsOf(b, nil, nil)
	var kbb, kab, kba, rowAB, colAB, rowAA []float64
	pass := func(_ scope, emit func(r, q0 int, v []float64)) {
		kbb = make([]float64, nb*nb)
		gram.Gram(B, B, true, gram.SqDists, progress{mon}, func(t *gram.Tile) {
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
		// K_ab twice, row-major and transposed, so that both of its terms in
		// V_rq are read along rows (a strided read misses the cache per entry).
		kab, kba = make([]float64, p*nb), make([]float64, nb*p)
		rs, cs := gram.NewPartials(gram.NBlocks(nb), p), gram.NewPartials(gram.NBlocks(p), nb)
		gram.Gram(A, B, false, gram.SqDists, progress{mon}, func(t *gram.Tile) {
			rsum, csum := rs.Slot(t.BJ), cs.Slot(t.BI)
			e := make([]float64, t.NJ)
			for i := 0; i < t.NI; i++ {
				r := t.I0 + i
				row := kab[r*nb+t.J0:][:t.NJ]
				kern.Row(row, t.G[i*t.LD:][:t.NJ], e)
				s := 0.0
				for j, v := range row {
					s += v
					csum[t.J0+j] += v
					kba[(t.J0+j)*p+r] = v
				}
				rsum[r] = s
			}
		})
		rowAB, colAB = rs.Total(), cs.Total()
		pa := gram.NewPartials(gram.NBlocks(p), p)
		gram.Gram(A, A, true, gram.SqDists, progress{mon}, func(t *gram.Tile) {
			rsum, csum := pa.Slot(t.BJ), pa.Slot(t.BI)
			kr, e, out := make([]float64, t.NJ), make([]float64, t.NJ), make([]float64, t.NJ)
			for i := 0; i < t.NI; i++ {
				r := t.I0 + i
				j0 := upperFrom(t, i)
				kern.Row(kr[j0:], t.G[i*t.LD+j0:][:t.NJ-j0], e[j0:])
				br := bIdx[r]
				abr, bbr := kab[r*nb:(r+1)*nb], kbb[br*nb:(br+1)*nb]
				bar := kba[br*p+t.J0:][:t.NJ] // K_ab[q, b_r] for the tile's q
				bq := bIdx[t.J0:][:t.NJ]
				s := 0.0
				for j := j0; j < t.NJ; j++ {
					q, v := t.J0+j, kr[j]
					s += v
					if q != r {
						csum[q] += v // on a diagonal tile csum is rsum: row q's share
					}
					out[j] = v - abr[bq[j]] - bar[j] + bbr[bq[j]]
				}
				rsum[r] += s
				from := j0 + b2i(t.Diag)
				emit(r, t.J0+from, out[from:])
			}
		})
		rowAA = pa.Total()
	}
	finish := func() ([]float64, []float64) {
		rowBB := make([]float64, nb)
		for j := range rowBB {
			rowBB[j] = sum(kbb[j*nb : (j+1)*nb])
		}
		fa, fb := float64(p), float64(nb)
		delta2 := sum(rowAA)/(fa*fa) - 2*sum(rowAB)/(fa*fb) + sum(rowBB)/(fb*fb)
		hB := make([]float64, nb)
		for j := range hB {
			hB[j] = colAB[j]/fa - rowBB[j]/fb
		}
		node, w2 := make([]float64, p), make([]float64, p)
		for r := range node {
			rho := rowAA[r]/fa - rowAB[r]/fb - hB[bIdx[r]]
			w2[r] = 2*kern.NTerms - 2*kab[r*nb+bIdx[r]] - 2*rho + delta2
			node[r] = w2[r] - 2*rho + delta2
		}
		return node, w2
	}
	return &stage2Model{p: p, m: stage2Size(p), scale: 1 / float64(k*k), coef: 2, pass: pass, finish: finish,
		at: at}
}

// finishStage2 replaces every off-diagonal entry (r, q) of the first p nodes
// by cost(r, q, entry)·scale, sets the dummy row and column (when m > p) to
// single[r]·scale and the diagonal to 0.
// Only the upper triangle is evaluated and then mirrored, so the result is
// exactly symmetric.
//
// After mon is cancelled it does nothing: the caller discards the matrix, and
// this pass over it would only delay the return.
func finishStage2(c []float64, m, p int, scale float64, cost func(r, q int, v float64) float64, single []float64, mon *Monitor) {
	if mon.err() != nil {
		return
	}
	par.Rows(p, func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			row := c[r*m : r*m+p]
			for q := r + 1; q < p; q++ {
				row[q] = cost(r, q, row[q]) * scale
			}
			row[r] = 0
			if m > p {
				c[r*m+p] = single[r] * scale
			}
		}
	})
	c[(m-1)*m+m-1] = 0
	mirrorUpper(c, m)
}

// mirrorUpper copies the strict upper triangle of the m×m matrix c into its
// lower triangle, block by block to stay in cache.
func mirrorUpper(c []float64, m int) {
	const b = 64
	par.Rows((m+b-1)/b, func(b0, b1 int) {
		for bi := b0; bi < b1; bi++ {
			for bj := bi; bj*b < m; bj++ {
				for r := bi * b; r < min(m, (bi+1)*b); r++ {
					for q := max(r+1, bj*b); q < min(m, (bj+1)*b); q++ {
						c[q*m+r] = c[r*m+q]
					}
				}
			}
		}
	})
}

// upperFrom returns the first column of row i that a symmetric pass visits:
// on a diagonal tile only the upper triangle (j >= i), elsewhere every column.
func upperFrom(t *gram.Tile, i int) int {
	if t.Diag {
		return i
	}
	return 0
}

// useWeights returns 1/(number of pairs using the pair's source) and
// 1/(number using its target) for every pair.
func useWeights(pairs []Pair, ns, nt int) (ws, wt []float64) {
	cs, ct := make([]int, ns), make([]int, nt)
	for _, pr := range pairs {
		cs[pr.S]++
		ct[pr.T]++
	}
	ws, wt = make([]float64, len(pairs)), make([]float64, len(pairs))
	for r, pr := range pairs {
		ws[r], wt[r] = 1/float64(cs[pr.S]), 1/float64(ct[pr.T])
	}
	return ws, wt
}

// covariance returns the unbiased d×d covariance of m (divided by n−1) around
// mean; for a single row, where it is undefined, it returns 0 (the
// population covariance of one point).
func covariance(m Matrix, mean []float64, mon *Monitor) []float64 {
	d := m.D
	cov := make([]float64, d*d)
	if m.N < 2 {
		return cov
	}
	// Accumulate over slabs of rows so that the packed columns (length n)
	// stay small whatever n is.
	for r0 := 0; r0 < m.N; r0 += covSlab {
		cols := colsOf(rowSlab(m, r0, min(m.N, r0+covSlab)), mean)
		gram.Gram(cols, cols, true, gram.Dots, progress{mon}, func(t *gram.Tile) {
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
func rowSlab(m Matrix, r0, r1 int) Matrix {
	s := Matrix{N: r1 - r0, D: m.D}
	if m.F32 != nil {
		s.F32 = m.F32[r0*m.D : r1*m.D]
	} else {
		s.F64 = m.F64[r0*m.D : r1*m.D]
	}
	return s
}

// quadForms returns xᵀ F x for every vector of x, F symmetric d×d.
func quadForms(x gram.Vectors, f []float64, mon *Monitor) []float64 {
	d := x.D
	ps := gram.NewPartials(gram.NBlocks(d), x.N)
	gram.Gram(x, gram.DenseRows(f, d, d), false, gram.Dots, progress{mon}, func(t *gram.Tile) {
		row := make([]float64, d) // small next to the tile's GEMM
		slot := ps.Slot(t.BJ)
		for i := 0; i < t.NI; i++ {
			x.Fill(t.I0+i, row)
			slot[t.I0+i] = gram.Dot(t.G[i*t.LD:][:t.NJ], row[t.J0:t.J0+t.NJ])
		}
	})
	return ps.Total()
}

// coralStage1 evaluates, with centred a_i = s_i − s̄, b_j = t_j − t̄, the paper's
// Σ̂_s^(i) = P_s + a_i a_iᵀ/k (P the population covariance) and
// E = Σ_t/n_t − Σ_s/n_s:
// C_ij = ‖E + (a_i a_iᵀ − b_j b_jᵀ)/k‖_F²
// = ‖E‖² + (2/k)(a_iᵀE a_i − b_jᵀE b_j) + (‖a_i‖⁴ + ‖b_j‖⁴ − 2(a_i·b_j)²)/k².
func coralStage1(src, tgt Matrix, k int, mon *Monitor) *stage1Model {
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
	return &stage1Model{
		scale: 1,
		pass: func(sc scope, emit func(i, j0 int, x []float64)) {
			sc.gram(rowsOf(src, sc.rows, ms), rowsOf(tgt, sc.cols, mt), false, gram.Dots, mon, func(t *gram.Tile) {
				x := make([]float64, t.NJ)
				for i := 0; i < t.NI; i++ {
					for j, g := range t.G[i*t.LD:][:t.NJ] {
						x[j] = -2 * g * g / (fk * fk)
					}
					emit(t.I0+i, t.J0, x)
				}
			})
		},
		terms: func() ([]float64, []float64) { return qa, qb },
		at: func(i, j int) float64 {
			g := 0.0
			for c := range ms {
				g += (src.At(i, c) - ms[c]) * (tgt.At(j, c) - mt[c])
			}
			return -2 * g * g / (fk * fk)
		},
	}
}

// coralStage2 evaluates the paper's Stage 2 conditional covariance
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
func coralStage2(src, tgt Matrix, k int, pairs []Pair, mon *Monitor) *stage2Model {
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
	// rank returns ‖A2 Ca A2ᵀ − B2 Ca B2ᵀ‖_F² from the Gram entries among a_r, a_q, b_r, b_q.
	rank := func(r int, aq, bq, arbq, aqbr, aqq, bqq, aqbq float64) float64 {
		gaa := [4]float64{naa[r], aq, aq, aqq}
		gbb := [4]float64{nbb[r], bq, bq, bqq}
		gab := [4]float64{nab[r], arbq, aqbr, aqbq}
		gba := [4]float64{nab[r], aqbr, arbq, aqbq}
		return trCGCH(ca0, ca1, gaa, gaa) + trCGCH(ca0, ca1, gbb, gbb) - 2*trCGCH(ca0, ca1, gab, gba)
	}
	// rank(r, q) = rank0[r] + rank0[q] + terms in the cross Gram entries
	// (rank0[r] = rank(r, 0, …) = ‖a_r‖⁴ + ‖b_r‖⁴ − 2(a_r·b_r)², times 1/k²);
	// node[r] collects every term of C_rq that depends on r alone, so that
	// the cross part ranks candidates by what pairs r and q together.
	rank0, node, single := make([]float64, p), make([]float64, p), make([]float64, p)
	for r := range rank0 {
		rank0[r] = rank(r, 0, 0, 0, 0, 0, 0, 0)
		node[r] = f2/2 + 2*psi[r]/fk + rank0[r]
		single[r] = node[r] + f2/2 // C(r, ∅): a_∅ = b_∅ = 0
	}
	// cross is the cross part from the Gram entries among a_r, b_r, a_q, b_q
	// and ψ_rq = a_rᵀF a_q − b_rᵀF b_q.
	cross := func(r, q int, aq, bq, arbq, aqbr, psiRQ float64) float64 {
		return rank(r, aq, bq, arbq, aqbr, naa[q], nbb[q], nab[q]) - rank0[r] - rank0[q] - 4*beta*psiRQ
	}
	// z_2r = a_r, z_2r+1 = b_r; x_r = [a_r, b_r]; y_r = [F a_r, −F b_r].
	// z(nil, from) holds the pairs from..p−1, z(idx, 0) the pairs idx.
	z := func(idx []int, from int) gram.Vectors {
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
	x := func(idx []int) gram.Vectors {
		return gram.Vectors{N: len(idx), D: 2 * d, Fill: func(i int, dst []float64) {
			ap.Fill(idx[i], dst[:d])
			bp.Fill(idx[i], dst[d:])
		}}
	}
	y := func(from int) gram.Vectors {
		return gram.Vectors{N: p - from, D: 2 * d, Fill: func(i int, dst []float64) {
			r := from + i
			copy(dst[:d], fa[is[r]*d:(is[r]+1)*d])
			for k, v := range fb[js[r]*d : (js[r]+1)*d] {
				dst[d+k] = -v
			}
		}}
	}
	pass := func(sc scope, emit func(r, q0 int, v []float64)) {
		// Blocks of 2·tileSize pairs: four tiles of z vectors, the buffer
		// 2·tileSize·P float64.
		rows, nb := indices(sc.rows, p), 2*gram.TileSize
		buf := make([]float64, min(nb, len(rows))*p)
		for b0 := 0; b0 < len(rows); b0 += nb {
			blk := rows[b0:min(len(rows), b0+nb)]
			from := 0
			if sc.rows == nil {
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
			if mon.err() != nil {
				return
			}
			par.Rows(len(blk), func(i0, i1 int) {
				for i := i0; i < i1; i++ {
					r, row := blk[i], v[i*nq:(i+1)*nq]
					if sc.rows == nil {
						emit(r, r+1, row[r+1-from:])
					} else {
						emit(r, 0, row)
					}
				}
			})
		}
	}
	bufs := sync.Pool{New: func() any { return new([4][]float64) }}
	return &stage2Model{p: p, m: stage2Size(p), scale: 1, coef: 1, pass: pass,
		finish: func() ([]float64, []float64) { return node, single },
		at: func(r, q int) float64 {
			bs := bufs.Get().(*[4][]float64)
			defer bufs.Put(bs)
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
		}}
}

// trCGCH returns tr(C G C H) for 2×2 matrices stored row-major, with
// C = [[c0, c1], [c1, c0]].
func trCGCH(c0, c1 float64, g, h [4]float64) float64 {
	cg := [4]float64{c0*g[0] + c1*g[2], c0*g[1] + c1*g[3], c1*g[0] + c0*g[2], c1*g[1] + c0*g[3]}
	ch := [4]float64{c0*h[0] + c1*h[2], c0*h[1] + c1*h[3], c1*h[0] + c0*h[2], c1*h[1] + c0*h[3]}
	return cg[0]*ch[0] + cg[1]*ch[2] + cg[2]*ch[1] + cg[3]*ch[3]
}

// timesSym returns the |x|×d row-major matrix whose row i is F x_i, F
// symmetric d×d.
func timesSym(x gram.Vectors, f []float64, mon *Monitor) []float64 {
	d := x.D
	out := make([]float64, x.N*d)
	gram.Gram(x, gram.DenseRows(f, d, d), false, gram.Dots, progress{mon}, func(t *gram.Tile) {
		for i := 0; i < t.NI; i++ {
			copy(out[(t.I0+i)*d+t.J0:][:t.NJ], t.G[i*t.LD:][:t.NJ])
		}
	})
	return out
}

// sqNorms returns ‖x_i‖² for every vector.
func sqNorms(x gram.Vectors) []float64 {
	out := make([]float64, x.N)
	row := make([]float64, x.D)
	for i := range out {
		x.Fill(i, row)
		out[i] = gram.Dot(row, row)
	}
	return out
}

func sub(x, y []float64) []float64 {
	out := make([]float64, len(x))
	for i := range x {
		out[i] = x[i] - y[i]
	}
	return out
}

func scaled(x []float64, s float64) []float64 {
	for i := range x {
		x[i] *= s
	}
	return x
}

func sum(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}

// rbfPairRows is the partial pass of rbfStage2: V_rq for the pairs r of
// sc.rows against every pair q, from the Gram matrix of their interleaved
// vectors (z_2r = s_r, z_2r+1 = t_r) with all of z.
func rbfPairRows(z gram.Vectors, sc scope, kern *rbf.Mixture, mon *Monitor, emit func(r, q0 int, v []float64)) {
	sub := gram.Vectors{N: 2 * len(sc.rows), D: z.D, Fill: func(i int, dst []float64) { z.Fill(2*sc.rows[i/2]+i%2, dst) }}
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
			emit(sc.rows[t.I0/2+ri], t.J0/2, out)
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
func pairKernel(src, tgt Matrix, kern *rbf.Mixture, pr, pq Pair) float64 {
	k := func(a Matrix, i int, b Matrix, j int) float64 { return kern.Eval(sqDist(a, i, nil, b, j)) }
	return k(src, pr.S, src, pq.S) - k(src, pr.S, tgt, pq.T) - k(tgt, pr.T, src, pq.S) + k(tgt, pr.T, tgt, pq.T)
}

// sqDist returns ‖(a_i − shift) − b_j‖² (shift nil means none) by explicit
// differences, in O(d); the sparse path calls it for every candidate edge,
// so the common layouts read the rows directly (sqDiffs, AVX2 where the CPU
// has it).
func sqDist(a Matrix, i int, shift []float64, b Matrix, j int) float64 {
	d := a.D
	switch {
	case shift == nil && a.F64 != nil && b.F64 != nil:
		return gram.SqDiffs(a.F64[i*d:(i+1)*d], b.F64[j*d:(j+1)*d])
	case shift == nil && a.F32 != nil && b.F32 != nil:
		return gram.SqDiffs(a.F32[i*d:(i+1)*d], b.F32[j*d:(j+1)*d])
	}
	var s [4]float64
	for k := 0; k < d; k++ {
		t := a.At(i, k) - b.At(j, k)
		if shift != nil {
			t -= shift[k]
		}
		s[k%4] += t * t
	}
	return (s[0] + s[1]) + (s[2] + s[3])
}
