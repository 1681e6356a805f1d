package cost

import (
	"github.com/psda-dev/psda/psda/internal/feat"
	"github.com/psda-dev/psda/psda/internal/gram"
)

// This file holds the linear-kernel MMD costs of both stages.

// linear1 is Stage 1 of the linear-kernel MMD: with φ(x) = x,
// C_ij = ‖(s_i − δ) − t_j‖²/k², δ = s̄ − t̄, all of it the cross part.
type linear1 struct {
	src, tgt feat.Matrix
	delta    []float64
	zr, zc   []float64 // the terms: zero
	mon      gram.Progress
}

func newLinear1(src, tgt feat.Matrix, mon gram.Progress) *linear1 {
	return &linear1{src: src, tgt: tgt, delta: sub(colMeans(src), colMeans(tgt)),
		zr: make([]float64, src.N), zc: make([]float64, tgt.N), mon: mon}
}

func (m *linear1) pass(sc Scope, emit func(i, j0 int, x []float64)) {
	x, y := rowsOf(m.src, sc.Rows, m.delta), rowsOf(m.tgt, sc.Cols, nil)
	if sc.trans {
		x, y = y, x
	}
	sc.gram(x, y, false, gram.SqDists, m.mon, emitRows(emit))
}

func (m *linear1) terms() ([]float64, []float64) { return m.zr, m.zc }

// termsBeforePass reports that the terms, zero, are known before any pass.
func (m *linear1) termsBeforePass() bool { return true }

func (m *linear1) at(i, j int) float64 { return sqDist(m.src, i, m.delta, m.tgt, j) }

func (m *linear1) err32() ([]float64, []float64) {
	return err32(rowsOf(m.src, nil, m.delta)), err32(rowsOf(m.tgt, nil, nil))
}

// linear2 is Stage 2 of the linear-kernel MMD: C_rq = ‖w_r + w_q‖²/k² with
// explicit w_r = s_r − t_r − δ, computed as the squared distance between
// w_r and −w_q.
type linear2 struct {
	src, tgt feat.Matrix
	pairs    []feat.Pair
	delta    []float64
	wp       gram.Vectors // the w_r
	mon      gram.Progress
}

func newLinear2(src, tgt feat.Matrix, pairs []feat.Pair, mon gram.Progress) *linear2 {
	m := &linear2{src: src, tgt: tgt, pairs: pairs, delta: sub(colMeans(src), colMeans(tgt)), mon: mon}
	m.wp = m.w(1)
	return m
}

// w returns the vectors sign·w_r.
func (m *linear2) w(sign float64) gram.Vectors {
	src, tgt, pairs, delta := m.src, m.tgt, m.pairs, m.delta
	return gram.Vectors{N: len(pairs), D: src.D, Fill: func(r int, dst []float64) {
		src.Row(pairs[r].S, dst)
		for k := range dst {
			dst[k] = sign * (dst[k] - tgt.At(pairs[r].T, k) - delta[k])
		}
	}}
}

func (m *linear2) pass(sc Scope, emit func(r, q0 int, v []float64)) {
	wp := m.wp
	if sc.Rows != nil {
		sub := gram.Vectors{N: len(sc.Rows), D: m.src.D, Fill: func(i int, dst []float64) { wp.Fill(sc.Rows[i], dst) }}
		sc.gram(sub, m.w(-1), false, gram.SqDists, m.mon, func(t *gram.Tile) {
			for i := 0; i < t.NI; i++ {
				emit(sc.Rows[t.I0+i], t.J0, t.G[i*t.LD:][:t.NJ])
			}
		})
		return
	}
	sc.gram(wp, m.w(-1), true, gram.SqDists, m.mon, func(t *gram.Tile) {
		for i := 0; i < t.NI; i++ {
			j := upperFrom(t, i) + b2i(t.Diag)
			emit(t.I0+i, t.J0+j, t.G[i*t.LD+j:][:t.NJ-j])
		}
	})
}

func (m *linear2) finish() ([]float64, []float64) {
	p := len(m.pairs)
	single := make([]float64, p)
	row := make([]float64, m.src.D)
	for r := range single {
		m.wp.Fill(r, row)
		single[r] = gram.Dot(row, row)
	}
	return make([]float64, p), single
}

func (m *linear2) err32() []float64 { return err32(m.wp) }

func (m *linear2) at(r, q int) float64 {
	src, tgt, pairs := m.src, m.tgt, m.pairs
	// ‖w_r + w_q‖² = ‖(s_r + s_q − 2δ) − (t_r + t_q)‖².
	v := 0.0
	for c, dc := range m.delta {
		x := src.At(pairs[r].S, c) + src.At(pairs[q].S, c) - 2*dc - tgt.At(pairs[r].T, c) - tgt.At(pairs[q].T, c)
		v += x * x
	}
	return v
}
