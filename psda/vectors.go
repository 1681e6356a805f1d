package psda

import (
	"math"

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
	// Neumaier's compensated sum: the costs subtract the means from every
	// feature (CORAL's centring, the MMD's δ), so a plain sum's rounding,
	// up to n·ε of a common offset, would become every centred vector's
	// error, which CORAL raises to the fourth power. Compensated, the sum
	// is accurate to a few ε of itself (docs/method.md, "Notation").
	sum, comp := make([]float64, m.D), make([]float64, m.D)
	row := make([]float64, m.D)
	for i := 0; i < m.N; i++ {
		for k, v := range m.Row(i, row) {
			t := sum[k] + v
			if math.Abs(sum[k]) >= math.Abs(v) {
				comp[k] += (sum[k] - t) + v
			} else {
				comp[k] += (v - t) + sum[k]
			}
			sum[k] = t
		}
	}
	for k := range sum {
		sum[k] = (sum[k] + comp[k]) / float64(m.N)
	}
	return sum
}

// progress adapts a Monitor (nil: none) to the Gram engine's Progress.
type progress struct{ m *Monitor }

func (p progress) Err() error            { return p.m.err() }
func (p progress) AddTile(ni, nj, d int) { p.m.addTile(ni, nj, d) }
