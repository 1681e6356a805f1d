package psda

import (
	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/par"
	"github.com/psda-dev/psda/psda/internal/rbf"
)

// This file computes the paper's cost matrices (section "Cost computation"):
// Stage 1 C^st (n_s×n_t) and Stage 2 C^MM (pairs×pairs), for the MMD with a
// linear or RBF-mixture kernel and for CORAL. Every entry is the full
// conditional expected error E[‖D̂ − D‖² | …], with all constant, row and
// column terms, so that sums of entries are the objective reported to users.
// The identities used are derived in docs/method.md and checked in
// cost_test.go against the paper's formulas evaluated directly.
//
// Precision: float64 throughout (internal/gram); float32 input is converted
// one vector at a time, and the sparse path's float32 passes carry the
// bounds of cost_float32.go.
//
// This file holds the split every model shares (stage1Model, stage2Model)
// and the dense matrices built from it; the models are in cost_linear.go,
// cost_rbf.go and cost_coral.go.

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
	return newStage1Model(src, tgt, cfg, false).dense(src.N, tgt.N, cfg.Monitor)
}

// stage1Model is C^st split as c_ij = (row[i] + col[j] + X_ij)·scale, where
// only the cross part X needs a Gram pass over all (i, j): the dense path
// stores X, the sparse path (sparse.go) keeps a few entries per row and
// column and runs the pass again to price. The discrepancy's model
// (linear1, rbf1, coral1) computes the parts.
type stage1Model struct {
	stage1Cost
	scale float64
	// bounded reports that err32 holds (the model has a float32 bound and
	// the features are float32Safe): float32 passes may then price.
	bounded bool
	// deferSums is rbf1's: the kernel sums are left out of the terms.
	deferSums bool
}

// stage1Cost is the model of one discrepancy behind stage1Model.
type stage1Cost interface {
	// pass runs one Gram pass over the sources sc.rows and targets sc.cols
	// and calls emit(i, j0, x) with x[j] = X_{i,j0+j}, i and j indexing
	// sc.rows and sc.cols, for every tile row, concurrently from several
	// goroutines (two calls never share an i at the same time); x is only
	// valid during the call.
	pass(sc scope, emit func(i, j0 int, x []float64))
	// terms returns row and col; valid once a full pass has completed.
	terms() (row, col []float64)
	// at returns X_ij from the features alone (O(d)), for single entries.
	at(i, j int) float64
	// err32 returns es and et with |X̃_ij − X_ij| <= es[i] + et[j] for X̃
	// from a float32 pass and X from at; only called when the stage1Model
	// is bounded.
	err32() (es, et []float64)
}

// newStage1Model returns the split of C^st for cfg's discrepancy.
// deferSums, for the RBF mixture, leaves every kernel sum out of the
// terms: the self-kernel sums Σ_i' κ(s_i, s_i') and Σ_j' κ(t_j, t_j'),
// which cost a Gram pass over each domain, and the cross sums
// Σ_j κ(s_i, t_j) and Σ_i κ(s_i, t_j), which tie the pass to float64. When
// n_s = n_t they only shift rows and columns, so the optimal assignment is
// the same (and the sparse path's candidate pass may run in float32); the
// objective misses (2ΣST − ΣSS − ΣTT)/n·scale, which Stage 2's float64
// pass supplies (stage2Model.kernelSums, Matching.addDeferred).
func newStage1Model(src, tgt Matrix, cfg Config, deferSums bool) *stage1Model {
	md := &stage1Model{scale: 1 / float64(cfg.BatchSize*cfg.BatchSize)}
	switch {
	case cfg.Discrepancy == CORAL:
		md.stage1Cost, md.scale = newCoral1(src, tgt, cfg.BatchSize, cfg.Monitor), 1
	case cfg.Kernel == Linear:
		md.stage1Cost, md.bounded = newLinear1(src, tgt, cfg.Monitor), true
	default:
		md.stage1Cost, md.bounded = newRBF1(src, tgt, rbf.New(cfg.gammas()), deferSums, cfg.Monitor), true
		md.deferSums = deferSums
	}
	md.bounded = md.bounded && float32Safe(src, tgt)
	return md
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

// stage2Model is C^MM over the P pairs as
// c_rq = (node[r] + node[q] + coef·V_rq)·scale, where the cross part V needs
// a Gram pass over all pairs; single[r]·scale is the cost of leaving pair r
// alone (the dummy node when P is odd). The discrepancy's model (linear2,
// rbf2, rbf2Factored, coral2) computes the parts; CORAL's cross part takes
// two Gram products per block of pairs (coral2).
type stage2Model struct {
	stage2Cost
	p, m        int
	scale, coef float64
	// bounded reports that err32 holds (the model has a float32 bound and
	// the features are float32Safe): float32 passes may then price.
	bounded bool
}

// stage2Cost is the model of one discrepancy behind stage2Model.
type stage2Cost interface {
	// pass runs one Gram pass and calls emit(r, q0, v) with v[k] = V_{r,q0+k},
	// concurrently from several goroutines (two calls never share an r at
	// the same time); v is only valid during the call. A full pass (sc.rows
	// nil) emits the upper triangle q0+k > r only; with sc.rows it emits
	// every q (r itself included) for the pairs r of sc.rows. sc.cols must be
	// nil, and so must sc.rows for the factored model (dense path only).
	pass(sc scope, emit func(r, q0 int, v []float64))
	// finish returns node and single; valid once a full pass has completed
	// (approximate after a float32 one).
	finish() (node, single []float64)
	// at returns V_rq from the features alone (O(d)), for single entries;
	// safe for concurrent use.
	at(r, q int) float64
	// err32 returns e with |Ṽ_rq − V_rq| <= e[r] + e[q] for Ṽ from a
	// float32 pass and V from at; only called when the stage2Model is
	// bounded.
	err32() []float64
}

// kernelSums returns the sums over all pairs of the kernel sums of their
// sources with all sources, of their sources with all targets and of their
// targets with all targets, each weighted by 1/uses (ΣSS, ΣST and ΣTT:
// every source and target counted once); valid once a float64 full pass
// has completed. Only the RBF mixture's unfactored model has them (rbf2).
func (md *stage2Model) kernelSums() (ss, st, tt float64) {
	return md.stage2Cost.(*rbf2).kernelSums()
}

// newStage2Model returns the split of C^MM; factored allows the
// RBF mixture to store the kernel against the smaller side when that saves
// work (dense path only: it holds P·n_small values).
func newStage2Model(src, tgt Matrix, cfg Config, pairs []Pair, factored bool) *stage2Model {
	k := cfg.BatchSize
	p := len(pairs)
	md := &stage2Model{p: p, m: stage2Size(p), scale: 1 / float64(k*k), coef: 2}
	switch {
	case cfg.Discrepancy == CORAL:
		md.stage2Cost, md.scale, md.coef = newCoral2(src, tgt, k, pairs, cfg.Monitor), 1, 1
	case cfg.Kernel == Linear:
		md.stage2Cost, md.coef, md.bounded = newLinear2(src, tgt, pairs, cfg.Monitor), 1, true
	default:
		kern := rbf.New(cfg.gammas())
		if a, b, bIdx, ok := factorable(src, tgt, pairs); ok && factored {
			md.stage2Cost = newRBF2Factored(a, b, bIdx, kern, cfg.Monitor)
		} else {
			md.stage2Cost, md.bounded = newRBF2(src, tgt, kern, pairs, cfg.Monitor), true
		}
	}
	md.bounded = md.bounded && float32Safe(src, tgt)
	return md
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

// stage2Size returns the number of nodes of the Stage 2 matching.
func stage2Size(p int) int { return p + p%2 }

// scope restricts a Gram pass of a cost model to some rows and columns
// (nil: all) and may run it in float32 (gram32), which packs half the
// bytes and runs the wider float32 micro-kernel (BenchmarkGram, engine32);
// its values are then within the model's err32 bound of the
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

// upperFrom returns the first column of row i that a symmetric pass visits:
// on a diagonal tile only the upper triangle (j >= i), elsewhere every column.
func upperFrom(t *gram.Tile, i int) int {
	if t.Diag {
		return i
	}
	return 0
}

// b2i returns 1 for true and 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pairIndex returns the source and target rows of the pairs.
func pairIndex(pairs []Pair) (is, js []int) {
	is, js = make([]int, len(pairs)), make([]int, len(pairs))
	for r, p := range pairs {
		is[r], js[r] = p.S, p.T
	}
	return is, js
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
