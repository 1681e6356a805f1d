package scan

import "math"

// SumBelow returns the least j >= 0 with !(row[j]+p[j] >= t), that is
// row[j]+p[j] < t or NaN, or len(row) if there is none. len(p) >=
// len(row). Time O(len(row)).
func SumBelow(row, p []float64, t float64) int {
	p = p[:len(row)]
	j := sumBelowBlocks(row, p, t)
	for ; j < len(row); j++ {
		if !(row[j]+p[j] >= t) {
			return j
		}
	}
	return j
}

// SumAtMost is SumBelow with the bound !(row[j]+p[j] > t): the least j
// whose value is at most t, or NaN.
func SumAtMost(row, p []float64, t float64) int {
	p = p[:len(row)]
	j := sumAtMostBlocks(row, p, t)
	for ; j < len(row); j++ {
		if !(row[j]+p[j] > t) {
			return j
		}
	}
	return j
}

// DiffBelow returns the least j >= 0 with !((row[j]−a)−p[j] >= t), or
// len(row) if there is none. With a = 0 the value is row[j]−p[j]
// exactly (x − 0 is x for every x, −0 included). len(p) >= len(row).
// Time O(len(row)).
func DiffBelow(row, p []float64, a, t float64) int {
	p = p[:len(row)]
	j := diffBelowBlocks(row, p, a, t, false)
	for ; j < len(row); j++ {
		if !(row[j]-a-p[j] >= t) {
			return j
		}
	}
	return j
}

// DiffAtMost is DiffBelow with the bound !((row[j]−a)−p[j] > t): the
// least j whose value is at most t, or NaN.
func DiffAtMost(row, p []float64, a, t float64) int {
	p = p[:len(row)]
	j := diffBelowBlocks(row, p, a, t, true)
	for ; j < len(row); j++ {
		if !(row[j]-a-p[j] > t) {
			return j
		}
	}
	return j
}

// Extreme returns the least j >= 0 at which row[j] is not finite, or
// |row[j]| > m, or row[j] < lo[j], or len(row) if there is none: the
// entries at which a pass keeping the largest magnitude m and each
// column's minimum lo[j] has anything to do. len(lo) >= len(row). Time
// O(len(row)).
func Extreme(row, lo []float64, m float64) int {
	lo = lo[:len(row)]
	j := extremeBlocks(row, lo, m)
	for ; j < len(row); j++ {
		if x := row[j]; x-x != 0 || math.Abs(x) > m || x < lo[j] {
			return j
		}
	}
	return j
}
