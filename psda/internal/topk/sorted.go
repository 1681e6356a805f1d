package topk

import (
	"math"

	"github.com/psda-dev/psda/psda/internal/scan"
)

// This file holds the sequential, sorted k-best lists of the dense solvers
// (package assign): ties keep the earlier index, an order the dense
// auction and warm start rely on for their results.

// SmallestK fills topV (ascending) and topJ with the len(topV) smallest
// values of row[j]+p[j] and their indices j, skipping +Inf, and returns how
// many it kept (fewer when row has fewer finite entries). Time O(len(row))
// when, as usual, few entries beat the running threshold.
func SmallestK(row, p, topV []float64, topJ []int) int {
	m, thr := 0, math.Inf(1) // thr: the largest kept value once all slots are full
	p = p[:len(row)]
	for j := 0; j < len(row); j++ {
		// Most entries fail the threshold: the scan skips them, to the
		// next h < thr (or NaN), in blocks.
		if j += scan.SumBelow(row[j:], p[j:], thr); j == len(row) {
			break
		}
		h := row[j] + p[j]
		if h >= thr {
			continue
		}
		if m = InsertSorted(topV, topJ, m, h, j); m == len(topV) {
			thr = topV[m-1]
		}
	}
	return m
}

// SmallestKBelow returns SmallestK(row, p, topV, topJ), faster when t is
// at least, and near, the len(topV)-th smallest value: until its list is
// full it skips every entry above t. The result is SmallestK's whatever t
// (NaN included): its entries are the k first of the row's finite values
// by (value, index), and when at least k values are at most t, every one
// of those is at most t, so the entries at most t, taken in order by the
// same insertions, give the same list; when fewer are (t too low), or a
// value is NaN (whose place depends on the order of the insertions), the
// row is scanned again by SmallestK. The dense warm start's candidate
// passes give each row the row before's k-th smallest value plus its
// list's spread as t: on the relu Stage 2 dump at n = 20,000 (k = 32) a
// row then stops its scan 112 times on average instead of 240 (each stop a
// call and a sorted insertion), and 23% of rows are scanned again; the two
// passes took 7% less CPU (docs/performance.md). Wider margins rescan
// fewer rows but stop more often (2 spreads: 160 stops, 10% rescanned).
func SmallestKBelow(row, p, topV []float64, topJ []int, t float64) int {
	k := len(topV)
	m, thr := 0, math.Inf(1)
	p = p[:len(row)]
	for j := 0; j < len(row); j++ {
		if m < k {
			j += scan.SumAtMost(row[j:], p[j:], t)
		} else {
			j += scan.SumBelow(row[j:], p[j:], thr)
		}
		if j == len(row) {
			break
		}
		h := row[j] + p[j]
		if h != h {
			return SmallestK(row, p, topV, topJ)
		}
		if h > t || h >= thr {
			continue
		}
		if m = InsertSorted(topV, topJ, m, h, j); m == k {
			thr = topV[m-1]
		}
	}
	if m < k {
		return SmallestK(row, p, topV, topJ)
	}
	return m
}

// InsertSorted inserts value h with index j into the ascending list
// v[:m], ix[:m] of capacity len(v), dropping the largest entry when the list
// is full (the caller has checked that h is smaller), and returns the new
// length.
func InsertSorted[I int | int32](v []float64, ix []I, m int, h float64, j I) int {
	if m == len(v) {
		m--
	}
	t := m
	for t > 0 && v[t-1] > h {
		v[t], ix[t] = v[t-1], ix[t-1]
		t--
	}
	v[t], ix[t] = h, j
	return m + 1
}

// Columns keeps the k smallest values offered to each of n columns, with
// their rows, sorted ascending.
type Columns struct {
	k   int
	V   []float64 // column j's values are V[j*k : j*k+M[j]], rows I[j*k : j*k+M[j]]
	I   []int32
	M   []int
	thr []float64 // column j's k-th smallest so far, +Inf until it has k
}

// NewColumns returns empty lists of k entries for n columns.
func NewColumns(n, k int) *Columns {
	l := &Columns{k: k, V: make([]float64, n*k), I: make([]int32, n*k), M: make([]int, n), thr: make([]float64, n)}
	for j := range l.thr {
		l.thr[j] = math.Inf(1)
	}
	return l
}

// Offer offers entry (i, j) of every column j with value row[j] + v[j] − u.
func (l *Columns) Offer(i int, row, v []float64, u float64) {
	thr := l.thr[:len(row)]
	v = v[:len(row)]
	for j, x := range row {
		if h := x + v[j] - u; h < thr[j] { // most entries: one sequential read of thr
			l.Insert(j, h, int32(i))
		}
	}
}

// Insert adds value h of row i to column j's list if it is among the k
// smallest.
func (l *Columns) Insert(j int, h float64, i int32) {
	k := l.k
	if !(h < l.thr[j]) {
		return
	}
	cv, ci := l.V[j*k:j*k+k], l.I[j*k:j*k+k]
	if l.M[j] = InsertSorted(cv, ci, l.M[j], h, i); l.M[j] == k {
		l.thr[j] = cv[k-1]
	}
}
