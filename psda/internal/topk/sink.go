package topk

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
	bound := s.Bound
	row = func(a, b0 int, xs []float64) {
		mu := s.Stripe(a / LockBlock)
		mu.Lock()
		za, lim := z[a], bound(a)
		ws := w[b0 : b0+len(xs)]
		for k, x := range xs {
			// Beats before skip: on tie-heavy costs most entries tie the
			// bound, and skip may cost a search.
			if r := c*x - za - ws[k]; r <= lim && !(noDiag && a == b0+k) && s.Beats(a, r, int32(b0+k)) && !skip(a, b0+k) {
				s.Offer(a, r, int32(b0+k), x)
				lim = bound(a)
			}
		}
		mu.Unlock()
	}
	col = func(b, a0 int, xs []float64, idx []int) {
		locked, wb := -1, w[b]
		for k, x := range xs {
			a := a0 + k
			if idx != nil {
				a = idx[a]
			}
			if l := a / LockBlock; l != locked {
				if locked >= 0 {
					s.Stripe(locked).Unlock()
				}
				s.Stripe(l).Lock()
				locked = l
			}
			if r := c*x - z[a] - wb; r <= bound(a) && !(noDiag && a == b) && s.Beats(a, r, int32(b)) && !skip(a, b) {
				s.Offer(a, r, int32(b), x)
			}
		}
		if locked >= 0 {
			s.Stripe(locked).Unlock()
		}
	}
	return row, col
}

// Candidates returns the sinks of a candidate pass over nr row items and
// nc column indices: every entry offered at its cross part.
func (s *Lists) Candidates(nr, nc int) (row func(a, b0 int, xs []float64), col func(b, a0 int, xs []float64, idx []int)) {
	return s.Sinks(1, make([]float64, nr), make([]float64, nc), false, func(int, int) bool { return false })
}
