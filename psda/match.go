package psda

import (
	"fmt"
	"runtime"
	"runtime/debug"

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
	// keepCross asks the dense Stage 1 to keep its RBF cross kernel, and
	// cross holds it until Stage 2's pass reads it (plan.keepCross); nil
	// once Match returns.
	keepCross bool
	cross     *cost.Cross
	// handOn asks the dense Stage 1 to allocate its matrix large enough for
	// Stage 2's and to leave it in spare once solved, for Stage 2 to
	// overwrite (balanced dense stages: its pages are mapped already); nil
	// once Match returns.
	handOn bool
	spare  []float64
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

// checkSizes validates the inputs of Match that depend on the data, the
// memory under pl.
func (pl *plan) checkSizes(src, tgt Matrix, cfg Config) error {
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
	// A cancel pending from before the Match (Monitor.Cancel: it applies
	// to the next one) is reported before a refusal for memory, which
	// would send the caller to another solver or a bigger machine.
	if err := cfg.Monitor.err(); err != nil {
		return err
	}
	return pl.checkMemory(src.N, tgt.N, src.D, cfg)
}

// Match computes the PSDA matching of src and tgt: Stage 1 pairs by an exact
// (capacitated when n_s != n_t) linear assignment under C^st, then, when
// cfg.Stages == 2, quadruplets by a minimum-weight perfect matching under C^MM.
// It returns an error, never panics, on invalid input.
//
// Time O(n_s·n_t·d) for the costs plus the assignment (O(n³) worst case);
// memory one dense n_s×n_t and then one P×P float64 matrix (the first is
// released before the second is allocated, or becomes it when n_s = n_t),
// plus 2·P·min(n_s, n_t) + min(n_s, n_t)² float64 for the RBF kernel
// tables when max(n_s, n_t) >= 4·min(n_s, n_t), live beside the P×P
// matrix (checkMemory counts them), or, with n_s = n_t, n_s·n_t float64 for Stage 1's RBF
// kernel, kept for Stage 2 where it fits (plan.keepCross; imbalanced, it
// is kept through Stage 1 and becomes one of those tables).
//
// With cfg.Monitor set, Match reports its progress there and returns an error
// wrapping ErrCancelled soon after the Monitor is cancelled; a cancelled
// Match leaves no state behind, so the next one starts afresh.
func Match(src, tgt Matrix, cfg Config) (*Matching, error) {
	return defaultPlan().match(src, tgt, cfg)
}

// match is Match under pl. The stages are in stage1.go and stage2.go
// (dense) and stage1_sparse.go and stage2_sparse.go (sparse).
func (pl *plan) match(src, tgt Matrix, cfg Config) (*Matching, error) {
	if err := pl.checkSizes(src, tgt, cfg); err != nil {
		return nil, err
	}
	sparse1, sparse2 := pl.stages(src, tgt, cfg)
	m := &Matching{}
	m.keepCross = pl.keepCross(src.N, tgt.N, cfg, sparse1, sparse2)
	mon := cfg.Monitor
	mon.start(src.N, tgt.N, src.D, cfg, sparse1, sparse2, pl.factored(src.N, tgt.N, cfg, sparse2), m.keepCross)
	defer func() {
		if mon != nil {
			mon.phase.Store(PhaseDone)
		}
	}()
	// RBF, two stages: Stage 2's pass supplies the kernel sums of Stage 1's
	// objective (cost.NewStage1's deferSums), which saves Stage 1 the Gram
	// pass over each domain whose rows are all used once (both when
	// balanced, then also letting the sparse path's candidate pass run in
	// float32; else the larger).
	m.sumsPending = cfg.Stages == 2 && cfg.Discrepancy == MMD && cfg.Kernel == RBF
	m.handOn = cfg.Stages == 2 && src.N == tgt.N && !sparse1 && !sparse2
	if m.handOn && int64(src.N)*int64(tgt.N) >= freeAbove {
		// No collection between the stages frees the matrices of earlier
		// Matches now (Stage 1's pages go on to Stage 2): collect them
		// before allocating, so that this Match reuses their pages and
		// the heap holds one Match's matrices, not two.
		runtime.GC()
	}
	run1 := pl.stage1
	if sparse1 {
		run1 = pl.stage1Sparse
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
	// Stage 1's cost matrix is garbage now, unless Stage 2 overwrites it
	// (handOn); hand its pages back before Stage 2 allocates its own, so
	// that peak memory is the larger of the two matrices, not their sum.
	if m.spare == nil && int64(src.N)*int64(tgt.N) >= freeAbove {
		debug.FreeOSMemory()
	}
	run2 := pl.stage2
	if sparse2 {
		run2 = pl.stage2Sparse
	}
	err := run2(src, tgt, cfg, m)
	m.cross, m.spare = nil, nil
	if err != nil {
		return nil, err
	}
	mon.finish()
	return m, nil
}

// newMatrix returns a zero slice of length n and the given capacity for a
// dense cost matrix that its pass writes whole: from freeAbove entries of
// capacity on, with its pages mapped ahead (prefault).
func newMatrix(n, capacity int) []float64 {
	c := make([]float64, n, capacity)
	if capacity >= freeAbove {
		prefault(c[:capacity])
	}
	return c
}

// freeAbove is the number of Stage 1 cost entries from which Match returns
// memory to the OS between the stages (or collects before Stage 1, handOn) (a forced GC costs milliseconds).
const freeAbove = 1 << 22
