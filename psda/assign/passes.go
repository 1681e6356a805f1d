package assign

import (
	"sync/atomic"

	"github.com/psda-dev/psda/psda/internal/par"
)

// This file holds the parallel passes over a whole cost matrix that check
// or measure it: the input checks, PriceTol, the certificates. Each reads
// all n² entries (3.2 GB for psda's dense Stage 2 at P = 20,000) and was a
// serial loop; split over the cores by chunks of rows they return the
// same result whatever the number of workers: maxima are exact, and a
// check reports the violation of lowest row (in chunk order, so the first
// that the serial loop would have met), so errors and results stay
// bit-identical under any PSDA_NUM_THREADS.

// passEntries is the least number of entries per chunk of a pass: smaller
// matrices are checked serially, where a goroutine would cost more than
// the scan.
const passEntries = 1 << 16

// chunkRows returns the rows per chunk of a pass over nr rows of nc
// entries: at least passEntries entries, and at least 8 rows.
func chunkRows(nr, nc int) int {
	return max(8, passEntries/max(nc, 1))
}

// firstFailing runs check on chunks [i0, i1) of the rows [0, nr) (rows of
// nc entries) on all cores and returns the least row any chunk returned,
// or −1 when none failed. check returns the first failing row of its
// chunk or −1; chunks that start after a failure already found are
// skipped, since their rows cannot be the least.
func firstFailing(nr, nc int, check func(i0, i1 int) int) int {
	return firstFailingBy(nr, chunkRows(nr, nc), check)
}

// firstFailingBy is firstFailing with chunks of rows rows.
func firstFailingBy(nr, rows int, check func(i0, i1 int) int) int {
	chunks := (nr + rows - 1) / rows
	if chunks <= 1 {
		return check(0, nr)
	}
	var found atomic.Int64
	found.Store(int64(nr))
	par.For(chunks, func() func(int) {
		return func(k int) {
			i0 := k * rows
			if int64(i0) >= found.Load() {
				return
			}
			if i := check(i0, min(nr, i0+rows)); i >= 0 {
				for {
					old := found.Load()
					if int64(i) >= old || found.CompareAndSwap(old, int64(i)) {
						break
					}
				}
			}
		}
	})
	if i := int(found.Load()); i < nr {
		return i
	}
	return -1
}

// chunkMax runs f on chunks [i0, i1) of the rows [0, nr) (rows of nc
// entries) on all cores and returns the largest value any chunk returned
// (lo when none is larger).
func chunkMax(nr, nc int, lo float64, f func(i0, i1 int) float64) float64 {
	rows := chunkRows(nr, nc)
	chunks := (nr + rows - 1) / rows
	if chunks <= 1 {
		return max(lo, f(0, nr))
	}
	out := make([]float64, chunks)
	par.For(chunks, func() func(int) {
		return func(k int) { out[k] = f(k*rows, min(nr, (k+1)*rows)) }
	})
	m := lo
	for _, x := range out {
		if x > m {
			m = x
		}
	}
	return m
}

// maxAbsFinite returns the largest |x| over the entries of c other than
// +Inf (0 when there are none), on all cores.
func maxAbsFinite(c []float64) float64 {
	const nc = 1024 // c is read as rows of nc entries and a tail
	nr := len(c) / nc
	m := chunkMax(nr, nc, 0, func(i0, i1 int) float64 { return maxAbsIn(c[i0*nc : i1*nc]) })
	return max(m, maxAbsIn(c[nr*nc:]))
}

// maxAbsIn is maxAbsFinite's serial loop: plain comparisons, since there
// is no NaN to order, and −x for |x|, which does not leave the loop.
func maxAbsIn(c []float64) float64 {
	m := 0.0
	for _, x := range c {
		if x > m && x < inf {
			m = x
		} else if -x > m {
			m = -x
		}
	}
	return m
}
