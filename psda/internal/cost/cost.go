package cost

import (
	"math"

	"github.com/psda-dev/psda/psda/internal/feat"
	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/par"
	"github.com/psda-dev/psda/psda/internal/rbf"
)

// This file holds the split every model shares (Stage1, Stage2) and the
// dense matrices built from it; the models are in linear.go, rbf.go and
// coral.go.

// Kind is a discrepancy with its kernel.
type Kind int

// The discrepancies of the paper.
const (
	LinearMMD Kind = iota // the MMD with the linear kernel
	RBFMMD                // the MMD with an RBF mixture
	CORAL                 // CORAL
)

// Spec selects a cost model.
type Spec struct {
	Kind Kind
	// K is the per-domain batch size k.
	K int
	// Gammas is the RBF mixture's set of γ (RBFMMD only; non-empty).
	Gammas []float64
}

// Stage1 is the paper's Stage 1 cost C^st split as
// c_ij = (row[i] + col[j] + X_ij)·Scale, where only the cross part X needs
// a Gram pass over all (i, j): the dense path stores X (Dense), the sparse
// path keeps a few entries per row and column and runs the pass again to
// price. The discrepancy's model (linear1, rbf1, coral1) computes the
// parts.
type Stage1 struct {
	model  stage1Cost
	ns, nt int
	mon    gram.Progress

	// Scale multiplies every entry.
	Scale float64
	// Bounded reports that Err32 holds (the model has a float32 bound and
	// the features are float32Safe): float32 passes may then price.
	Bounded bool
	// DeferSums reports that every kernel sum of the RBF mixture is left
	// out of the terms (NewStage1's deferSums with n_s = n_t), so that no
	// pass needs float64.
	DeferSums bool
}

// stage1Cost is the model of one discrepancy behind Stage1; its methods
// are Stage1's.
type stage1Cost interface {
	pass(sc Scope, emit func(i, j0 int, x []float64))
	terms() (row, col []float64)
	at(i, j int) float64
	err32() (es, et []float64)
}

// NewStage1 returns the split of C^st over the sources src and the targets
// tgt for the discrepancy s. mon receives the progress of its Gram passes
// and stops them when cancelled (nil: none).
//
// deferSums, for the RBF mixture, leaves the kernel sums of the sides
// whose every row is used once by Stage 1 out of the terms. When n_s = n_t
// that is all of them: the self-kernel sums Σ_i' κ(s_i, s_i') and
// Σ_j' κ(t_j, t_j'), which cost a Gram pass over each domain, and the cross
// sums Σ_j κ(s_i, t_j) and Σ_i κ(s_i, t_j), which tie the pass to float64;
// they only shift rows and columns, so the optimal assignment is the same
// (and the sparse path's candidate pass may run in float32); the objective
// misses (2ΣST − ΣSS − ΣTT)/n·Scale. When n_s ≠ n_t it is the larger side's
// row or column terms (its self-kernel sums, the Gram pass over the larger
// domain, and its cross sums) and ‖δ‖², paid once per pair: with L the
// larger side and l the smaller, the objective misses
// (n_L·Σll/n_l² − ΣLL/n_L)·Scale. Stage 2's float64 pass supplies the sums
// (Stage2.KernelSums).
//
// The time complexity is that of the model's precomputation: O((n_s+n_t)·d)
// for the MMD, O(N·d·min(N, d)) for CORAL, N = n_s+n_t (see covForm); the
// RBF mixture's self-kernel sums wait for the first full pass.
func NewStage1(src, tgt feat.Matrix, s Spec, deferSums bool, mon gram.Progress) *Stage1 {
	mon = orNone(mon)
	md := &Stage1{ns: src.N, nt: tgt.N, mon: mon, Scale: 1 / float64(s.K*s.K)}
	switch s.Kind {
	case CORAL:
		md.model, md.Scale = newCoral1(src, tgt, s.K, mon), 1
	case LinearMMD:
		md.model, md.Bounded = newLinear1(src, tgt, mon), true
	default:
		md.model, md.Bounded = newRBF1(src, tgt, rbf.New(s.Gammas), deferSums, mon), true
		md.DeferSums = deferSums && src.N == tgt.N
	}
	md.Bounded = md.Bounded && float32Safe(src, tgt)
	return md
}

// Pass runs one Gram pass over the sources sc.Rows and targets sc.Cols and
// calls emit(i, j0, x) with x[j] = X_{i,j0+j}, i and j indexing sc.Rows and
// sc.Cols, for every tile row, concurrently from several goroutines (two
// calls never share an i at the same time); x is only valid during the
// call.
func (md *Stage1) Pass(sc Scope, emit func(i, j0 int, x []float64)) { md.model.pass(sc, emit) }

// Terms returns row and col; valid once a full pass has completed.
func (md *Stage1) Terms() (row, col []float64) { return md.model.terms() }

// At returns X_ij from the features alone, in O(d), for single entries;
// safe for concurrent use.
func (md *Stage1) At(i, j int) float64 { return md.model.at(i, j) }

// Err32 returns es and et with |X̃_ij − X_ij| <= es[i] + et[j] for X̃ from
// a float32 pass and X from At; call it only when md is Bounded.
func (md *Stage1) Err32() (es, et []float64) { return md.model.err32() }

// Dense returns the n_s×n_t row-major matrix C^st_ij of the paper
// (equation after "Thus, we have" for the MMD; the Stage 1 conditional
// covariances for CORAL), after one full pass. After a cancellation it
// returns an unfinished matrix, which the caller discards.
//
// The time complexity is O(n_s·n_t·d) for the linear kernel,
// O((n_s+n_t)²·d) for the RBF mixture (the self-kernel means are part of
// the full cost; with deferSums O(n_s·n_t·d + min(n_s, n_t)²·d)) and
// O(n_s·n_t·d) for CORAL; memory is the result plus
// O(N·n/tileSize).
func (md *Stage1) Dense() []float64 { return md.DenseIn(nil) }

// DenseIn is Dense writing into buf's memory when its capacity suffices
// (whatever buf holds is overwritten), so that a caller can hand on pages
// already mapped (first touches of fresh pages cost about as much as
// writing them twice); otherwise it allocates.
func (md *Stage1) DenseIn(buf []float64) []float64 { return md.dense(buf, false) }

// DenseT is Dense transposed: the n_t×n_s row-major matrix whose entry
// (j, i) is C^st_ij, the layout the assignment solver takes when the
// targets are more (it wants the larger side as rows). Its pass runs with
// the targets as the Gram product's rows, so that the matrix is written
// row by row as Dense's is, with no transposing copy: the same work and
// memory as Dense of the mirrored sizes, and the same bits as Dense's
// entries (TestDenseTransposed). A cross kernel it keeps (KeepCross) is
// transposed too (Cross.T). The time complexity is Dense's.
func (md *Stage1) DenseT() []float64 { return md.DenseTIn(nil) }

// DenseTIn is DenseT writing into buf's memory (DenseIn).
func (md *Stage1) DenseTIn(buf []float64) []float64 { return md.dense(buf, true) }

// dense is DenseIn, or DenseTIn with trans: the rows of c are then the
// targets (j) and its columns the sources (i).
func (md *Stage1) dense(buf []float64, trans bool) []float64 {
	nr, nc := md.ns, md.nt
	if trans {
		nr, nc = nc, nr
	}
	c := reuse(buf, nr*nc)
	sc := Scope{trans: trans}
	// The entry of source i and target j is (row[i] + col[j] + x)·Scale,
	// added in that order in both layouts: the same bits.
	if ahead, ok := md.model.(termsAhead); ok && ahead.termsBeforePass() {
		// The terms do not wait for the pass: finish each entry while its
		// tile is in cache instead of in a second pass over c.
		row, col := md.Terms()
		md.Pass(sc, func(i, j0 int, x []float64) {
			ci := c[i*nc+j0:][:len(x)]
			if trans { // i is a target, j0+k a source
				cj := col[i]
				for k, v := range x {
					ci[k] = (row[j0+k] + cj + v) * md.Scale
				}
				return
			}
			ri := row[i]
			for j, v := range x {
				ci[j] = (ri + col[j0+j] + v) * md.Scale
			}
		})
		return c
	}
	md.Pass(sc, func(i, j0 int, x []float64) { copy(c[i*nc+j0:], x) })
	if md.mon.Err() != nil {
		return c
	}
	row, col := md.Terms()
	par.Rows(nr, func(i0, i1 int) {
		for i := i0; i < i1; i++ {
			r := c[i*nc : (i+1)*nc]
			if trans {
				cj := col[i]
				for k, x := range r {
					r[k] = (row[k] + cj + x) * md.Scale
				}
				continue
			}
			for j, x := range r {
				r[j] = (row[i] + col[j] + x) * md.Scale
			}
		}
	})
	return c
}

// termsAhead is a Stage 1 model whose terms may be known before its first
// full pass (termsBeforePass), so that Dense finishes entries as they come.
type termsAhead interface{ termsBeforePass() bool }

// reuse returns buf resliced to n entries when its capacity holds them, a
// new slice otherwise.
func reuse(buf []float64, n int) []float64 {
	if cap(buf) >= n {
		return buf[:n]
	}
	return make([]float64, n)
}

// Stage2 is the paper's Stage 2 cost C^MM over the P pairs, split as
// c_rq = (node[r] + node[q] + Coef·V_rq)·Scale, where the cross part V
// needs a Gram pass over all pairs; single[r]·Scale is the cost of leaving
// pair r alone (the dummy node when P is odd). The discrepancy's model
// (linear2, rbf2, rbf2Factored, coral2) computes the parts; CORAL's cross
// part takes two Gram products per block of pairs (coral2).
type Stage2 struct {
	model stage2Cost
	mon   gram.Progress

	// P is the number of pairs, M that of the matching's nodes: P, plus a
	// dummy node when P is odd.
	P, M int
	// Scale and Coef are the factors of the split.
	Scale, Coef float64
	// Bounded reports that Err32 holds (the model has a float32 bound and
	// the features are float32Safe): float32 passes may then price.
	Bounded bool
	// DenseMax is the largest |entry| of the matrix the last Dense or
	// DenseIn returned, counted as assign.PriceTol counts them (NaN and
	// +Inf skipped, −Inf counted as +Inf), so that the caller need not
	// pass over the matrix again for it; 0 after a cancellation.
	DenseMax float64
}

// stage2Cost is the model of one discrepancy behind Stage2; its methods
// are Stage2's.
type stage2Cost interface {
	pass(sc Scope, emit func(r, q0 int, v []float64))
	finish() (node, single []float64)
	at(r, q int) float64
	err32() []float64
}

// NewStage2 returns the split of C^MM over pairs, which may repeat a
// source or a target but must use every source and every target at least
// once, as Stage 1's pairs do (the RBF mixture takes the domain kernel
// means from the pairs' own Gram matrix). For the pairs of an imbalanced
// Stage 1 the RBF mixture stores the kernel against the smaller side and
// computes only the larger side's Gram matrix in its passes
// (rbf2Factored, FactorMin), when its tables of 2·P·n_small float64 fit in
// maxTable bytes. mon receives the progress of the Gram passes and stops
// them when cancelled (nil: none).
//
// The time complexity is that of the model's precomputation: O(P·d) for
// the MMD and O(P·d + N·d·min(N, d)) for CORAL, N = n_s+n_t (see covForm).
func NewStage2(src, tgt feat.Matrix, s Spec, pairs []feat.Pair, maxTable int64, mon gram.Progress) *Stage2 {
	mon = orNone(mon)
	k := s.K
	p := len(pairs)
	md := &Stage2{mon: mon, P: p, M: stage2Size(p), Scale: 1 / float64(k*k), Coef: 2}
	switch s.Kind {
	case CORAL:
		md.model, md.Scale, md.Coef = newCoral2(src, tgt, k, pairs, mon), 1, 1
	case LinearMMD:
		md.model, md.Coef, md.Bounded = newLinear2(src, tgt, pairs, mon), 1, true
	default:
		md.Bounded = true
		kern := rbf.New(s.Gammas)
		if a, b, bIdx, aIsSrc, ok := factorable(src, tgt, pairs); ok && FactoredBytes(a.N, b.N) <= maxTable {
			md.model = newRBF2Factored(a, b, bIdx, aIsSrc, kern, mon)
		} else {
			md.model = newRBF2(src, tgt, kern, pairs, mon)
		}
	}
	md.Bounded = md.Bounded && float32Safe(src, tgt)
	return md
}

// Pass runs one Gram pass and calls emit(r, q0, v) with v[k] = V_{r,q0+k},
// concurrently from several goroutines (two calls never share an r at the
// same time); v is only valid during the call. A full pass (sc.Rows nil)
// emits the upper triangle q0+k > r only; with sc.Rows it emits every q
// (r itself included) for the pairs r of sc.Rows. sc.Cols must be nil.
func (md *Stage2) Pass(sc Scope, emit func(r, q0 int, v []float64)) { md.model.pass(sc, emit) }

// Finish returns node and single; valid once a full pass has completed
// (approximate after a float32 one).
func (md *Stage2) Finish() (node, single []float64) { return md.model.finish() }

// At returns V_rq from the features alone, in O(d), for single entries;
// safe for concurrent use.
func (md *Stage2) At(r, q int) float64 { return md.model.at(r, q) }

// Err32 returns e with |Ṽ_rq − V_rq| <= e[r] + e[q] for Ṽ from a float32
// pass and V from At; call it only when md is Bounded.
func (md *Stage2) Err32() []float64 { return md.model.err32() }

// KernelSums returns the sums over all pairs of the kernel sums of their
// sources with all sources, of their sources with all targets and of their
// targets with all targets, each weighted by 1/uses (ΣSS, ΣST and ΣTT:
// every source and target counted once); valid once a float64 full pass
// has completed. Only the RBF mixture's models have them (rbf2,
// rbf2Factored); any other model panics.
func (md *Stage2) KernelSums() (ss, st, tt float64) {
	return md.model.(kernelSummer).kernelSums()
}

// kernelSummer is a Stage 2 model with KernelSums.
type kernelSummer interface{ kernelSums() (ss, st, tt float64) }

// Dense returns the M×M symmetric row-major matrix C^MM_rq of the paper
// over the pairs, and M, after one full pass. When P is odd, node M−1 is a
// dummy pair sitting at the domain means (for the MMD w_∅ = 0; for CORAL
// centred vectors a_∅ = b_∅ = 0), so that C(r, ∅) is the cost of leaving
// pair r single. The diagonal is 0 (ignored by the matching). After a
// cancellation it returns an unfinished matrix, which the caller discards.
//
// The time complexity is O(P²·d) for the linear kernel, O(P²·d) with a 4×
// larger constant for the RBF mixture (the Gram matrix of the 2P paired
// vectors; about P²/2 + P·n_small entries for an imbalanced Stage 1's
// pairs, rbf2Factored) and O(P²·d) for CORAL; memory is the result plus
// O(P·P/tileSize) for the RBF mixture (and 2·P·n_small for rbf2Factored).
func (md *Stage2) Dense() ([]float64, int) { return md.DenseIn(nil) }

// DenseIn is Dense writing into buf's memory when its capacity suffices
// (Stage1.DenseIn). It also sets DenseMax.
func (md *Stage2) DenseIn(buf []float64) ([]float64, int) {
	m := md.M
	c := reuse(buf, m*m)
	md.DenseMax = 0 // until this matrix is finished
	md.Pass(Scope{}, func(r, q0 int, v []float64) { copy(c[r*m+q0:], v) })
	if md.mon.Err() != nil {
		return c, m
	}
	node, single := md.Finish()
	md.DenseMax = finishStage2(c, m, md.P, md.Scale, md.Coef, node, single, md.mon)
	return c, m
}

// finishStage2 replaces every off-diagonal entry (r, q) of the first p nodes
// by (node[r] + node[q] + coef·entry)·scale, sets the dummy row and column
// (when m > p) to single[r]·scale and the diagonal to 0, and returns the
// largest |entry| as assign.PriceTol counts them (raiseAbs, Stage2.DenseMax).
// Only the upper triangle is read and evaluated, and each value is written
// to both (r, q) and (q, r), so the result is exactly symmetric; one pass,
// block by block to stay in cache (finishing the upper triangle and then
// mirroring it read it twice), and the maximum taken on the way (a
// serial pass over the matrix of its own, assign.PriceTol's, took 0.8 s
// at P = 20,000).
//
// After mon is cancelled it does nothing: the caller discards the matrix, and
// this pass over it would only delay the return.
func finishStage2(c []float64, m, p int, scale, coef float64, node, single []float64, mon gram.Progress) float64 {
	if mon.Err() != nil {
		return 0
	}
	const b = 64
	nb := (m + b - 1) / b
	top := make([]float64, nb) // the largest |entry| of each block row
	par.For(nb, func() func(int) {
		return func(bi int) {
			r0, r1 := bi*b, min(m, (bi+1)*b)
			mx := 0.0 // the diagonal's
			for bj := bi; bj*b < m; bj++ {
				q1 := min(m, (bj+1)*b)
				for r := r0; r < r1; r++ {
					row := c[r*m : (r+1)*m]
					q := max(r+1, bj*b)
					if r < p {
						nr := node[r]
						for ; q < min(q1, p); q++ {
							v := (nr + node[q] + coef*row[q]) * scale
							row[q], c[q*m+r] = v, v
							mx = raiseAbs(mx, v)
						}
					}
					for ; q < q1; q++ { // the dummy node's column (q = p > r)
						v := single[r] * scale
						row[q], c[q*m+r] = v, v
						mx = raiseAbs(mx, v)
					}
				}
			}
			for r := r0; r < r1; r++ {
				c[r*m+r] = 0
			}
			top[bi] = mx
		}
	})
	mx := 0.0
	for _, v := range top {
		mx = max(mx, v)
	}
	return mx
}

// raiseAbs returns the larger of mx >= 0 and |v| as assign.PriceTol
// counts entries: NaN and +Inf are skipped, −Inf counts as +Inf (the
// comparisons of its maxAbsIn). Go's max would return NaN for a NaN
// entry, and a NaN DenseMax would give the tolerance 0.
func raiseAbs(mx, v float64) float64 {
	if v > mx && v < math.Inf(1) {
		return v
	}
	if -v > mx {
		return -v
	}
	return mx
}

// stage2Size returns the number of nodes of the Stage 2 matching.
func stage2Size(p int) int { return p + p%2 }

// Factored reports whether NewStage2 takes the factored RBF model
// (rbf2Factored) for the pairs of an imbalanced Stage 1 with na rows on the
// larger side and nb on the smaller, under maxTable.
func Factored(na, nb int, maxTable int64) bool {
	return fewRows(na, nb) && FactoredBytes(na, nb) <= maxTable
}

// fewRows reports whether a smaller side of nb rows is at least FactorMin
// times smaller than a larger side of na, the factored model's size rule.
func fewRows(na, nb int) bool { return nb <= na/FactorMin }

// FactoredBytes returns the bytes of the factored RBF Stage 2's tables for a
// larger side of na rows and a smaller side of nb: two na×nb float64 tables
// (f and K_ab transposed) and K_bb, nb×nb.
func FactoredBytes(na, nb int) int64 {
	return 16*int64(na)*int64(nb) + 8*int64(nb)*int64(nb)
}
