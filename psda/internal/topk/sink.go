package topk

import "github.com/psda-dev/psda/psda/internal/scan"

// Sinks returns the callbacks of a Gram pass (assign.PricedModel's Pass)
// that offer every entry (a, b) with cross part x to item a, valued at its
// reduced cost c·x − z[a] − w[b] and with aux x; the entries (a, a) when
// noDiag and those with skip(a, b) are left out. skip is only asked about
// entries that would enter the list (Beats), so it may cost more than the
// rest.
// row takes entries (a, b0+k), col entries (a0+k, b), or (idx[a0+k], b)
// when idx is not nil. Both lock the stripes they offer to, so a pass may
// call them concurrently.
func (s *Lists) Sinks(c float64, z, w []float64, noDiag bool, skip func(a, b int) bool) (row func(a, b0 int, xs []float64), col func(b, a0 int, xs []float64, idx []int)) {
	row = func(a, b0 int, xs []float64) {
		mu := s.Stripe(a / LockBlock)
		mu.Lock()
		za, lim := z[a], s.bv[a]
		// strict: an entry tying the bound loses (NewByIndex lists, once
		// the bound's index is below this call's, which rise): on
		// tie-heavy costs most entries tie it, and the test is then one
		// predictable branch instead of a hash or a mispredicted one.
		strict := s.byIndex && s.bk[a] < uint64(b0)
		ws := w[b0 : b0+len(xs)]
		for k := 0; k < len(xs); k++ {
			// Most entries exceed the bound. With c = 1 (the dense
			// matrix's pricing) the scan skips them, by the test below
			// on (x − za) − ws[k], which is c·x − za − ws[k] exactly
			// there (fused or not); else four are tested at a time.
			if c == 1 {
				if strict {
					k += scan.DiffBelow(xs[k:], ws[k:], za, lim)
				} else {
					k += scan.DiffAtMost(xs[k:], ws[k:], za, lim)
				}
				if k == len(xs) {
					break
				}
			} else if k+4 <= len(xs) {
				r0, r1 := c*xs[k]-za-ws[k], c*xs[k+1]-za-ws[k+1]
				r2, r3 := c*xs[k+2]-za-ws[k+2], c*xs[k+3]-za-ws[k+3]
				if strict && r0 >= lim && r1 >= lim && r2 >= lim && r3 >= lim || r0 > lim && r1 > lim && r2 > lim && r3 > lim {
					k += 3
					continue
				}
			}
			x := xs[k]
			r := c*x - za - ws[k]
			if !(r < lim || !strict && r == lim) || noDiag && a == b0+k {
				continue
			}
			// Beats before skip: skip may cost a search.
			if s.Beats(a, r, int32(b0+k)) && !skip(a, b0+k) {
				s.add(a, r, int32(b0+k), x)
				lim = s.bv[a]
				strict = s.byIndex && s.bk[a] < uint64(b0+k+1)
			}
		}
		mu.Unlock()
	}
	col = func(b, a0 int, xs []float64, idx []int) {
		wb, bv := w[b], s.bv
		// Both loops below test r <= bv[a], the bound read directly (a
		// call through a method value per entry cost half the sink), and
		// leave the rest of an offer to entry, which most entries skip.
		entry := func(a int, r, x float64) {
			if !(noDiag && a == b) && s.Beats(a, r, int32(b)) && !skip(a, b) {
				s.add(a, r, int32(b), x)
			}
		}
		if idx != nil {
			locked := -1
			for k, x := range xs {
				a := idx[a0+k]
				if l := a / LockBlock; l != locked {
					if locked >= 0 {
						s.Stripe(locked).Unlock()
					}
					s.Stripe(l).Lock()
					locked = l
				}
				if r := c*x - z[a] - wb; r <= bv[a] {
					entry(a, r, x)
				}
			}
			if locked >= 0 {
				s.Stripe(locked).Unlock()
			}
			return
		}
		// Items a0+k in order: one lock per stripe, and most entries
		// exceed their bound, so four are tested at a time (an offer to
		// item a changes only bv[a], so the bounds of the next ones hold).
		for k := 0; k < len(xs); {
			a := a0 + k
			l := a / LockBlock
			end := min(len(xs), (l+1)*LockBlock-a0)
			mu := s.Stripe(l)
			mu.Lock()
			for ; k < end; k++ {
				if k+4 <= end {
					a := a0 + k
					zs, bs := z[a:a+4], bv[a:a+4]
					r0, r1 := c*xs[k]-zs[0]-wb, c*xs[k+1]-zs[1]-wb
					r2, r3 := c*xs[k+2]-zs[2]-wb, c*xs[k+3]-zs[3]-wb
					if r0 > bs[0] && r1 > bs[1] && r2 > bs[2] && r3 > bs[3] {
						k += 3
						continue
					}
				}
				a := a0 + k
				if r := c*xs[k] - z[a] - wb; r <= bv[a] {
					entry(a, r, xs[k])
				}
			}
			mu.Unlock()
		}
	}
	return row, col
}

// Candidates returns the sinks of a candidate pass over nr row items and
// nc column indices: every entry offered at its cross part.
func (s *Lists) Candidates(nr, nc int) (row func(a, b0 int, xs []float64), col func(b, a0 int, xs []float64, idx []int)) {
	return s.Sinks(1, make([]float64, nr), make([]float64, nc), false, func(int, int) bool { return false })
}
