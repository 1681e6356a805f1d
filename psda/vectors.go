package psda

import (
	"github.com/psda-dev/psda/psda/internal/gram"
)

// This file turns feature matrices into the Gram engine's vectors
// (internal/gram), converting float32 input one row at a time.

// rowsOf returns the vectors m[idx[r]] − shift; idx nil means every row in
// order, shift nil means no shift.
func rowsOf(m Matrix, idx []int, shift []float64) gram.Vectors {
	n := m.N
	if idx != nil {
		n = len(idx)
	}
	return gram.Vectors{N: n, D: m.D, Fill: func(r int, dst []float64) {
		if idx != nil {
			r = idx[r]
		}
		m.Row(r, dst)
		for k, s := range shift {
			dst[k] -= s
		}
	}}
}

// colsOf returns the d columns of m − mean as vectors of dimension m.N, so
// that the Gram matrix of colsOf(m, mean) is the scatter matrix of m.
func colsOf(m Matrix, mean []float64) gram.Vectors {
	return gram.Vectors{N: m.D, D: m.N, Fill: func(c int, dst []float64) {
		for k := range dst {
			dst[k] = m.At(k, c) - mean[c]
		}
	}}
}

// colMeans returns the column means of m, accumulated in float64.
func colMeans(m Matrix) []float64 {
	mean := make([]float64, m.D)
	row := make([]float64, m.D)
	for i := 0; i < m.N; i++ {
		for k, v := range m.Row(i, row) {
			mean[k] += v
		}
	}
	for k := range mean {
		mean[k] /= float64(m.N)
	}
	return mean
}

// progress adapts a Monitor (nil: none) to the Gram engine's Progress.
type progress struct{ m *Monitor }

func (p progress) Err() error            { return p.m.err() }
func (p progress) AddTile(ni, nj, d int) { p.m.addTile(ni, nj, d) }
