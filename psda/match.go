package psda

import (
	"fmt"
	"runtime/debug"

	"github.com/psda-dev/psda/psda/assign"
	"github.com/psda-dev/psda/psda/internal/cost"
	"github.com/psda-dev/psda/psda/internal/feat"
)

// Pair is one Stage 1 match: source row S with target row T. It is defined
// in internal/feat, below the cost models that read it.
type Pair = feat.Pair

// Matching is the result of Match.
type Matching struct {
	// Pairs holds max(n_s, n_t) source–target pairs, ordered by the index on
	// the larger side (by source when n_s >= n_t).
	Pairs []Pair
	// Quads holds Stage 2 quadruplets as indices into Pairs; nil with Stages = 1.
	Quads [][2]int
	// Singles holds the index into Pairs of the pair left without a partner
	// (at most one, when len(Pairs) is odd); with Stages = 1 every pair is single.
	Singles []int
	// Stage1Cost is the sum of C^st over Pairs, certified globally optimal.
	Stage1Cost float64
	// Stage2Cost is the sum of C^MM over Quads plus, for a single pair r,
	// C^MM(r, ∅) = ‖w_r‖²/k² (the pair grouped with nothing).
	Stage2Cost float64
	// sumsPending reports that Stage1Cost still lacks the kernel sums'
	// share, which Stage 2 adds from its pass (cost.NewStage1's deferSums,
	// addDeferred).
	sumsPending bool
	// Stage2Bound is the certified dual objective of Stage 2's matching LP
	// (vertex and blossom duals, docs/method.md "Stage 2"), a lower bound on
	// every Stage2Cost that equals it up to rounding.
	Stage2Bound float64
}

// Stage2Gap returns (Stage2Cost − Stage2Bound)/Stage2Bound, or 0 when the
// bound is 0 and the cost too.
func (m *Matching) Stage2Gap() float64 {
	if m.Stage2Cost == m.Stage2Bound {
		return 0
	}
	return (m.Stage2Cost - m.Stage2Bound) / m.Stage2Bound
}

// Check reports whether m is a matching of nSource source and nTarget target
// examples that a Schedule can serve: max(nSource, nTarget) pairs whose
// indices lie in the domains, each pair in exactly one quadruplet or single.
// Match's results pass; callers that rebuild a Matching from stored arrays
// check them with it. Time and memory O(len(m.Pairs)).
func (m *Matching) Check(nSource, nTarget int) error {
	if p := max(nSource, nTarget); len(m.Pairs) != p {
		return fmt.Errorf("psda: %d pairs for %d source and %d target examples: want max(n_source, n_target) = %d", len(m.Pairs), nSource, nTarget, p)
	}
	for r, pr := range m.Pairs {
		if pr.S < 0 || pr.S >= nSource || pr.T < 0 || pr.T >= nTarget {
			return fmt.Errorf("psda: pair %d is (%d, %d): the pairs do not index %d source and %d target examples", r, pr.S, pr.T, nSource, nTarget)
		}
	}
	return m.checkUnits()
}

// checkUnits reports whether every pair of m is in exactly one quadruplet or
// single, the units a Schedule shuffles.
func (m *Matching) checkUnits() error {
	p := len(m.Pairs)
	seen := make([]bool, p)
	mark := func(r int) error {
		if r < 0 || r >= p {
			return fmt.Errorf("psda: a unit refers to pair %d, but there are %d pairs: the quadruplets and singles must cover each pair exactly once", r, p)
		}
		if seen[r] {
			return fmt.Errorf("psda: pair %d appears in more than one unit: the quadruplets and singles must cover each pair exactly once", r)
		}
		seen[r] = true
		return nil
	}
	for _, q := range m.Quads {
		if err := mark(q[0]); err != nil {
			return err
		}
		if err := mark(q[1]); err != nil {
			return err
		}
	}
	for _, r := range m.Singles {
		if err := mark(r); err != nil {
			return err
		}
	}
	for r, ok := range seen {
		if !ok {
			return fmt.Errorf("psda: pair %d is in no quadruplet and not single: the quadruplets and singles must cover each pair exactly once", r)
		}
	}
	return nil
}

// checkSizes validates the inputs of Match that depend on the data.
func checkSizes(src, tgt Matrix, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := validateMatrix(src, "source"); err != nil {
		return err
	}
	if err := validateMatrix(tgt, "target"); err != nil {
		return err
	}
	if src.D != tgt.D {
		return fmt.Errorf("psda: source has %d features per row but target has %d: both must come from the same feature extractor", src.D, tgt.D)
	}
	if err := cfg.fits(src.N, tgt.N); err != nil {
		return err
	}
	return checkMemory(src.N, tgt.N, src.D, cfg)
}

// Match computes the PSDA matching of src and tgt: Stage 1 pairs by an exact
// (capacitated when n_s != n_t) linear assignment under C^st, then, when
// cfg.Stages == 2, quadruplets by a minimum-weight perfect matching under C^MM.
// It returns an error, never panics, on invalid input.
//
// Time O(n_s·n_t·d) for the costs plus the assignment (O(n³) worst case);
// memory one dense n_s×n_t and then one P×P float64 matrix (the first is
// released before the second is allocated), plus P·min(n_s, n_t) float64 for
// the RBF kernel when max(n_s, n_t) >= 4·min(n_s, n_t).
//
// With cfg.Monitor set, Match reports its progress there and returns an error
// wrapping ErrCancelled soon after the Monitor is cancelled; a cancelled
// Match leaves no state behind, so the next one starts afresh.
func Match(src, tgt Matrix, cfg Config) (*Matching, error) {
	if err := checkSizes(src, tgt, cfg); err != nil {
		return nil, err
	}
	sparse1, sparse2 := SparseStages(src, tgt, cfg)
	mon := cfg.Monitor
	mon.start(src.N, tgt.N, src.D, cfg, sparse1, sparse2)
	defer func() {
		if mon != nil {
			mon.phase.Store(PhaseDone)
		}
	}()
	m := &Matching{}
	// Balanced RBF, two stages: Stage 2's pass supplies the kernel sums of
	// Stage 1's objective (cost.NewStage1's deferSums), which saves Stage 1 a
	// Gram pass over each domain and lets the sparse path's candidate pass
	// run in float32.
	m.sumsPending = cfg.Stages == 2 && cfg.Discrepancy == MMD && cfg.Kernel == RBF && src.N == tgt.N
	run1 := stage1
	if sparse1 {
		run1 = stage1Sparse
	}
	if err := run1(src, tgt, cfg, m); err != nil {
		return nil, err
	}
	if cfg.Stages == 1 {
		m.Singles = make([]int, len(m.Pairs))
		for r := range m.Singles {
			m.Singles[r] = r
		}
		mon.finish()
		return m, nil
	}
	// Stage 1's cost matrix is garbage now; hand its pages back before
	// Stage 2 allocates its own, so that peak memory is the larger of the
	// two matrices, not their sum.
	if int64(src.N)*int64(tgt.N) >= freeAbove {
		debug.FreeOSMemory()
	}
	run2 := stage2
	if sparse2 {
		run2 = stage2Sparse
	}
	if err := run2(src, tgt, cfg, m); err != nil {
		return nil, err
	}
	mon.finish()
	return m, nil
}

// freeAbove is the number of Stage 1 cost entries from which Match returns
// memory to the OS between the stages (a forced GC costs milliseconds).
const freeAbove = 1 << 22

// stage1 solves the paper's eqs. 3–5 with the larger side as rows, so that the
// assignment uses every row once and spreads the rows evenly over the columns.
func stage1(src, tgt Matrix, cfg Config, m *Matching) error {
	cfg.Monitor.enter(PhaseStage1Costs)
	md := newStage1Model(src, tgt, cfg, m.sumsPending)
	c := md.Dense()
	if err := cfg.Monitor.err(); err != nil {
		return fmt.Errorf("psda: stage 1 costs: %w", err)
	}
	cfg.Monitor.enter(PhaseStage1Assign)
	nr, nc := src.N, tgt.N
	if tgt.N > src.N {
		c = transpose(c, src.N, tgt.N)
		nr, nc = tgt.N, src.N
	}
	sol, err := assign.ImbalancedWith(c, nr, nc, cfg.Monitor.hooks(PhaseStage1Assign))
	if err != nil {
		return fmt.Errorf("psda: stage 1: %w", err)
	}
	// The dual certificate costs one pass over c and turns "the solver says
	// optimal" into a checked fact; a failure would be a solver bug.
	if err := assign.Certify(c, nr, nc, sol, assign.PriceTol(c)); err != nil {
		return fmt.Errorf("psda: stage 1 optimality certificate failed (a bug: please report it): %w", err)
	}
	m.Pairs = make([]Pair, nr)
	for r, col := range sol.Col4Row {
		if tgt.N > src.N {
			m.Pairs[r] = Pair{S: col, T: r}
		} else {
			m.Pairs[r] = Pair{S: r, T: col}
		}
	}
	m.Stage1Cost = sol.Cost
	return nil
}

// stage2 groups the pairs into quadruplets. With an odd number of pairs, the
// cost matrix carries a dummy node (a pair whose w is zero) so that the left
// over pair is chosen optimally, not arbitrarily.
func stage2(src, tgt Matrix, cfg Config, m *Matching) error {
	cfg.Monitor.enter(PhaseStage2Costs)
	c, n, md := stage2Dense(src, tgt, cfg, m.Pairs)
	if err := cfg.Monitor.err(); err != nil {
		return fmt.Errorf("psda: stage 2 costs: %w", err)
	}
	m.addDeferred(md)
	cfg.Monitor.enter(PhaseStage2Match)
	pm, err := assign.MinWeightPerfectMatchingWith(c, n, cfg.Monitor.hooks(PhaseStage2Match))
	if err != nil {
		return fmt.Errorf("psda: stage 2: %w", err)
	}
	// As in Stage 1, the vertex and blossom duals turn "the solver says
	// optimal" into a checked fact in one pass over c.
	em := &assign.ExactMatching{Mate: pm.Mate, Cost: pm.Cost, Duals: pm.Duals}
	if err := assign.CertifyMatching(c, n, em, assign.PriceTol(c)); err != nil {
		return fmt.Errorf("psda: stage 2 optimality certificate failed (a bug: please report it): %w", err)
	}
	m.group(pm.Mate)
	m.Stage2Cost, m.Stage2Bound = pm.Cost, pm.Bound
	return nil
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

// addDeferred completes a Stage1Cost computed without the kernel sums
// (cost.NewStage1's deferSums) from the sums of md's last float64 full pass: with
// n_s = n_t = n, the terms' sums over all rows and columns are
// 2n·nterms + (2ΣST − ΣSS − ΣTT)/n (docs/method.md, "Stage 1"), of which the
// deferred terms kept 2n·nterms.
func (m *Matching) addDeferred(md *cost.Stage2) {
	if !m.sumsPending || md == nil {
		return
	}
	ss, st, tt := md.KernelSums()
	m.Stage1Cost += (2*st - ss - tt) / float64(md.P) * md.Scale
	m.sumsPending = false
}

// transpose returns the nc×nr transpose of the row-major nr×nc matrix c.
func transpose(c []float64, nr, nc int) []float64 {
	t := make([]float64, len(c))
	for i := 0; i < nr; i++ {
		for j := 0; j < nc; j++ {
			t[j*nr+i] = c[i*nc+j]
		}
	}
	return t
}
