package psda

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/testref"
)

// diffMatchings returns "" when a and b are the same matching, bit for
// bit (pairs, quadruplets, singles and the float64 bits of Stage1Cost,
// Stage2Cost and Stage2Bound), else what differs first.
func diffMatchings(a, b *Matching) string {
	switch {
	case !slices.Equal(a.Pairs, b.Pairs):
		return "pairs differ"
	case !slices.Equal(a.Quads, b.Quads):
		return "quadruplets differ"
	case !slices.Equal(a.Singles, b.Singles):
		return fmt.Sprintf("singles %v, %v", a.Singles, b.Singles)
	}
	for _, c := range []struct {
		name string
		x, y float64
	}{{"Stage1Cost", a.Stage1Cost, b.Stage1Cost}, {"Stage2Cost", a.Stage2Cost, b.Stage2Cost}, {"Stage2Bound", a.Stage2Bound, b.Stage2Bound}} {
		if math.Float64bits(c.x) != math.Float64bits(c.y) {
			return fmt.Sprintf("%s %.17g, %.17g", c.name, c.x, c.y)
		}
	}
	return ""
}

// leastMemory returns the fewest available bytes with which pl's
// checkMemory accepts matching ns × nt rows of dim features under cfg, so
// that every choice made by the memory available (keepCross) takes its
// low branch.
func leastMemory(pl *plan, ns, nt, dim int, cfg Config) int64 {
	lo, hi := int64(1), int64(1)<<50
	for lo < hi {
		mid := lo + (hi-lo)/2
		q := *pl
		q.available = func() (int64, memLimit) { return mid, limitMachine }
		if q.checkMemory(ns, nt, dim, cfg) == nil {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// detCase is one matching of the tests below: floorFeatures of a kind
// and shape (float32), under cfg.
type detCase struct {
	kind      string
	ns, nt, d int
	cfg       Config
}

func (c detCase) String() string {
	return fmt.Sprintf("%s/%dx%d/d=%d/%s/%s/%s/stages=%d", c.kind, c.ns, c.nt, c.d, c.cfg.Solver, c.cfg.Discrepancy, c.cfg.Kernel, c.cfg.Stages)
}

// inputs returns the case's features.
func (c detCase) inputs() (Matrix, Matrix) { return floorFeatures(c.kind, c.ns, c.nt, c.d, 5) }

// matchCases returns each case's matching, in order, on its inputs.
func matchCases(t *testing.T, cases []detCase) []*Matching {
	t.Helper()
	ms := make([]*Matching, len(cases))
	for k, c := range cases {
		src, tgt := c.inputs()
		m, err := Match(src, tgt, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		ms[k] = m
	}
	return ms
}

// toF64 returns m's values as a float64 Matrix.
func toF64(m Matrix) Matrix {
	v := make([]float64, m.N*m.D)
	for i := range v {
		v[i] = m.At(i/m.D, i%m.D)
	}
	return Matrix{N: m.N, D: m.D, F64: v}
}

// sameEverywhere runs each case on one core first, then under the
// conditions a matching must not depend on (docs/design.md,
// "Determinism"), and fails on any difference: GOMAXPROCS 2 and 7 (the
// dense warm start's parts, par.NParts, from 1,024 rows), a thread
// setting below GOMAXPROCS, the least memory Match accepts (keeps says
// whether keepCross keeps Stage 1's kernel with plenty of memory and with
// the least: a dense imbalanced Stage 2 needs more than the table, so
// keeps it), memory unknown, a Monitor mirrored as the bindings mirror it,
// the same values as float64, and the case run again after the others
// (buffers and pools reused).
func sameEverywhere(t *testing.T, cases []detCase, keeps [][2]bool) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	firsts := make([]*Matching, len(cases))
	for k, c := range cases {
		src, tgt := c.inputs()
		check := func(what string, pl *plan, src, tgt Matrix, cfg Config) {
			t.Helper()
			m, err := pl.match(src, tgt, cfg)
			if err != nil {
				t.Fatalf("%s, %s: %v", c, what, err)
			}
			if firsts[k] == nil {
				firsts[k] = m
			} else if d := diffMatchings(firsts[k], m); d != "" {
				t.Errorf("%s, %s: %s (GOMAXPROCS 1: the first)", c, what, d)
			}
		}
		settings := []testref.Setting{{Procs: 1}, {Procs: 2}, {Procs: 7}, {Procs: 7, Workers: 3}}
		testref.EachSetting(t, settings, func(s testref.Setting) {
			check(fmt.Sprintf("GOMAXPROCS %d, threads %d", s.Procs, s.Workers), defaultPlan(), src, tgt, c.cfg)
		})
		runtime.GOMAXPROCS(2)
		pl := defaultPlan()
		s1, s2 := pl.stages(src, tgt, c.cfg)
		if got := pl.keepCross(c.ns, c.nt, c.cfg, s1, s2); got != keeps[k][0] {
			t.Fatalf("%s: keepCross %v with plenty of memory, the case says %v", c, got, keeps[k][0])
		}
		least := leastMemory(pl, c.ns, c.nt, c.d, c.cfg)
		pl.available = func() (int64, memLimit) { return least, limitMachine }
		if got := pl.keepCross(c.ns, c.nt, c.cfg, s1, s2); got != keeps[k][1] {
			t.Fatalf("%s: keepCross %v with the least memory Match accepts, %d bytes; the case says %v", c, got, least, keeps[k][1])
		}
		check(fmt.Sprintf("available %d bytes", least), pl, src, tgt, c.cfg)
		pl = defaultPlan()
		pl.available = func() (int64, memLimit) { return 0, limitUnknown }
		check("available unknown", pl, src, tgt, c.cfg)
		cfg := c.cfg
		cfg.Monitor = &Monitor{}
		var view [3]int64
		stop := cfg.Monitor.Mirror(&view)
		check("with a Monitor", defaultPlan(), src, tgt, cfg)
		stop()
		check("float64 features", defaultPlan(), toF64(src), toF64(tgt), c.cfg)
	}
	for k, c := range cases {
		src, tgt := c.inputs()
		m, err := Match(src, tgt, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffMatchings(firsts[k], m); d != "" {
			t.Errorf("%s, again after the other cases: %s", c, d)
		}
	}
}

// TestDenseMatchSameEverywhere is sameEverywhere on the dense path: the
// balanced RBF matching that keeps Stage 1's kernel and hands its matrix
// on, an imbalanced one whose Stage 2 takes the factored model (the
// kernel kept as its table), P >= 1,024 for the warm start's parts; an
// imbalanced linear MMD with the target the larger side, and CORAL with
// an odd number of pairs.
func TestDenseMatchSameEverywhere(t *testing.T) {
	rbf := Config{BatchSize: 8, Stages: 2, Solver: Dense, Discrepancy: MMD, Kernel: RBF}
	sameEverywhere(t, []detCase{
		{"relu", 1100, 1100, 24, rbf},
		{"gauss", 1300, 200, 24, rbf},
		{"clustered", 500, 1100, 8, Config{BatchSize: 8, Stages: 2, Solver: Dense, Discrepancy: MMD, Kernel: Linear}},
		{"gauss", 400, 301, 40, Config{BatchSize: 8, Stages: 2, Solver: Dense, Discrepancy: CORAL}},
	}, [][2]bool{{true, false}, {true, true}, {false, false}, {false, false}})
}

// TestSparseMatchSameEverywhere is sameEverywhere on the sparse path:
// imbalanced RBF (the factored model), balanced RBF, CORAL and a
// one-stage matching.
func TestSparseMatchSameEverywhere(t *testing.T) {
	rbf := Config{BatchSize: 8, Stages: 2, Solver: Sparse, Discrepancy: MMD, Kernel: RBF}
	sameEverywhere(t, []detCase{
		{"clustered", 120, 600, 40, rbf},
		{"relu", 250, 250, 32, rbf},
		{"relu", 400, 250, 48, Config{BatchSize: 8, Stages: 2, Solver: Sparse, Discrepancy: CORAL}},
		{"gauss", 500, 500, 32, Config{BatchSize: 8, Stages: 1, Solver: Sparse, Discrepancy: MMD, Kernel: RBF}},
	}, [][2]bool{{false, false}, {false, false}, {false, false}, {false, false}})
}

// TestMatchSameOnEveryGramPath checks that a matching does not depend on
// the Gram engine's micro-kernel path (gram.Paths: AVX-512 and AVX2/FMA
// are chosen by the CPU): the FMA paths sum each product in the same
// order with the same roundings. Features of more than gram.DirectDim
// dimensions, so that the kernels run.
func TestMatchSameOnEveryGramPath(t *testing.T) {
	cases := []detCase{
		{"relu", 300, 300, 64, Config{BatchSize: 8, Stages: 2, Solver: Dense, Discrepancy: MMD, Kernel: RBF}},
		{"gauss", 301, 250, 100, Config{BatchSize: 8, Stages: 2, Solver: Dense, Discrepancy: MMD, Kernel: Linear}},
		{"clustered", 200, 250, 300, Config{BatchSize: 8, Stages: 2, Solver: Dense, Discrepancy: CORAL}},
		{"gauss", 300, 200, 64, Config{BatchSize: 8, Stages: 2, Solver: Sparse, Discrepancy: MMD, Kernel: RBF}},
	}
	want := matchCases(t, cases)
	for _, path := range gram.Paths()[1:] {
		t.Run(path, func(t *testing.T) {
			if path == "portable" {
				// gonum's Dgemm (no FMA) and, without AVX2/FMA, math.Exp
				// for the RBF's exponentials (rbf.expNeg: the AVX2 one is
				// within 2 ulps of it) round differently from the FMA
				// paths: the costs differ in their last bits (pairs and
				// quadruplets agreed on the 12 inputs tried).
				t.Skip("the portable path (no AVX2/FMA, non-amd64, -tags noasm) gives other last bits: not yet the same")
			}
			prev, err := gram.UsePath(path)
			if err != nil {
				t.Fatal(err)
			}
			defer gram.UsePath(prev)
			for k, m := range matchCases(t, cases) {
				if d := diffMatchings(want[k], m); d != "" {
					t.Errorf("%s: on path %s, first on %s: %s", cases[k], path, gram.Paths()[0], d)
				}
			}
		})
	}
}

// TestConcurrentMatchesSame checks that Matches running at once (a
// refresher's background thread beside the caller's own, or two
// samplers) give what each gives alone: they share the process's pools
// (tile buffers, CORAL's vectors), the thread setting and the wait for
// earlier Stage 2 matrices to be unmapped.
func TestConcurrentMatchesSame(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	cases := []detCase{
		{"relu", 400, 400, 24, Config{BatchSize: 8, Stages: 2, Solver: Dense, Discrepancy: MMD, Kernel: RBF}},
		{"gauss", 500, 100, 40, Config{BatchSize: 8, Stages: 2, Solver: Dense, Discrepancy: MMD, Kernel: RBF}},
		{"clustered", 300, 200, 48, Config{BatchSize: 8, Stages: 2, Solver: Sparse, Discrepancy: CORAL}},
		{"relu", 150, 600, 32, Config{BatchSize: 8, Stages: 2, Solver: Sparse, Discrepancy: MMD, Kernel: RBF}},
	}
	want := matchCases(t, cases)
	for round := 0; round < 2; round++ {
		got, errs := make([]*Matching, len(cases)), make([]error, len(cases))
		var wg sync.WaitGroup
		for k, c := range cases {
			wg.Add(1)
			go func() {
				defer wg.Done()
				src, tgt := c.inputs()
				got[k], errs[k] = Match(src, tgt, c.cfg)
			}()
		}
		wg.Wait()
		for k, c := range cases {
			if errs[k] != nil {
				t.Fatal(errs[k])
			}
			if d := diffMatchings(want[k], got[k]); d != "" {
				t.Errorf("%s beside the others, round %d: %s (alone: the first)", c, round, d)
			}
		}
	}
}
