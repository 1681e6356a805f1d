// Package feat holds the two input types every layer of psda shares: the
// feature matrices of the source and target domains (Matrix) and the
// source–target pairs of Stage 1 (Pair). Package psda exports them under
// the same names; the cost models (internal/cost) and the test references
// (internal/testref) take them from here, below both.
package feat

// Matrix is a read-only, row-major view of N feature vectors of dimension D.
// Exactly one of F32 and F64 holds the N*D values; float32 input is never
// converted to float64 as a whole.
type Matrix struct {
	N, D int
	F32  []float32
	F64  []float64
}

// At returns element (i, j) as float64.
func (m Matrix) At(i, j int) float64 {
	if m.F32 != nil {
		return float64(m.F32[i*m.D+j])
	}
	return m.F64[i*m.D+j]
}

// Row copies row i into dst (len D) as float64 and returns dst.
func (m Matrix) Row(i int, dst []float64) []float64 {
	if m.F32 != nil {
		for j, v := range m.F32[i*m.D : (i+1)*m.D] {
			dst[j] = float64(v)
		}
		return dst
	}
	copy(dst, m.F64[i*m.D:(i+1)*m.D])
	return dst
}

// Pair is one Stage 1 match: source row S with target row T.
type Pair struct{ S, T int }
