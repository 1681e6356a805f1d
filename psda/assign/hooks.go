package assign

// Hooks lets the caller of a long solve follow it and stop it. The zero value
// (and a nil *Hooks) does neither. The solvers are single-threaded and call
// the hooks from the goroutine that called them.
type Hooks struct {
	// Stop, when non-nil, is polled between units of work (each auction bid
	// batch of pollEvery bids, each augmenting path); when it returns a
	// non-nil error the solver abandons the solve and returns that error.
	Stop func() error
	// Progress, when non-nil, is called with the fraction of the solve done,
	// in [0, 1] and non-decreasing, at most about once per augmenting path.
	Progress func(frac float64)
}

// pollEvery is the number of auction bids between two Stop polls: a bid
// costs O(cacheK) most of the time, so polling an atomic flag every bid
// would cost more than the bid.
const pollEvery = 4096

// stop polls h.Stop.
func (h *Hooks) stop() error {
	if h == nil || h.Stop == nil {
		return nil
	}
	return h.Stop()
}

// progress reports frac to h.Progress.
func (h *Hooks) progress(frac float64) {
	if h != nil && h.Progress != nil {
		h.Progress(min(1, max(0, frac)))
	}
}

// sub returns hooks that map this solve's progress into [lo, hi] of h's,
// for a solve that is one part of a larger one; Stop is shared.
func (h *Hooks) sub(lo, hi float64) *Hooks {
	if h == nil {
		return nil
	}
	if h.Progress == nil {
		return h
	}
	return &Hooks{Stop: h.Stop, Progress: func(f float64) { h.Progress(lo + (hi-lo)*f) }}
}

// stopOnly returns hooks with h's Stop and no progress, for nested solves
// whose progress would not be monotone within the caller's.
func (h *Hooks) stopOnly() *Hooks {
	if h == nil || h.Progress == nil {
		return h
	}
	return &Hooks{Stop: h.Stop}
}
