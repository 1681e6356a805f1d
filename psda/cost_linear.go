package psda

import "github.com/psda-dev/psda/psda/internal/gram"

// This file holds the linear-kernel MMD costs of both stages.

// linear1 is Stage 1 of the linear-kernel MMD: with φ(x) = x,
// C_ij = ‖(s_i − δ) − t_j‖²/k², δ = s̄ − t̄, all of it the cross part.
type linear1 struct {
	src, tgt Matrix
	delta    []float64
	zr, zc   []float64 // the terms: zero
	mon      *Monitor
}

func newLinear1(src, tgt Matrix, mon *Monitor) *linear1 {
	return &linear1{src: src, tgt: tgt, delta: sub(colMeans(src), colMeans(tgt)),
		zr: make([]float64, src.N), zc: make([]float64, tgt.N), mon: mon}
}

func (m *linear1) pass(sc scope, emit func(i, j0 int, x []float64)) {
	sc.gram(rowsOf(m.src, sc.rows, m.delta), rowsOf(m.tgt, sc.cols, nil), false, gram.SqDists, m.mon, emitRows(emit))
}

func (m *linear1) terms() ([]float64, []float64) { return m.zr, m.zc }

func (m *linear1) at(i, j int) float64 { return sqDist(m.src, i, m.delta, m.tgt, j) }

func (m *linear1) err32() ([]float64, []float64) {
	return err32(rowsOf(m.src, nil, m.delta)), err32(rowsOf(m.tgt, nil, nil))
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
