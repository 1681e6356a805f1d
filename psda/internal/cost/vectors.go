package cost

import (
	"math"

	"github.com/psda-dev/psda/psda/internal/feat"
	"github.com/psda-dev/psda/psda/internal/gram"
)

// This file turns feature matrices and pairs into the Gram engine's
// vectors (internal/gram), converting float32 input one row at a time, and
// holds the small vector helpers the models share.

// rowsOf returns the vectors m[idx[r]] − shift; idx nil means every row in
// order, shift nil means no shift.
func rowsOf(m feat.Matrix, idx []int, shift []float64) gram.Vectors {
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
func colsOf(m feat.Matrix, mean []float64) gram.Vectors {
	return gram.Vectors{N: m.D, D: m.N, Fill: func(c int, dst []float64) {
		for k := range dst {
			dst[k] = m.At(k, c) - mean[c]
		}
	}}
}

// colMeans returns the column means of m, accumulated in float64.
func colMeans(m feat.Matrix) []float64 {
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

// b2i returns 1 for true and 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pairIndex returns the source and target rows of the pairs.
func pairIndex(pairs []feat.Pair) (is, js []int) {
	is, js = make([]int, len(pairs)), make([]int, len(pairs))
	for r, p := range pairs {
		is[r], js[r] = p.S, p.T
	}
	return is, js
}

// useWeights returns 1/(number of pairs using the pair's source) and
// 1/(number using its target) for every pair.
func useWeights(pairs []feat.Pair, ns, nt int) (ws, wt []float64) {
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
func sqDist(a feat.Matrix, i int, shift []float64, b feat.Matrix, j int) float64 {
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
