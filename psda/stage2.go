package psda

import (
	"fmt"
	"sync"

	"github.com/psda-dev/psda/psda/assign"
	"github.com/psda-dev/psda/psda/internal/cost"
)

// This file is Stage 2 on the dense path: a minimum-weight perfect
// matching of the pairs on the full P×P cost matrix, and the two steps
// both paths end with, group and addDeferred (stage2_sparse.go is the
// sparse path's).

// stage2 groups the pairs into quadruplets. With an odd number of pairs, the
// cost matrix carries a dummy node (a pair whose w is zero) so that the left
// over pair is chosen optimally, not arbitrarily.
func (pl *plan) stage2(src, tgt Matrix, cfg Config, m *Matching) error {
	cfg.Monitor.enter(PhaseStage2Costs)
	// A cancel that came during Stage 1's last steps stops here, before a
	// P×P matrix is allocated and its pages mapped (0.5–0.9 s at P = 20,000).
	if err := cfg.Monitor.err(); err != nil {
		return fmt.Errorf("psda: stage 2 costs: %w", err)
	}
	buf := m.spare // Stage 1's matrix, its pages mapped (handOn)
	if buf == nil {
		// Pages of its own, unmapped when Stage 2 returns (c must not
		// outlive this call), by a goroutine of its own: unmapping 3.2 GB
		// takes 0.25 s, which the caller need not wait for (a matrix from
		// the Go heap is likewise handed back to the OS in the background,
		// by the runtime's scavenger, or at the next Match's FreeOSMemory).
		// checkMemory waits for it (unmapping): until then the pages
		// still count as used.
		p := len(m.Pairs)
		var unmap func()
		buf, unmap = mapMatrix((p + p%2) * (p + p%2))
		defer func() {
			// Locked here, not at the allocation: a Match starting beside
			// this one waits for unmaps under way, not for this Stage 2.
			unmapping.RLock()
			go func() {
				defer unmapping.RUnlock()
				unmap()
			}()
		}()
	}
	c, n, md := stage2Dense(src, tgt, cfg, m.Pairs, m.cross, buf)
	m.cross, m.spare = nil, nil
	if err := cfg.Monitor.err(); err != nil {
		return fmt.Errorf("psda: stage 2 costs: %w", err)
	}
	m.addDeferred(md, src.N, tgt.N)
	cfg.Monitor.enter(PhaseStage2Match)
	// c is written by mirroring (finishStage2): exactly symmetric, so the
	// solver's input check need not compare its two triangles.
	pm, err := assign.MinWeightPerfectMatchingMirrored(c, n, cfg.Monitor.hooks(PhaseStage2Match))
	if err != nil {
		return fmt.Errorf("psda: stage 2: %w", err)
	}
	// As in Stage 1, the vertex and blossom duals turn "the solver says
	// optimal" into a checked fact in one pass over c.
	// Its tolerance is assign.PriceTol(c), from the largest |entry| that
	// the finishing pass kept (a serial pass over c saved).
	em := &assign.ExactMatching{Mate: pm.Mate, Cost: pm.Cost, Duals: pm.Duals}
	if err := assign.CertifyMatching(c, n, em, assign.PriceTol([]float64{md.DenseMax})); err != nil {
		return fmt.Errorf("psda: stage 2 optimality certificate failed (a bug: please report it): %w", err)
	}
	m.group(pm.Mate)
	m.Stage2Cost, m.Stage2Bound = pm.Cost, pm.Bound
	return nil
}

// unmapping counts the Stage 2 matrices whose pages a goroutine is still
// handing back to the OS (stage2), from the moment their Stage 2 returns.
// Until it has, the kernel counts them as used (MemAvailable, a cgroup's
// usage, VmSize), so that a Match started right after another (a loop of
// matchings, the refresher) would read the memory available short by up
// to a whole P×P matrix: a spurious out-of-memory refusal (checkMemory) or
// another keepCross choice. Each pending unmap holds a read lock;
// waitUnmaps takes the write lock. (A
// sync.WaitGroup would panic where Matches run concurrently: an Add while
// another Match's Wait is waking up, "WaitGroup is reused before previous
// Wait has returned".)
var unmapping sync.RWMutex

// waitUnmaps returns once the Stage 2 matrices of the Matches that have
// returned are unmapped.
func waitUnmaps() {
	unmapping.Lock()
	unmapping.Unlock() // nothing to guard: the lock is the wait
}

// group fills Quads and Singles from a perfect matching of the pairs (and
// the dummy node len(Pairs) when their number is odd).
func (m *Matching) group(mate []int) {
	p := len(m.Pairs)
	for r, q := range mate {
		switch {
		case r >= p:
		case q >= p:
			m.Singles = append(m.Singles, r)
		case r < q:
			m.Quads = append(m.Quads, [2]int{r, q})
		}
	}
}

// addDeferred completes a Stage1Cost computed without some kernel sums
// (cost.NewStage1's deferSums) from the sums of md's last float64 full
// pass over the pairs of ns sources and nt targets (docs/method.md,
// "Stage 1"): with n_s = n_t = n, the terms' sums over all rows and
// columns are 2n·nterms + (2ΣST − ΣSS − ΣTT)/n, of which the deferred
// terms kept 2n·nterms; otherwise, with L the larger side and l the
// smaller, the larger side's terms and ‖δ‖² add n_L·Σll/n_l² − ΣLL/n_L.
func (m *Matching) addDeferred(md *cost.Stage2, ns, nt int) {
	if !m.sumsPending || md == nil {
		return
	}
	ss, st, tt := md.KernelSums()
	fs, ft := float64(ns), float64(nt)
	switch {
	case ns == nt:
		m.Stage1Cost += (2*st - ss - tt) / fs * md.Scale
	case ns > nt:
		m.Stage1Cost += (fs*tt/(ft*ft) - ss/fs) * md.Scale
	default:
		m.Stage1Cost += (ft*ss/(fs*fs) - tt/ft) * md.Scale
	}
	m.sumsPending = false
}
