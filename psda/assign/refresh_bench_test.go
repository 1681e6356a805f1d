package assign

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/psda-dev/psda/psda/internal/cost"
	"github.com/psda-dev/psda/psda/internal/feat"
)

// BenchmarkRefreshWarm measures what a refresh gains by starting its two
// assignments from the previous refresh's duals (issue 26), on two feature
// snapshots of a real training run: source rows zs<A>.bin, zs<B>.bin and
// target rows zt<A>.bin, zt<B>.bin (raw little-endian float64, row-major,
// PSDA_REFRESH_DIM columns, default 128) in the directory PSDA_REFRESH_DIR,
// A and B from PSDA_REFRESH_STEPS (default "468,624"). It skips when
// PSDA_REFRESH_DIR is unset. benchmarks/refresh_drift.py --dump DIR writes
// such snapshots.
//
// The refresh is psda.Match's dense Double-paired RBF-MMD matching (k = 32,
// the paper's γ mixture, Stage 1 kernel sums deferred as Match defers them),
// n_s >= n_t. Snapshot A is matched first and its Stage 1 solution and
// Stage 2 relaxation duals kept. Then, on B, alternated in one process
// (PSDA_REFRESH_REPEATS rounds, default 3):
//
//   - Stage 1 (imbalancedFrom): cold, as Imbalanced runs it; warm from A's
//     assignment and column potentials (the targets persist, so A's V is
//     indexed by B's columns); and the control, warm from B's own optimal
//     solution with V perturbed by 1e-6 of the cost scale (the best case).
//   - Stage 2's relaxation (the symmetric assignment with a forbidden
//     diagonal of MinWeightPerfectMatching): cold, as solveLSAP runs it;
//     warm by the seeded auction (seedPrices) from A's permutation and
//     column potentials, both indexed by pair, and a pair is keyed by its
//     row on the larger side, the source row, which persists; warm by
//     paths alone from A's potentials (tightenWithin, then augment); and
//     the control from B's own optimum, perturbed as above.
//
// The costs, the certificates and the blossom finish are timed once each
// (no warm start changes them), so that each gain is also given on the
// whole refresh. Work counters: bids and full row scans of the auctions,
// columns (copies) settled by the augmenting paths (for the cold Stage 2,
// those of solveLSAP's cold phase, which it drops, included). Every warm
// solution is checked to cost what the cold one costs and to pass Certify.
//
// Run: PSDA_REFRESH_DIR=/path go test -run XXX -bench RefreshWarm
// -benchtime 1x -timeout 30m ./psda/assign
func BenchmarkRefreshWarm(b *testing.B) {
	dir := os.Getenv("PSDA_REFRESH_DIR")
	if dir == "" {
		b.Skip("PSDA_REFRESH_DIR unset: no feature snapshots to refresh")
	}
	steps := strings.Split(envOr("PSDA_REFRESH_STEPS", "468,624"), ",")
	dim, err := strconv.Atoi(envOr("PSDA_REFRESH_DIM", "128"))
	if err != nil || len(steps) != 2 {
		b.Fatalf("PSDA_REFRESH_STEPS = %q, PSDA_REFRESH_DIM = %q: want two steps \"A,B\" and an integer", steps, os.Getenv("PSDA_REFRESH_DIM"))
	}
	repeats, err := strconv.Atoi(envOr("PSDA_REFRESH_REPEATS", "3"))
	if err != nil || repeats < 1 {
		b.Fatalf("PSDA_REFRESH_REPEATS = %q: want an integer >= 1", os.Getenv("PSDA_REFRESH_REPEATS"))
	}
	srcA, tgtA := readSnapshot(b, dir, "zs"+steps[0], dim), readSnapshot(b, dir, "zt"+steps[0], dim)
	srcB, tgtB := readSnapshot(b, dir, "zs"+steps[1], dim), readSnapshot(b, dir, "zt"+steps[1], dim)
	if srcA.N < tgtA.N || srcA.N != srcB.N || tgtA.N != tgtB.N {
		b.Fatalf("snapshots %d×%d and %d×%d: want the same sizes and n_s >= n_t", srcA.N, tgtA.N, srcB.N, tgtB.N)
	}
	spec := cost.Spec{Kind: cost.RBFMMD, K: 32, Gammas: []float64{0.001, 0.01, 0.1, 1, 10}}
	for it := 0; it < b.N; it++ {
		b.StopTimer()
		// Snapshot A: the previous refresh, whose duals are kept.
		c1A := cost.NewStage1(srcA, tgtA, spec, true, nil).Dense()
		solA, err := Imbalanced(c1A, srcA.N, tgtA.N)
		if err != nil {
			b.Fatal(err)
		}
		c2A, n := stage2Matrix(srcA, tgtA, spec, solA.Col4Row)
		for i := 0; i < n; i++ {
			c2A[i*n+i] = inf // the relaxation's forbidden diagonal
		}
		relaxA, err := solveLSAP(c2A, n, n, nil)
		if err != nil {
			b.Fatal(err)
		}
		c2A = nil
		// Snapshot B: costs, then the alternated solves.
		var t refreshTimes
		t0 := time.Now()
		c1B := cost.NewStage1(srcB, tgtB, spec, true, nil).Dense()
		t.costs1 = time.Since(t0)
		nr, nc := srcB.N, tgtB.N
		cold1, _, err := imbalancedFrom(c1B, nr, nc, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		t0 = time.Now()
		if err := Certify(c1B, nr, nc, cold1, PriceTol(c1B)); err != nil {
			b.Fatal(err)
		}
		t.certify1 = time.Since(t0)
		t0 = time.Now()
		c2B, _ := stage2Matrix(srcB, tgtB, spec, cold1.Col4Row)
		t.costs2 = time.Since(t0)
		diag := make([]float64, n)
		for i := range diag {
			diag[i], c2B[i*n+i] = c2B[i*n+i], inf
		}
		best2, err := solveLSAP(c2B, n, n, nil)
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(26, 1))
		seeds1 := map[string]*Solution{
			"cold": nil, "warm A": solA,
			"control": perturbed(cold1.Col4Row, cold1.V, costScale(c1B), c1B, rng),
		}
		seedA := seedOn(c2B, n, relaxA.col4row, relaxA.v)
		seeds2 := map[string]*Solution{
			"cold": nil, "no probe": nil, "auction": nil, "warm A": seedA, "paths A": seedA,
			"control": perturbed(best2.col4row, best2.v, costScale(c2B), c2B, rng),
		}
		probe := newLSAP(c2B, n, n)
		if _, err := probe.warmStart(nil); err != nil {
			b.Fatal(err)
		}
		for _, sd := range []struct {
			name string
			sol  *Solution
		}{{"stage 2 warmStart's sparse solution", probe.seed}, {"stage 2 A's relaxation", seedA}, {"stage 2 control", seeds2["control"]},
			{"stage 1 A's solution", solA}, {"stage 1 control", seeds1["control"]}} {
			c, nc := c2B, n
			if strings.HasPrefix(sd.name, "stage 1") {
				c, nc = c1B, tgtB.N
			}
			if sd.sol == nil {
				b.Logf("seed %s: none (the warm start held)", sd.name)
				continue
			}
			b.Logf("seed %s: %s", sd.name, slackness(c, nc, sd.sol, costScale(c)))
		}
		names1 := []string{"cold", "warm A", "control"}
		names2 := []string{"cold", "no probe", "auction", "warm A", "control"}
		if os.Getenv("PSDA_REFRESH_PATHS") != "" {
			names2 = append(names2, "paths A") // minutes: tightenWithin frees nearly every row
		}
		runs := map[string][]refreshRun{}
		for r := 0; r < repeats; r++ {
			for _, name := range names1 {
				t0 := time.Now()
				sol, s, err := imbalancedFrom(c1B, nr, nc, seeds1[name], nil)
				el := time.Since(t0)
				if err != nil {
					b.Fatal(err)
				}
				checkSame(b, "stage 1 "+name, c1B, nr, nc, sol, cold1.Cost)
				runs["1 "+name] = append(runs["1 "+name], refreshRun{el, s.scans, s.settledCopies, s.bids})
			}
			for _, name := range names2 {
				t0 := time.Now()
				s, err := relaxFrom(c2B, n, name, seeds2[name])
				el := time.Since(t0)
				if err != nil {
					b.Fatal(err)
				}
				checkSame(b, "stage 2 "+name, c2B, n, n, s.solution(), best2.solution().Cost)
				runs["2 "+name] = append(runs["2 "+name], refreshRun{el, s.scans, s.coldSettled + s.settled, s.bids})
			}
		}
		for i, x := range diag {
			c2B[i*n+i] = x
		}
		t0 = time.Now()
		em := blossomFinish(b, c2B, n, best2)
		t.blossom = time.Since(t0)
		t0 = time.Now()
		if err := CertifyMatching(c2B, n, em, PriceTol(c2B)); err != nil {
			b.Fatal(err)
		}
		t.certify2 = time.Since(t0)
		b.StartTimer()
		report(b, &t, runs, names1, names2)
	}
}

// refreshTimes holds the phases of a refresh that no warm start changes.
type refreshTimes struct {
	costs1, certify1, costs2, blossom, certify2 time.Duration
}

// refreshRun is one timed solve with its work counters.
type refreshRun struct {
	el                   time.Duration
	scans, settled, bids int
}

// report logs each variant's runs, and the gains of the median warm solve
// over the median cold one on its stage and on the whole refresh, whose
// other phases are t's.
func report(b *testing.B, t *refreshTimes, runs map[string][]refreshRun, names1, names2 []string) {
	med := func(key string) time.Duration {
		rs := runs[key]
		ds := make([]time.Duration, len(rs))
		for i, r := range rs {
			ds[i] = r.el
		}
		for i := range ds { // insertion sort: a handful of runs
			for j := i; j > 0 && ds[j] < ds[j-1]; j-- {
				ds[j], ds[j-1] = ds[j-1], ds[j]
			}
		}
		return ds[len(ds)/2]
	}
	fixed := t.costs1 + t.certify1 + t.costs2 + t.blossom + t.certify2
	whole := fixed + med("1 cold") + med("2 cold")
	b.Logf("fixed phases: stage 1 costs %.3fs, certificate %.3fs, stage 2 costs %.3fs, blossom finish %.3fs, certificate %.3fs; cold refresh %.3fs "+
		"(stage 1 assignment %.0f%%, stage 2 relaxation %.0f%%)", t.costs1.Seconds(), t.certify1.Seconds(), t.costs2.Seconds(),
		t.blossom.Seconds(), t.certify2.Seconds(), whole.Seconds(), 100*med("1 cold").Seconds()/whole.Seconds(), 100*med("2 cold").Seconds()/whole.Seconds())
	for stage, names := range [][]string{names1, names2} {
		for _, name := range names {
			key := fmt.Sprint(stage+1, " ", name)
			var line strings.Builder
			for _, r := range runs[key] {
				fmt.Fprintf(&line, " %.3f", r.el.Seconds())
			}
			r := runs[key][0] // the counters are the same in every run
			fmt.Fprintf(&line, " s; scans %d, settled %d, bids %d", r.scans, r.settled, r.bids)
			gain := med(fmt.Sprint(stage+1, " cold")).Seconds() / med(key).Seconds()
			other := whole - med(fmt.Sprint(stage+1, " cold"))
			b.Logf("stage %d %-8s%s | stage gain %.2fx, refresh gain %.2fx", stage+1, name, line.String(), gain,
				whole.Seconds()/(other+med(key)).Seconds())
		}
	}
	both := fixed + med("1 warm A") + med("2 warm A")
	b.Logf("both stages warm from A: refresh gain %.2fx; control %.2fx", whole.Seconds()/both.Seconds(),
		whole.Seconds()/(fixed+med("1 control")+med("2 control")).Seconds())
	b.ReportMetric(whole.Seconds()/both.Seconds(), "refresh-gain")
}

// relaxFrom solves the symmetric relaxation c (diagonal +Inf) from the
// start named how, then augments the rows left free:
//
//   - "cold": as solveLSAP does (cold paths while they stay short, then
//     warmStart, then warmAuction from its sparse solution);
//   - "no probe": solveLSAP without its cold paths (warmStart, warmAuction);
//   - "auction": the cold auction alone (warmAuction without a seed);
//   - "warm A", "control": warmAuction from seed (seedPrices);
//   - "paths A": paths alone from seed's assignment and column potentials
//     (tightenWithin frees the rows whose entry is not tight).
func relaxFrom(c []float64, n int, how string, seed *Solution) (*lsap, error) {
	switch how {
	case "cold":
		return solveLSAP(c, n, n, nil)
	}
	s := newLSAP(c, n, n)
	var err error
	switch how {
	case "no probe":
		var warm bool
		if warm, err = s.warmStart(nil); err == nil && !warm {
			err = s.warmAuction(nil)
		}
	case "auction":
		err = s.warmAuction(nil)
	case "paths A":
		copy(s.v, seed.V)
		s.adopt(seed.Col4Row)
		s.tightenWithin(tightRel)
	default:
		s.seed = seed
		err = s.warmAuction(nil)
	}
	if err != nil {
		return nil, err
	}
	return s, augmentFree(n, func(i int) bool { return s.col4row[i] < 0 }, s.augment, nil)
}

// seedOn returns the seed (col4row, v) with the row potentials tight on c's
// assigned entries, u_i = c[i][col4row[i]] − v[col4row[i]], as seedPrices
// expects of a solution.
func seedOn(c []float64, n int, col4row []int, v []float64) *Solution {
	sol := &Solution{Col4Row: col4row, V: v, U: make([]float64, len(col4row))}
	for i, j := range col4row {
		sol.U[i] = c[i*n+j] - v[j]
	}
	return sol
}

// perturbed returns the seed (col4row, v + noise) with uniform noise of
// 1e-6·scale, its row potentials tight on c's assigned entries.
func perturbed(col4row []int, v []float64, scale float64, c []float64, rng *rand.Rand) *Solution {
	w := make([]float64, len(v))
	for j, x := range v {
		w[j] = x + (2*rng.Float64()-1)*1e-6*scale
	}
	return seedOn(c, len(c)/len(col4row), col4row, w)
}

// slackness describes how far the assignment of seed is from
// ε-complementary slackness under its column potentials on the row-major
// matrix c of nc columns: per row, the amount by which its assigned entry's
// reduced cost c_ij − v_j exceeds the row's smallest, relative to scale
// (the auction's ε ends at 1e-9 of it); the median, the 90th percentile,
// the largest, and the share of rows above 1e-9.
func slackness(c []float64, nc int, seed *Solution, scale float64) string {
	gap := make([]float64, len(seed.Col4Row))
	for i, j := range seed.Col4Row {
		row, m := c[i*nc:i*nc+nc], inf
		for jj, x := range row {
			m = min(m, x-seed.V[jj])
		}
		gap[i] = (row[j] - seed.V[j] - m) / scale
	}
	slices.Sort(gap)
	k, _ := slices.BinarySearch(gap, 1e-9)
	above := len(gap) - k
	return fmt.Sprintf("gap/scale median %.2g, p90 %.2g, max %.2g; rows above 1e-9: %.0f%%", gap[len(gap)/2],
		gap[len(gap)*9/10], gap[len(gap)-1], 100*float64(above)/float64(len(gap)))
}

// checkSame fails b unless sol passes Certify on c and costs want.
func checkSame(b *testing.B, what string, c []float64, nr, nc int, sol *Solution, want float64) {
	b.Helper()
	if err := Certify(c, nr, nc, sol, PriceTol(c)); err != nil {
		b.Fatalf("%s: %v", what, err)
	}
	if math.Abs(sol.Cost-want) > 1e-9*math.Abs(want) {
		b.Fatalf("%s: cost %v, cold %v", what, sol.Cost, want)
	}
}

// stage2Matrix returns psda's dense Stage 2 matrix C^MM over the pairs
// (r, col4row[r]) of a Stage 1 solution with the sources as rows.
func stage2Matrix(src, tgt feat.Matrix, spec cost.Spec, col4row []int) ([]float64, int) {
	pairs := make([]feat.Pair, len(col4row))
	for r, j := range col4row {
		pairs[r] = feat.Pair{S: r, T: j}
	}
	return cost.NewStage2(src, tgt, spec, pairs, math.MaxInt64, nil).Dense()
}

// blossomFinish runs MinWeightPerfectMatching's blossom phase from the
// relaxation s of c and returns its matching.
func blossomFinish(b *testing.B, c []float64, n int, s *lsap) *ExactMatching {
	scale, err := checkMatching(c, n)
	if err != nil {
		b.Fatal(err)
	}
	start := RelaxationStart(s.col4row, s.u, s.v, denseCost(c, n))
	em, err := newBlossomScaled(n, c, nil, start.Y, start.Mate, scale).finish(nil)
	if err != nil {
		b.Fatal(err)
	}
	return em
}

// readSnapshot reads dir/name.bin, raw little-endian float64 rows of dim
// values.
func readSnapshot(b *testing.B, dir, name string, dim int) feat.Matrix {
	x := loadDump(b, filepath.Join(dir, name+".bin"))
	if len(x)%dim != 0 {
		b.Fatalf("%s.bin has %d bytes: not rows of %d float64", name, 8*len(x), dim)
	}
	return feat.Matrix{N: len(x) / dim, D: dim, F64: x}
}

// envOr returns the environment variable key, or def when it is unset.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
