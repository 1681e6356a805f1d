package psda

// This file is the plan of a Match: which path each stage takes (Config's
// Solver rule, useSparse and lowDimSparse, in one place), whether its
// memory fits (checkMemory), and the settings of the sparse path, all held
// by the plan struct. docs/design.md explains the two paths.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/psda-dev/psda/psda/internal/cost"
	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/topk"
)

// plan is how Match runs: the limits that choose each stage's path, the
// memory it may count on, and the sparse path's settings. Match runs
// defaultPlan; a test runs its own (pl.match) to pose as a smaller machine
// or to force pricing rounds, without changing what other tests see.
type plan struct {
	// denseLimit is the size in bytes of the largest dense cost matrix that
	// Auto builds; beyond it the stage goes sparse (useSparse).
	denseLimit int64
	// available reports the bytes a new allocation can use, or 0 where it
	// cannot tell, and the limit that sets them (availableBytes).
	available func() (int64, memLimit)
	// sparseK is the number of candidate edges kept per row and per column
	// by the first pass of Stage 2, and a third of that of Stage 1, whose
	// nearest neighbours predict the optimal partners less well (at n =
	// 50,000, d = 512, 64 per row left 100,000 violated edges and a second
	// full pricing pass; at n = 20,000, 192 left 3,500 and a pass over 2% of
	// the rows). sparseAdd is the number of edges a pricing pass keeps per
	// row (96: clustered data can have dozens of violated edges per row
	// after the first solve).
	sparseK, sparseAdd int
	// blossomBudget: a float32 blossom pricing pass recomputes at most
	// p/blossomBudget edges of a row exactly (each costs a pass over the d
	// features) before the row is priced again in float64 (priceBlossom).
	blossomBudget int
	// noCross makes every stage compute its own kernel values
	// (keepCross), so that tests and benchmarks can compare.
	noCross bool
	// trace, when set (benchmarks), receives one line per sparse round.
	trace func(format string, args ...any)
	// records, when set (tests), sees the row records at the start of every
	// blossom round of the sparse Stage 2 (stage2Blossom).
	records func(rec *rowRecords, md *cost.Stage2, has func(a, b int) bool, y0 []float64,
		cost func(a, b int, x float64) float64)
}

// defaultPlan returns the plan Match runs: the settings measured in
// docs/performance.md, on this machine's memory.
func defaultPlan() *plan {
	return &plan{denseLimit: 3 << 30, available: availableBytes, sparseK: 64, sparseAdd: 96, blossomBudget: 32}
}

// denseBytes returns the peak bytes of the dense path's cost matrices:
// Stage 1's n_s×n_t float64 matrix (written in the solver's layout, the
// larger side's rows first, with no transposing copy: stage1), then Stage
// 2's m×m matrix over the pairs (Stage 1's is released before Stage 2
// allocates). Both depend on the sizes only, not on which domain is the
// source, so that the two orientations of a problem plan alike.
func denseBytes(ns, nt, stages int) int64 {
	s1, s2 := stageBytes(ns, nt)
	if stages == 1 {
		return s1
	}
	return max(s1, s2)
}

// stageBytes returns the bytes of the dense cost matrices of Stage 1 and
// Stage 2 (see denseBytes).
func stageBytes(ns, nt int) (s1, s2 int64) {
	s1 = 8 * int64(ns) * int64(nt)
	m := int64(max(ns, nt))
	m += m % 2
	return s1, 8 * m * m
}

// memLimit names what sets the bytes availableBytes reports, so that
// checkMemory's error names the limit of the same reading (a second reading
// of a cgroup's usage or of VmSize, which move all the time, could name
// another limit, with the wrong advice).
type memLimit int

const (
	limitUnknown      memLimit = iota // no figure: availableBytes is 0
	limitMachine                      // the kernel's MemAvailable
	limitCgroup                       // a memory cgroup's limit (plan_cgroup.go)
	limitAddressSpace                 // RLIMIT_AS (ulimit -v) above VmSize
)

// availableBytes reports the memory a new allocation can use, or 0 where it
// cannot tell, and the limit that sets it: the smallest of what the kernel
// says is available (MemAvailable), what the process's memory cgroup
// limits leave (a container's or a job scheduler's; past it the kernel
// kills the process) and what the address-space limit (RLIMIT_AS, `ulimit
// -v`, common on clusters) leaves above the process's current size (VmSize;
// past it the Go runtime cannot map memory and aborts the process).
// It is defaultPlan's available.
func availableBytes() (int64, memLimit) {
	avail, limit := procKB("/proc/meminfo", "MemAvailable:")<<10, limitMachine
	if avail <= 0 {
		avail, limit = 0, limitUnknown
	}
	if room, ok := cgroupRoom(); ok && (avail <= 0 || room < avail) {
		avail, limit = max(room, 1), limitCgroup
	}
	if room, ok := addressSpaceRoom(); ok && (avail <= 0 || room < avail) {
		// room may be <= 0: the process is already at its limit.
		avail, limit = max(room, 1), limitAddressSpace
	}
	return avail, limit
}

// procKB returns the value in kB of the line starting with key in a /proc
// file, or 0.
func procKB(path, key string) int64 {
	kb, err := strconv.ParseInt(strings.TrimSuffix(keyValue(path, key), " kB"), 10, 64)
	if err != nil {
		return 0
	}
	return kb
}

// keyValue returns the rest, trimmed, of the first line of a file that
// starts with key, or "" (no file, no such line).
func keyValue(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// coralBytes returns the peak bytes of CORAL's d×d matrices for n_s+n_t = n
// rows: two covariances and their weighted difference are live at once, and
// the Gram routine packs the difference once more while it is applied. With
// fewer rows than features CORAL uses no d×d matrix (cost.CORALLowRank) and needs
// O(n·(n + d)) instead, which the cost matrices' bound covers.
func coralBytes(n, d int) int64 {
	if cost.CORALLowRank(n, d) {
		return 0
	}
	return 4 * 8 * int64(d) * int64(d)
}

// checkMemory refuses a matching whose dense cost matrices (and, for CORAL,
// d×d covariances of the d = dim features; for the factored RBF Stage 2,
// its tables, beside the dense Stage 2's matrix) cannot fit, so that the user
// gets an error instead of the process being killed by the kernel's
// out-of-memory handler, or aborted by the Go runtime at an address-space
// limit, part-way through.
func (pl *plan) checkMemory(ns, nt, dim int, cfg Config) error {
	// The pages of the previous Match's Stage 2 matrix (stage2's unmap)
	// are free once its goroutine is done (munmap: about 60 ms per GiB,
	// docs/performance.md; a Match that starts later waits for nothing).
	waitUnmaps()
	avail, limit := pl.available()
	need, what, hint := pl.need(ns, nt, dim, cfg, avail)
	if avail <= 0 || need+need/8 <= avail {
		return nil
	}
	left, hint := shortOf(avail, limit, hint)
	return fmt.Errorf("psda: matching %d source and %d target rows with stages = %d needs about %s for %s, "+
		"but %s: %s",
		ns, nt, cfg.Stages, needText(need, avail), what, left, hint)
}

// need returns the bytes checkMemory counts for the Match, what they hold
// and, for its error, what to change (solver = "dense" offered where the
// dense Match would fit in avail bytes).
func (pl *plan) need(ns, nt, dim int, cfg Config, avail int64) (int64, string, string) {
	s1, s2 := stageBytes(ns, nt)
	sparse1, sparse2 := pl.sparseStages(ns, nt, cfg)
	need, g := s1, pl.sparse1Bytes(ns, nt)
	what := "its dense cost matrices"
	const denseHint = "match a random subset of the larger domain, use stages = 1 if Stage 2 is the larger need, " +
		"use solver = \"sparse\", or run on a machine with more memory"
	hint := denseHint
	if !sparse1 && g >= s1 {
		// The sparse Stage 1 would not need less (sparseStages).
		hint = fmt.Sprintf("match a random subset of the larger domain, or run on a machine with more memory "+
			"(solver = \"sparse\" would need about %s for Stage 1: its candidate graph repeats every edge "+
			"once per copy of its column)", bytesText(g))
	}
	if sparse1 {
		need = g
		what = "the sparse Stage 1's candidate graph and lists " + copiesText(stage1Copies(ns, nt))
		hint = "match a random subset of the larger domain, or run on a machine with more memory"
		// A forced sparse Stage 1 (Auto takes the smaller), where the
		// dense Match, Stage 2's matrix included, would pass this check.
		if dn := pl.denseNeed(ns, nt, dim, cfg); s1 < need && dn+dn/8 <= avail {
			hint = denseInstead(dn) + hint
		}
	}
	tb := int64(0) // Stage 2's RBF tables against the smaller side (stage2Table)
	if pl.factored(ns, nt, cfg, sparse2) {
		tb = cost.FactoredBytes(max(ns, nt), min(ns, nt))
	}
	switch {
	case cfg.Stages == 2 && !sparse2:
		// The dense Stage 2's matrix is filled from the tables: both live.
		if s2+tb > need {
			what = "its dense cost matrices"
			if tb > 0 {
				what += " and Stage 2's kernel tables against the smaller domain"
			}
			hint = denseHint
		}
		need = max(need, s2+tb)
	case tb > need:
		// The sparse Stage 2's tables: refused where they do not fit,
		// never swapped for the other model, so that a Match gives the
		// same results on every machine.
		need = tb
		what = "the sparse Stage 2's kernel tables against the smaller domain"
		hint = "match a random subset of the larger domain, use stages = 1, or run on a machine with more memory"
	}
	cb := int64(0)
	if cfg.Discrepancy == CORAL {
		cb = coralBytes(ns+nt, dim)
	}
	if cb > 0 {
		// The covariances are live while a stage's costs are computed.
		need += cb
		what += fmt.Sprintf(" and CORAL's %d×%d covariances", dim, dim)
	}
	if cb > need/2 {
		hint = "reduce the feature dimension (e.g. project the features to a few hundred dimensions), " +
			"use discrepancy = \"mmd\", or run on a machine with more memory"
	}
	return need, what, hint
}

// shortOf says how much memory is left under the limit that sets avail
// ("only 96 MB of address space is left under …"), and adapts hint's
// "run on a machine with more memory" to that limit.
func shortOf(avail int64, limit memLimit, hint string) (left, hint2 string) {
	src := "memory is available"
	switch limit {
	case limitAddressSpace:
		src = "address space is left under the process's limit (ulimit -v / RLIMIT_AS)"
		hint = strings.Replace(hint, "run on a machine with more memory", "raise the limit (ulimit -v)", 1)
	case limitCgroup:
		src = "memory is left under the process's memory cgroup limit (a container's or a job's: memory.max or memory.limit_in_bytes)"
		hint = strings.Replace(hint, "run on a machine with more memory", "raise the container's or the job's memory limit", 1)
	}
	left = "only " + bytesText(avail)
	if avail <= 1 { // availableBytes' stand-in for none: the process is at or past the limit
		left = "none"
	}
	return left + " of " + src, hint
}

// graphFits refuses the next candidate graph of a sparse Stage 1 of
// n_s × n_t rows (copies copies of each column) when its bytes, with
// checkMemory's margin of an eighth, exceed the memory available now.
// checkMemory counted the first graph (sparse1Bytes); pricing rounds then
// add the violated edges they find, on low-dimensional features up to half
// the candidates again (docs/limits.md), so that a Match it accepted could
// otherwise be killed for memory part-way through.
// held is what the stage holds meanwhile (its edges), free again once
// it returns: solver = "dense" is offered where the dense Match's need
// (dense: denseNeed, Stage 2's matrix included) would fit then.
// first marks the first graph, which checkMemory counted: no pricing round
// has grown it, the memory left shrank since (under RLIMIT_AS, VmSize keeps
// the candidate lists' address space; another process may take memory).
func (pl *plan) graphFits(bytes, held, dense int64, first bool, ns, nt, copies int) error {
	avail, limit := pl.available()
	if avail <= 0 || bytes+bytes/8 <= avail {
		return nil
	}
	hint := "match a random subset of the larger domain, or run on a machine with more memory"
	if dense+dense/8 <= avail+held {
		hint = denseInstead(dense) + hint
	}
	left, hint := shortOf(avail, limit, hint)
	// Wrapped by stage1Sparse as "psda: stage 1 (sparse): …".
	if first {
		return fmt.Errorf("its first candidate graph %s needs about %s, but the memory left shrank since the "+
			"check before the solve: %s: %s", copiesText(copies), needText(bytes, avail), left, hint)
	}
	return fmt.Errorf("its pricing rounds grew the candidate graph %s past the estimate checked before the "+
		"solve: the next graph needs about %s, but %s: %s", copiesText(copies), needText(bytes, avail), left, hint)
}

// denseNeed returns what checkMemory counts for the Match with solver =
// "dense": both stages' dense matrices (Stage 2's with its kernel tables)
// and CORAL's covariances.
func (pl *plan) denseNeed(ns, nt, dim int, cfg Config) int64 {
	cfg.Solver = Dense
	need, _, _ := pl.need(ns, nt, dim, cfg, 0) // no sparse stage: no dense hint to weigh
	return need
}

// needText writes a refused need for its error: with the margin of an
// eighth the checks keep where the need alone is within avail, which would
// otherwise read as a false refusal ("needs about 38 MB, but only 42 MB").
func needText(need, avail int64) string {
	if need > avail {
		return bytesText(need)
	}
	return fmt.Sprintf("%s (%s with the margin of an eighth kept for what the estimate misses)",
		bytesText(need), bytesText(need+need/8))
}

// copiesText says why the sparse Stage 1's graph is large: "(every edge
// once per copy of its column: 4 copies, n_large/n_small)".
func copiesText(copies int) string {
	unit := "copies"
	if copies == 1 {
		unit = "copy"
	}
	return fmt.Sprintf("(every edge once per copy of its column: %d %s, n_large/n_small)", copies, unit)
}

// denseInstead offers the dense solver, whose Match needs dense bytes
// (denseNeed: both stages' matrices where there are two).
func denseInstead(dense int64) string {
	return fmt.Sprintf("use solver = \"dense\" (it needs about %s), ", bytesText(dense))
}

// bytesText writes a byte count for an error message: in GB with one
// decimal, in MB below 1 GB (where "0.0 GB" would say nothing), in bytes
// below 1 MB.
func bytesText(b int64) string {
	switch {
	case b >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(b)/1e9)
	case b >= 1e6:
		return fmt.Sprintf("%.0f MB", float64(b)/1e6)
	}
	return fmt.Sprintf("%d bytes", b)
}

// keepCross reports whether Stage 1 keeps its RBF cross kernel κ(s_i, t_j)
// for Stage 2 to read (cost.Stage2.UseCross), given the paths of the
// stages: a two-stage RBF MMD with a dense Stage 1, and either n_s = n_t
// and a dense Stage 2 (half the kernel entries of its pass), or a Stage 2,
// on either path, that takes the factored model (cost.Factored: its table
// K_ab). The table takes n_s·n_t float64; it must fit, with checkMemory's
// margin, in the available memory (or, where that is unknown, in
// denseLimit): beside each stage's matrix where it lives through Stage
// 2's pass (balanced), beside Stage 1's alone where it becomes one of the
// factored model's tables, which Stage 2 allocates anyway. Otherwise
// Stage 2 computes the values again: the costs are the same bits either
// way.
func (pl *plan) keepCross(ns, nt int, cfg Config, sparse1, sparse2 bool) bool {
	if pl.noCross || cfg.Stages != 2 || cfg.Discrepancy != MMD || cfg.Kernel != RBF || sparse1 {
		return false
	}
	s1, s2 := stageBytes(ns, nt)
	need := max(s1, s2) + cost.CrossBytes(ns, nt)
	if ns != nt {
		if !pl.factored(ns, nt, cfg, sparse2) {
			return false
		}
		need = s1 + cost.CrossBytes(ns, nt)
	} else if sparse2 {
		return false
	}
	if avail, _ := pl.available(); avail > 0 {
		return need+need/8 <= avail
	}
	return need <= pl.denseLimit
}

// stage2Table returns the bytes Stage 2's RBF tables against the smaller
// side may take (cost.NewStage2's maxTable) on the dense path (sparse2
// false) or the sparse one: no limit on the dense path, whose P×P matrix
// is the larger need (FactorMin), and denseLimit on the sparse one. It
// depends on the sizes only, never on the memory available: the factored
// model and the paired vectors' model agree only to rounding, so a choice
// by free memory would make a Match's results depend on it (tied
// quadruplets swap). Where the tables do not fit, checkMemory refuses.
func (pl *plan) stage2Table(sparse2 bool) int64 {
	if sparse2 {
		return pl.denseLimit
	}
	return math.MaxInt64
}

// factored reports whether Stage 2 takes the factored RBF model
// (cost.Factored) for an imbalanced Stage 1 of ns × nt under cfg, on the
// dense path (sparse2 false) or the sparse one.
func (pl *plan) factored(ns, nt int, cfg Config, sparse2 bool) bool {
	return cfg.Stages == 2 && cfg.Discrepancy == MMD && cfg.Kernel == RBF && ns != nt &&
		cost.Factored(max(ns, nt), min(ns, nt), pl.stage2Table(sparse2))
}

// Solver names accepted in Config.Solver.
const (
	Auto   = "auto"   // dense while its matrices are small, sparse beyond
	Dense  = "dense"  // dense cost matrices (memory O(n_s·n_t + P²))
	Sparse = "sparse" // candidate edges plus pricing passes (memory O(n·(d+K)); see stage2Table)
)

// SparseStages returns the path Match takes for each stage of matching src
// with tgt under cfg: true for the sparse path, false for the dense one;
// stage2 is false with one stage. It is the one statement of the
// solver-choice rule (docs/design.md, "The two exact paths"): Dense and
// Sparse force the path (except that a Stage 1 with one example on a
// side is always dense: sparseStages); Auto (or "") takes the sparse path for a stage
// whose dense cost matrix would exceed 3 GiB (plan.useSparse; for Stage 1
// only where its candidate graph, which repeats every edge n_large/n_small
// times, is smaller still: plan.sparse1Bytes), and for the
// Stage 2 of a linear-kernel MMD with at most 16 features, at least 2,000
// pairs and at most 1% duplicated rows per domain, where it is faster
// (lowDimSparse). An imbalanced RBF Stage 2 stays dense where it fits,
// although the sparse one measured 1.2–1.8× faster for the whole matching
// on ReLU-like and Gaussian features from 12,000 pairs on: on clustered
// features it measured 1.4–2× slower, and no cheap statistic of the costs
// nor a trial on a subsample of the pairs told the two apart reliably
// (docs/performance.md, "Stage 2's path at the imbalanced sizes"), so the
// path depends on the sizes only. cfg is not validated. Time
// O((n_s + n_t)·d) for the duplicate count, which only that Stage 2 case
// needs.
func SparseStages(src, tgt Matrix, cfg Config) (stage1, stage2 bool) {
	return defaultPlan().stages(src, tgt, cfg)
}

// stages is SparseStages under pl.
func (pl *plan) stages(src, tgt Matrix, cfg Config) (stage1, stage2 bool) {
	stage1, stage2 = pl.sparseStages(src.N, tgt.N, cfg)
	return stage1, stage2 || lowDimSparse(src, tgt, cfg)
}

// useSparse reports whether a stage whose dense matrix takes bytes runs on
// the sparse path.
func (pl *plan) useSparse(cfg Config, bytes int64) bool {
	switch cfg.Solver {
	case Dense:
		return false
	case Sparse:
		return true
	}
	return bytes > pl.denseLimit
}

// sparseStages is SparseStages by the sizes alone (the cost matrices'
// bytes), without the low-dimensional Stage 2 case, which only applies
// where the dense matrix fits: the memory plan (checkMemory) needs no more.
// A Stage 1 with one example on a side is a copy, never sparse: its dense
// matrix has as many entries as the other side has rows, and the dense
// solver copies it in O(n) (assign.Imbalanced), where the sparse one would
// build and price n copies of one column.
//
// Auto takes the sparse Stage 1 only where its candidate graph is smaller
// than the dense matrix (sparse1Bytes): the graph repeats every edge once
// per copy of its column, n_large/n_small times, so that very imbalanced
// sizes need more memory sparse than dense (400,000 × 1,000: 3.2 GB dense,
// about 370 GB sparse).
func (pl *plan) sparseStages(ns, nt int, cfg Config) (sparse1, sparse2 bool) {
	s1, s2 := stageBytes(ns, nt)
	sparse1 = pl.useSparse(cfg, s1) && min(ns, nt) > 1 && (cfg.Solver == Sparse || pl.sparse1Bytes(ns, nt) < s1)
	return sparse1, cfg.Stages == 2 && pl.useSparse(cfg, s2)
}

// sparse1Bytes estimates the peak bytes of the sparse Stage 1
// (stage1Sparse), the larger of its two phases, between which it collects
// the candidate lists:
//   - gathering: the candidate lists (topk.Bytes) and the E candidate edges
//     gathered from them (16 bytes each, sized ahead), E at most each row's
//     list of min(3K, n_small), each column's of min(3K, n_large) and each
//     row's start edge, with O(n) arrays beside them;
//   - solving: the edges, the solver's graph, which holds every edge once per
//     copy of its column (12 bytes each, sparse1.Graph), two pricing lists of
//     sparseAdd edges per row (the kept edges and a pass's scratch) and the
//     solver's O(n) arrays.
//
// Edges that pricing rounds add (violators) are not counted, nor the rows
// they move out of the edges' one allocation (assign.Edges.Grow; the rows
// left behind stay allocated): at 20000 × 20000 clustered, RBF, d = 32,
// 740,000 in 7,300 rows, 15% of the candidates, which checkMemory's margin
// covers; but on low-dimensional features pricing adds up to half the
// candidates again and the margin does not cover them (each graph is then
// checked before it is built: graphFits). Measured peaks
// (VmHWM above the size before, TestSparse1PeakProbe) are 0.66–1.07 of the
// estimate on balanced, 4×, 25× and 100× imbalanced sizes in both
// orientations, linear and RBF costs (float32 candidate pass or not),
// Gaussian, ReLU-like and clustered features at d >= 16, with and without
// pricing rounds; at d = 2–4 Gaussian linear 12000 × 12000 1.01, but
// 6000 × 6000 1.19–1.39 (Gaussian RBF, clustered RBF d = 4, ReLU-like
// linear) and ReLU-like RBF 8000 × 2000 1.59, 12000 × 3000 1.82 (docs/limits.md).
// Before the lists
// were freed between the phases, the edges sized ahead and the pricing
// passes' lists reused, the peaks were 1.01–1.87 times the estimate of
// the time, the larger of the graph and of the lists with the edges twice
// (docs/performance.md, "The sparse Stage 1's peak against its estimate").
func (pl *plan) sparse1Bytes(ns, nt int) int64 {
	nl, nsm := int64(max(ns, nt)), int64(min(ns, nt))
	k := int64(pl.stage1K())
	e := nl*min(k, nsm) + nsm*min(k, nl) + nl
	copies := int64(stage1Copies(ns, nt))
	n := nl + nsm // solver rows, dummies included (fewer than n_small)
	lists := pl.stage1ListBytes(ns, nt)
	// The edges' counts by row (room) and, by source and by target, the
	// lists' thresholds and the float32 error bounds live beside them.
	gather := lists + 16*e + 8*nl + 16*(nl+nsm)
	solve := 16*e + 12*e*copies + 2*topk.Bytes(int(nl), pl.sparseAdd) + sparseSolverBytes*n
	return max(gather, solve)
}

// sparseSolverBytes is the bytes per row of the sparse Stage 1's graph
// bounds (Lo, Hi) and of the sparse solver's arrays (assign.SolveSparse:
// potentials, matches, distances, marks, heap and row groups), rounded up.
const sparseSolverBytes = 128

// lowDimPairs is the least number of pairs from which Auto solves the
// Stage 2 of a low-dimensional linear MMD on the sparse path (lowDimSparse).
const lowDimPairs = 2000

// lowDimSparse reports whether Auto sends Stage 2 to the sparse path although
// its dense matrix fits: a linear-kernel MMD of features with at most
// directDim dimensions, at least lowDimPairs pairs and at most 1% duplicated
// rows in either domain. The rule is empirical: on the paper's 2-D
// experiment the sparse Stage 2 measured faster than the dense one
// (BenchmarkMatchGauss times dense and Auto); with the RBF mixture on the
// same data the whole matching measured slower on the sparse path, and so
// did Stage 2 for ReLU-like rows (a quarter of them at 0), whose exact ties
// make the candidate lists degenerate. Why the RBF mixture loses was not
// measured. The measurements are in docs/performance.md, "Design decisions
// and the measurements behind them".
func lowDimSparse(src, tgt Matrix, cfg Config) bool {
	switch {
	case cfg.Solver == Dense || cfg.Solver == Sparse, cfg.Discrepancy != MMD, cfg.Kernel != Linear, cfg.Stages != 2:
		return false
	case src.D > gram.DirectDim || max(src.N, tgt.N) < lowDimPairs:
		return false
	}
	return duplicates(src)*100 <= src.N && duplicates(tgt)*100 <= tgt.N
}

// duplicates returns the number of rows of m equal to an earlier row.
func duplicates(m Matrix) int {
	seen := make(map[string]struct{}, m.N)
	row := make([]float64, m.D)
	key := make([]byte, 8*m.D)
	n := 0
	for i := 0; i < m.N; i++ {
		for k, v := range m.Row(i, row) {
			binary.LittleEndian.PutUint64(key[8*k:], math.Float64bits(v+0)) // +0: −0 as 0
		}
		if _, ok := seen[string(key)]; ok {
			n++
		} else {
			seen[string(key)] = struct{}{}
		}
	}
	return n
}
