package psda

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/psda-dev/psda/psda/assign"
	"github.com/psda-dev/psda/psda/internal/cost"
	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/topk"
)

func TestDenseBytes(t *testing.T) {
	for _, tc := range []struct {
		name           string
		ns, nt, stages int
		want           int64
	}{
		{"balanced stage 1", 1000, 1000, 1, 8e6},
		{"more targets: no transposed copy", 10, 1000, 1, 8 * 10 * 1000},
		{"stage 2 dominates", 15000, 2000, 2, 8 * 15000 * 15000},
		{"odd pairs get a dummy", 7, 3, 2, 8 * 8 * 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := denseBytes(tc.ns, tc.nt, tc.stages); got != tc.want {
				t.Fatalf("denseBytes(%d, %d, %d) = %d, want %d", tc.ns, tc.nt, tc.stages, got, tc.want)
			}
		})
	}
}

func TestMatchRefusesWhatCannotFit(t *testing.T) {
	if a, _ := availableBytes(); a <= 0 {
		t.Skip("this system does not report available memory")
	}
	pl := defaultPlan()
	pl.available = func() (int64, memLimit) { return 1 << 30, limitMachine } // pose as a machine with 1 GiB free
	big := Matrix{N: 20000, D: 1, F32: make([]float32, 20000)}
	small := Matrix{N: 100, D: 1, F32: make([]float32, 100)}
	_, err := pl.match(big, big, Config{BatchSize: 2, Stages: 1, Discrepancy: MMD, Kernel: Linear})
	if err == nil || !strings.Contains(err.Error(), "3.2 GB for its dense cost matrices") {
		t.Fatalf("20000×20000 on 1 GiB: got %v, want an out-of-memory refusal", err)
	}
	if _, err := pl.match(small, small, Config{BatchSize: 2, Stages: 2, Discrepancy: MMD, Kernel: Linear}); err != nil {
		t.Fatalf("100×100 refused: %v", err)
	}
}

// Issue 17 case 2: CORAL's d×d covariances count, so that wide features are
// refused instead of aborting the process; with fewer rows than features
// there are none (cost.CORALLowRank), and n = 8, d = 16,000 runs in little memory.
func TestMatchRefusesCoralCovariancesThatCannotFit(t *testing.T) {
	pl := defaultPlan()
	pl.available = func() (int64, memLimit) { return 150e6, limitMachine }
	const n, d = 3000, 2000 // n_s+n_t > d: the dense form, 4·8·d² = 128 MB
	x := Matrix{N: n, D: d, F32: make([]float32, n*d)}
	_, err := pl.match(x, x, Config{BatchSize: 2, Stages: 1, Discrepancy: CORAL, Kernel: Linear})
	if err == nil || !strings.Contains(err.Error(), "2000×2000 covariances") || !strings.Contains(err.Error(), "feature dimension") {
		t.Fatalf("CORAL at n = %d, d = %d on 150 MB: got %v, want a refusal naming the covariances", n, d, err)
	}
	pl.available = func() (int64, memLimit) { return 6 << 30, limitMachine } // the 6 GB limit
	const wn, wd = 8, 16000
	w := Matrix{N: wn, D: wd, F32: make([]float32, wn*wd)}
	for i := range w.F32 {
		w.F32[i] = float32(i%13) - 6
	}
	m, err := pl.match(w, w, Config{BatchSize: 2, Stages: 2, Discrepancy: CORAL, Kernel: Linear})
	if err != nil || len(m.Pairs) != wn {
		t.Fatalf("CORAL at n = %d, d = %d: %v", wn, wd, err)
	}
}

// TestLowDimSparse checks Auto's rule for a sparse Stage 2 below the size
// limit: linear MMD, d <= directDim, at least lowDimPairs pairs, at most 1%
// duplicated rows per domain, and never when the user forced a path.
func TestLowDimSparse(t *testing.T) {
	withDups := func(m Matrix, k int) Matrix { // rows 1..k copy row 0
		c := Matrix{N: m.N, D: m.D, F64: slices.Clone(m.F64)}
		for i := 1; i <= k; i++ {
			copy(c.F64[i*m.D:(i+1)*m.D], c.F64[:m.D])
		}
		return c
	}
	n := lowDimPairs
	src, tgt := gaussFeatures(n, 2, 1), gaussFeatures(n-5, 2, 2)
	linear := Config{Discrepancy: MMD, Kernel: Linear, Stages: 2}
	with := func(f func(*Config)) Config { c := linear; f(&c); return c }
	for _, tc := range []struct {
		name     string
		src, tgt Matrix
		cfg      Config
		want     bool
	}{
		{"gaussian 2-D linear", src, tgt, linear, true},
		{"auto spelled out", src, tgt, with(func(c *Config) { c.Solver = Auto }), true},
		{"forced dense", src, tgt, with(func(c *Config) { c.Solver = Dense }), false},
		{"forced sparse", src, tgt, with(func(c *Config) { c.Solver = Sparse }), false},
		{"rbf", src, tgt, with(func(c *Config) { c.Kernel = RBF }), false},
		{"coral", src, tgt, Config{Discrepancy: CORAL, Stages: 2}, false},
		{"one stage", src, tgt, with(func(c *Config) { c.Stages = 1 }), false},
		{"too few pairs", gaussFeatures(n-1, 2, 1), gaussFeatures(n-1, 2, 2), linear, false},
		{"too many features", gaussFeatures(n, gram.DirectDim+1, 1), gaussFeatures(n, gram.DirectDim+1, 2), linear, false},
		{"1% duplicated sources", withDups(src, n/100), tgt, linear, true},
		{"over 1% duplicated targets", src, withDups(tgt, n/100+1), linear, false},
	} {
		if got := lowDimSparse(tc.src, tc.tgt, tc.cfg); got != tc.want {
			t.Errorf("%s: lowDimSparse = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := duplicates(Matrix{N: 4, D: 1, F64: []float64{0, math.Copysign(0, -1), 1, 1}}); got != 2 {
		t.Errorf("duplicates of {0, -0, 1, 1} = %d, want 2 (-0 equals 0)", got)
	}
}

// TestSparseStages checks the solver choice of Match, forced and Auto,
// against the rule stated in SparseStages' doc.
func TestSparseStages(t *testing.T) {
	small, smallT := gaussFeatures(300, 2, 1), gaussFeatures(300, 2, 2)
	low, lowT := gaussFeatures(lowDimPairs, 2, 1), gaussFeatures(lowDimPairs, 2, 2)
	rbf2 := Config{BatchSize: 4, Discrepancy: MMD, Kernel: RBF, Stages: 2}
	lin2 := Config{BatchSize: 4, Discrepancy: MMD, Kernel: Linear, Stages: 2}
	with := func(c Config, f func(*Config)) Config { f(&c); return c }
	for _, tc := range []struct {
		name         string
		src, tgt     Matrix
		cfg          Config
		limit        int64 // the plan's denseLimit
		want1, want2 bool
	}{
		{"auto small", small, smallT, rbf2, defaultPlan().denseLimit, false, false},
		{"auto over the limit", small, smallT, rbf2, 8*300*300 - 1, true, true},
		{"auto, more targets, both matrices within the limit", gaussFeatures(200, 2, 1), gaussFeatures(300, 2, 2), rbf2, 8 * 300 * 300, false, false},
		// With 3K = 192 candidates a row, 300 rows' graph (3.2 MB) is larger than their dense matrix.
		{"auto over the limit, the sparse Stage 1's graph larger", small, smallT, rbf2, -(8*300*300 - 1), false, true},
		{"auto over the limit, imbalanced: the graph larger", gaussFeatures(2000, 2, 1), gaussFeatures(20, 2, 2), rbf2, -(8*2000*20 - 1), false, true},
		{"forced sparse", small, smallT, with(rbf2, func(c *Config) { c.Solver = Sparse }), defaultPlan().denseLimit, true, true},
		{"forced sparse, one stage", small, smallT, with(rbf2, func(c *Config) { c.Solver, c.Stages = Sparse, 1 }), defaultPlan().denseLimit, true, false},
		{"forced dense over the limit", small, smallT, with(rbf2, func(c *Config) { c.Solver = Dense }), 1, false, false},
		{"auto low-dimensional linear", low, lowT, lin2, defaultPlan().denseLimit, false, true},
		{"low-dimensional linear, forced dense", low, lowT, with(lin2, func(c *Config) { c.Solver = Dense }), defaultPlan().denseLimit, false, false},
		{"forced sparse, one source: a copy", gaussFeatures(1, 2, 1), smallT, with(rbf2, func(c *Config) { c.Solver = Sparse }), defaultPlan().denseLimit, false, true},
		{"auto over the limit, one target: a copy", small, gaussFeatures(1, 2, 2), rbf2, 1, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := defaultPlan()
			// A negative limit keeps the default K; else K = 2 and 2
			// edges a row per pricing pass, so that the sparse Stage 1's
			// need is smaller than the dense matrix at these sizes
			// (plan.sparse1Bytes), as at real ones.
			pl.denseLimit, pl.sparseK, pl.sparseAdd = tc.limit, 2, 2
			if tc.limit < 0 {
				pl.denseLimit, pl.sparseK, pl.sparseAdd = -tc.limit, defaultPlan().sparseK, defaultPlan().sparseAdd
			}
			if s1, s2 := pl.stages(tc.src, tc.tgt, tc.cfg); s1 != tc.want1 || s2 != tc.want2 {
				t.Fatalf("plan.stages = (%v, %v), want (%v, %v)", s1, s2, tc.want1, tc.want2)
			}
		})
	}
}

// TestStage2Tables checks the sparse Stage 2's RBF tables: their limit
// is denseLimit whatever memory is available (stage2Table; the results
// depend on the model, TestSparseStage2SameUnderLessMemory), and a Match
// whose tables do not fit is refused with an error that names them and
// fixes that apply to the sparse path (not solver = "sparse" again).
func TestStage2Tables(t *testing.T) {
	pl := defaultPlan()
	for _, avail := range []int64{0, 1 << 20, 1 << 40} {
		pl.available = func() (int64, memLimit) { return avail, limitMachine }
		if got := pl.stage2Table(true); got != pl.denseLimit {
			t.Errorf("available %d: stage2Table(sparse) = %d, want denseLimit %d", avail, got, pl.denseLimit)
		}
		if got := pl.stage2Table(false); got != math.MaxInt64 {
			t.Errorf("available %d: stage2Table(dense) = %d, want no limit", avail, got)
		}
	}
	// Stage 1 dense, Stage 2 sparse (a sparse Stage 1's graph would be
	// the larger need at this size: plan.sparse1Bytes).
	src, tgt := gaussFeatures(400, 8, 1), gaussFeatures(40, 8, 2)
	cfg := Config{BatchSize: 4, Stages: 2, Solver: Auto, Discrepancy: MMD, Kernel: RBF}
	_, s2 := stageBytes(400, 40)
	pl.denseLimit = s2 - 1
	if s1, s2 := pl.stages(src, tgt, cfg); s1 || !s2 {
		t.Fatalf("paths (%v, %v), want a dense Stage 1 and a sparse Stage 2", s1, s2)
	}
	tables := cost.FactoredBytes(400, 40)
	pl.available = func() (int64, memLimit) { return tables, limitMachine }
	_, err := pl.match(src, tgt, cfg)
	if err == nil {
		t.Fatalf("%d bytes available for %d bytes of tables (and checkMemory's margin): no error", tables, tables)
	}
	for _, want := range []string{"kernel tables", "stages = 1", "random subset"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "solver") {
		t.Errorf("error %q advises a solver, but the sparse path is the one refused", err)
	}
	pl.available = func() (int64, memLimit) { return tables + tables/8, limitMachine }
	if _, err := pl.match(src, tgt, cfg); err != nil {
		t.Errorf("tables with checkMemory's margin available: %v", err)
	}
}

// TestDenseStage2TablesCounted checks that checkMemory counts the factored
// RBF model's tables beside the dense Stage 2's P×P matrix: the matrix is
// filled from them, so both are live at once (at 8000 × 2000 the process
// peaked at 818 MB for a 488 MB matrix and 274 MB of tables), and a
// machine with room for the matrix alone must refuse the Match, not let
// the kernel kill it part-way.
func TestDenseStage2TablesCounted(t *testing.T) {
	pl := defaultPlan()
	src, tgt := gaussFeatures(400, 8, 1), gaussFeatures(40, 8, 2)
	cfg := Config{BatchSize: 4, Stages: 2, Solver: Dense, Discrepancy: MMD, Kernel: RBF}
	_, s2 := stageBytes(400, 40)
	need := s2 + cost.FactoredBytes(400, 40)
	pl.available = func() (int64, memLimit) { return need + need/8 - 1, limitMachine }
	_, err := pl.match(src, tgt, cfg)
	if err == nil {
		t.Fatalf("%d bytes available for a %d-byte matrix beside %d bytes of tables (and checkMemory's margin): no error",
			need+need/8-1, s2, need-s2)
	}
	for _, want := range []string{"kernel tables", "solver = \"sparse\""} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	pl.available = func() (int64, memLimit) { return need + need/8, limitMachine }
	if _, err := pl.match(src, tgt, cfg); err != nil {
		t.Errorf("the matrix and the tables with checkMemory's margin available: %v", err)
	}
}

// TestSparseStage1GraphCounted checks that checkMemory counts the sparse
// Stage 1's candidate graph (plan.sparse1Bytes: every edge once per copy of
// its column) and refuses a forced sparse Stage 1 whose graph does not
// fit, naming the dense solver's need, and that the graph is built at its
// size ahead (appending had tripled the peak: 3.3 GB for 10000 × 100).
func TestSparseStage1GraphCounted(t *testing.T) {
	pl := defaultPlan()
	src, tgt := gaussFeatures(400, 8, 1), gaussFeatures(40, 8, 2)
	cfg := Config{BatchSize: 4, Stages: 1, Solver: Sparse, Discrepancy: MMD, Kernel: Linear}
	g := pl.sparse1Bytes(400, 40)
	pl.available = func() (int64, memLimit) { return g, limitMachine }
	_, err := pl.match(src, tgt, cfg)
	if err == nil {
		t.Fatalf("%d bytes available for a %d-byte graph (and checkMemory's margin): no error", g, g)
	}
	for _, want := range []string{"candidate graph", "10 copies", `solver = "dense"`, "128000 bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	pl.available = func() (int64, memLimit) { return g + g/8, limitMachine }
	if _, err := pl.match(src, tgt, cfg); err != nil {
		t.Errorf("the graph with checkMemory's margin available: %v", err)
	}

	s1 := &sparse1{md: newStage1Model(src, tgt, cfg, false), nl: 400, nsm: 40, copies: 10}
	adj := make(assign.Edges, 400)
	for a := range adj {
		for b := 0; b < 40; b += 1 + a%3 {
			adj.Add(a, b, 1)
		}
	}
	// graphBytes, what graphFits checks before each graph, is the graph's.
	bytesOf := func(g *assign.Graph) int64 { return int64(12*len(g.Col) + 16*len(g.Lo)) }
	gr := s1.Graph(adj)
	if len(gr.Col) != cap(gr.Col) || len(gr.Cost) != cap(gr.Cost) {
		t.Errorf("graph of %d edges built in capacity %d (costs %d): not sized ahead", len(gr.Col), cap(gr.Col), cap(gr.Cost))
	}
	if got, want := s1.graphBytes(adj), bytesOf(gr); got != want {
		t.Errorf("graphBytes %d, the graph built takes %d", got, want)
	}
	s1.nl, s1.copies, s1.dummies = 390, 10, 10 // 390 rows on 40 × 10 copies
	gr = s1.Graph(adj[:390])
	if len(gr.Col) != cap(gr.Col) {
		t.Errorf("with dummy rows: graph of %d edges built in capacity %d", len(gr.Col), cap(gr.Col))
	}
	if got, want := s1.graphBytes(adj[:390]), bytesOf(gr); got != want {
		t.Errorf("with dummy rows: graphBytes %d, the graph built takes %d", got, want)
	}
}

// TestSparseStage1CORALNamed checks that, with CORAL, checkMemory's error
// on a sparse Stage 1 still names its candidate graph beside the
// covariances it adds: the dense matrices it does not build are no need
// of this Match, and the hint (solver = "dense") follows from the graph.
func TestSparseStage1CORALNamed(t *testing.T) {
	pl := defaultPlan()
	src, tgt := gaussFeatures(400, 8, 1), gaussFeatures(40, 8, 2)
	cfg := Config{BatchSize: 4, Stages: 1, Solver: Sparse, Discrepancy: CORAL, Kernel: Linear}
	need := pl.sparse1Bytes(400, 40) + coralBytes(440, 8)
	if coralBytes(440, 8) == 0 {
		t.Fatal("CORAL uses no d×d matrix here: the case checks nothing")
	}
	pl.available = func() (int64, memLimit) { return need, limitMachine }
	_, err := pl.match(src, tgt, cfg)
	if err == nil {
		t.Fatalf("%d bytes available for a %d-byte need (and checkMemory's margin): no error", need, need)
	}
	for _, want := range []string{"candidate graph", "CORAL's 8×8 covariances", `solver = "dense"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "dense cost matrices") {
		t.Errorf("error %q names dense cost matrices, which the sparse Stage 1 does not build", err)
	}
}

// TestSparse1BytesCountsLists checks sparse1Bytes against the candidate
// lists stage1Sparse keeps (as it allocates them, measured on the heap)
// and the edges it gathers from them while they live: at balanced sizes,
// where every edge has one copy, those outweigh the graph (at 20000 ×
// 20000 the stage peaked at 0.64 GB where the graph alone was 0.21).
func TestSparse1BytesCountsLists(t *testing.T) {
	pl := defaultPlan()
	for _, sz := range [][2]int{{2000, 2000}, {3000, 1000}, {400, 4000}, {4000, 40}} {
		ns, nt := sz[0], sz[1]
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rows, cols := topk.New(ns, min(pl.stage1K(), nt)), topk.New(nt, min(pl.stage1K(), ns))
		runtime.ReadMemStats(&after)
		lists := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		runtime.KeepAlive(rows)
		runtime.KeepAlive(cols)
		nl, nsm := max(ns, nt), min(ns, nt)
		k := pl.stage1K()
		edges := int64(16 * (nl*min(k, nsm) + nsm*min(k, nl) + nl))
		t.Logf("%d × %d: sparse1Bytes %d, lists %d and edges %d bytes", ns, nt, pl.sparse1Bytes(ns, nt), lists, edges)
		if got := pl.sparse1Bytes(ns, nt); got < lists+edges {
			t.Errorf("%d × %d: sparse1Bytes %d < the lists' %d bytes and the edges' %d", ns, nt, got, lists, edges)
		}
	}
}

// TestSparseStage1HintDense checks checkMemory's hint for a sparse Stage 1
// that does not fit: solver = "dense" is offered where the dense matrix
// needs less (a forced sparse of very imbalanced sizes), never where Auto
// took the sparse Stage 1 because its graph is the smaller need.
func TestSparseStage1HintDense(t *testing.T) {
	src, tgt := gaussFeatures(300, 2, 1), gaussFeatures(300, 2, 2)
	for _, tc := range []struct {
		name      string
		solver    string
		sparseK   int
		wantDense bool
	}{
		{"auto, the graph smaller", Auto, 2, false},
		{"forced sparse, the graph smaller", Sparse, 2, false},
		{"forced sparse, the graph larger", Sparse, 64, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := defaultPlan()
			pl.sparseK, pl.sparseAdd = tc.sparseK, min(tc.sparseK, pl.sparseAdd) // the pricing lists scaled as the candidates
			s1, _ := stageBytes(300, 300)
			pl.denseLimit = s1 - 1
			cfg := Config{BatchSize: 4, Stages: 1, Solver: tc.solver, Discrepancy: MMD, Kernel: Linear}
			if sp, _ := pl.sparseStages(300, 300, cfg); !sp {
				t.Fatal("Stage 1 is dense: the case checks nothing")
			}
			g := pl.sparse1Bytes(300, 300)
			if (g > s1) != tc.wantDense {
				t.Fatalf("graph %d bytes, dense matrix %d: not the case named", g, s1)
			}
			pl.available = func() (int64, memLimit) { return g, limitMachine }
			_, err := pl.match(src, tgt, cfg)
			if err == nil {
				t.Fatal("no error")
			}
			if got := strings.Contains(err.Error(), `use solver = "dense"`); got != tc.wantDense {
				t.Errorf("error %q offers solver = \"dense\": %v, want %v", err, got, tc.wantDense)
			}
		})
	}
}

// TestSparseStage1GraphCheckedEachRound checks that a sparse Stage 1 whose
// pricing rounds add edges checks every graph it builds against the memory
// left (plan.graphFits), not only the first one checkMemory counted: on
// low-dimensional ReLU-like features, RBF, pricing adds many violators, and
// where the memory has run short by then the Match must fail with an error
// that says so, names the graph and offers the dense solver, instead of
// building the graph (and, on a real machine, being killed). The graph's
// bytes as graphFits counts them are checked against the graph built.
func TestSparseStage1GraphCheckedEachRound(t *testing.T) {
	src, tgt := floorFeatures("relu", 1200, 300, 2, 1)
	cfg := Config{BatchSize: 4, Stages: 1, Solver: Sparse, Discrepancy: MMD, Kernel: RBF}
	run := func(short bool) (rounds int, err error) {
		pl := defaultPlan()
		solved := false
		pl.trace = func(format string, args ...any) {
			if strings.HasPrefix(format, "first solve") {
				solved = true
			}
			// "pass i.j: … %d violating edges added …": a new graph follows.
			if strings.HasPrefix(format, "pass ") && len(args) > 4 && args[4] != 0 {
				rounds++
			}
		}
		pl.available = func() (int64, memLimit) {
			if short && solved {
				return 1 << 10, limitMachine // after the first graph: 1 kB left
			}
			return 1 << 40, limitMachine
		}
		_, err = pl.match(src, tgt, cfg)
		return rounds, err
	}
	rounds, err := run(false)
	if err != nil {
		t.Fatal(err)
	}
	if rounds == 0 {
		t.Fatal("no pricing round built a second graph: the case checks nothing")
	}
	_, err = run(true)
	if err == nil {
		t.Fatalf("%d pricing rounds with 1 kB of memory left after the first graph: no error", rounds)
	}
	for _, want := range []string{"stage 1 (sparse): its pricing rounds grew the candidate graph", "4 copies, n_large/n_small", `solver = "dense"`, "only 1024 bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestSparseStage1CancelledWhileShort checks that a sparse Stage 1
// cancelled while the memory left runs short reports the cancellation, not
// a refusal for memory: the caller asked it to stop, and the memory error
// would send them to solver = "dense" or a bigger machine for nothing.
func TestSparseStage1CancelledWhileShort(t *testing.T) {
	src, tgt := floorFeatures("relu", 1200, 300, 2, 1)
	mon := &Monitor{}
	cfg := Config{BatchSize: 4, Stages: 1, Solver: Sparse, Discrepancy: MMD, Kernel: RBF, Monitor: mon}
	pl := defaultPlan()
	solved := false
	pl.trace = func(format string, _ ...any) {
		if strings.HasPrefix(format, "first solve") {
			solved = true
		}
	}
	pl.available = func() (int64, memLimit) {
		if solved {
			mon.Cancel() // the caller cancels as the memory runs short
			return 1 << 10, limitMachine
		}
		return 1 << 40, limitMachine
	}
	_, err := pl.match(src, tgt, cfg)
	if !solved {
		t.Fatal("the first solve never ran: the case checks nothing")
	}
	if !errors.Is(err, ErrCancelled) {
		t.Fatalf("cancelled with 1 kB of memory left: error %v, want ErrCancelled", err)
	}
}

// TestCancelPendingWhileShort checks that a Match whose Monitor was
// cancelled before it started (a cancel then applies to the next Match)
// reports the cancellation, not checkMemory's refusal, on both solvers.
func TestCancelPendingWhileShort(t *testing.T) {
	src, tgt := floorFeatures("relu", 1200, 300, 2, 1)
	for _, solver := range []string{Sparse, Dense} {
		mon := &Monitor{}
		mon.Cancel()
		cfg := Config{BatchSize: 4, Stages: 1, Solver: solver, Discrepancy: MMD, Kernel: RBF, Monitor: mon}
		pl := defaultPlan()
		pl.available = func() (int64, memLimit) { return 1 << 10, limitMachine }
		if _, err := pl.match(src, tgt, cfg); !errors.Is(err, ErrCancelled) {
			t.Errorf("solver %s, cancelled before the Match, 1 kB of memory left: error %v, want ErrCancelled", solver, err)
		}
	}
}

// TestSparseStage1FirstGraphRefused checks the error of a sparse Stage 1
// refused at its first graph, which checkMemory counted: the memory left
// shrank between that check and the graph (under RLIMIT_AS the candidate
// lists' address space stays in VmSize; another process may take memory).
// No pricing round has run then, and the error must not say that one grew
// the graph.
func TestSparseStage1FirstGraphRefused(t *testing.T) {
	src, tgt := floorFeatures("relu", 1200, 300, 2, 1)
	cfg := Config{BatchSize: 4, Stages: 1, Solver: Sparse, Discrepancy: MMD, Kernel: RBF}
	pl := defaultPlan()
	calls := 0
	pl.available = func() (int64, memLimit) {
		calls++
		if calls > 1 { // checkMemory's call passes, the first graph's does not
			return 1 << 10, limitMachine
		}
		return 1 << 40, limitMachine
	}
	_, err := pl.match(src, tgt, cfg)
	if err == nil {
		t.Fatal("1 kB of memory left at the first graph: no error")
	}
	if strings.Contains(err.Error(), "pricing rounds grew") {
		t.Errorf("refused at the first graph, the error blames pricing rounds: %v", err)
	}
	for _, want := range []string{"stage 1 (sparse): its first candidate graph", "4 copies, n_large/n_small",
		"the memory left shrank since the check before the solve", "only 1024 bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestSparseStage1GraphHintDenseStages checks that a sparse Stage 1 refused
// at a graph offers solver = "dense" only where the whole dense Match
// would fit once the stage has let go of its edges: with stages = 2 that
// is also Stage 2's dense matrix (P × P, P = n_large, with its kernel
// tables), which checkMemory would then refuse, not Stage 1's alone.
func TestSparseStage1GraphHintDenseStages(t *testing.T) {
	src, tgt := floorFeatures("relu", 1200, 300, 2, 1)
	s1, s2 := stageBytes(1200, 300)
	for _, tc := range []struct {
		stages    int
		wantDense bool
	}{{1, true}, {2, false}} {
		t.Run(fmt.Sprintf("stages=%d", tc.stages), func(t *testing.T) {
			cfg := Config{BatchSize: 4, Stages: tc.stages, Solver: Sparse, Discrepancy: MMD, Kernel: RBF}
			pl := defaultPlan()
			left := s1 + s1/8 // Stage 1's dense matrix fits, with the margin
			if s2 <= 3*left {
				t.Fatalf("Stage 2's matrix %d bytes near what is left, %d: the case checks nothing", s2, left)
			}
			calls := 0
			pl.available = func() (int64, memLimit) {
				calls++
				if calls > 1 { // checkMemory's call passes, the graphs' do not
					return left, limitMachine
				}
				return 1 << 40, limitMachine
			}
			_, err := pl.match(src, tgt, cfg)
			if err == nil || !strings.Contains(err.Error(), "stage 1 (sparse)") {
				t.Fatalf("no graph refused: %v", err)
			}
			if got := strings.Contains(err.Error(), `use solver = "dense"`); got != tc.wantDense {
				t.Errorf("error %q offers solver = \"dense\": %v, want %v", err, got, tc.wantDense)
			}
		})
	}
}

// TestDenseNeedIsCheckMemorys checks denseNeed, which the sparse Stage 1's
// refusals offer solver = "dense" by, against checkMemory itself with
// solver = "dense": it accepts with denseNeed and its margin available, and
// refuses with a byte less.
func TestDenseNeedIsCheckMemorys(t *testing.T) {
	for _, tc := range []struct {
		ns, nt, dim, stages int
		disc, kernel        string
	}{
		{1200, 300, 2, 1, MMD, RBF}, {1200, 300, 2, 2, MMD, RBF}, {300, 1200, 2, 2, MMD, RBF},
		{1000, 1000, 8, 2, MMD, Linear}, {2000, 100, 3000, 2, CORAL, Linear}, {500, 400, 3000, 1, CORAL, Linear},
	} {
		cfg := Config{BatchSize: 4, Stages: tc.stages, Solver: Sparse, Discrepancy: tc.disc, Kernel: tc.kernel}
		pl := defaultPlan()
		dn := pl.denseNeed(tc.ns, tc.nt, tc.dim, cfg)
		cfg.Solver = Dense
		for _, avail := range []int64{dn + dn/8, dn + dn/8 - 1} {
			pl.available = func() (int64, memLimit) { return avail, limitMachine }
			if err := pl.checkMemory(tc.ns, tc.nt, tc.dim, cfg); (err == nil) != (avail == dn+dn/8) {
				t.Errorf("%+v: denseNeed %d, %d bytes available: checkMemory says %v", tc, dn, avail, err)
			}
		}
	}
}

// TestSparseStage1HintDenseStages2 checks that checkMemory, refusing a
// forced sparse two-stage Match whose Stage 1 graph exceeds Stage 1's dense
// matrix, offers solver = "dense" only where the dense Match (Stage 2's
// P × P matrix, P = n_large, included) would pass the check.
func TestSparseStage1HintDenseStages2(t *testing.T) {
	pl := defaultPlan()
	pl.sparseK, pl.sparseAdd = 16, 16 // a graph between the dense stages' needs
	s1, _ := stageBytes(1200, 300)
	g := pl.sparse1Bytes(1200, 300)
	for _, tc := range []struct {
		stages    int
		wantDense bool
	}{{1, true}, {2, false}} {
		cfg := Config{BatchSize: 4, Stages: tc.stages, Solver: Sparse, Discrepancy: MMD, Kernel: Linear}
		dn := pl.denseNeed(1200, 300, 2, cfg)
		if s1 >= g || (dn+dn/8 <= g) != tc.wantDense {
			t.Fatalf("stages = %d: dense Stage 1 %d, graph %d, dense Match %d bytes: not the case named", tc.stages, s1, g, dn)
		}
		pl.available = func() (int64, memLimit) { return g, limitMachine }
		err := pl.checkMemory(1200, 300, 2, cfg)
		if err == nil {
			t.Fatalf("stages = %d: no error", tc.stages)
		}
		if got := strings.Contains(err.Error(), `use solver = "dense"`); got != tc.wantDense {
			t.Errorf("stages = %d: error %q offers solver = \"dense\": %v, want %v", tc.stages, err, got, tc.wantDense)
		}
	}
}

// TestRefusalNamesMargin checks that a refusal whose need is below the
// memory left, refused for the margin of an eighth, says the need with the
// margin: "needs about 38 MB, but only 42 MB" alone reads as a false
// refusal (a reviewer's ulimit -v run, the sparse Stage 1's first graph).
func TestRefusalNamesMargin(t *testing.T) {
	pl := defaultPlan()
	const need = 38 << 20
	pl.available = func() (int64, memLimit) { return need + need/16, limitAddressSpace }
	for _, err := range []error{
		pl.graphFits(need, 0, 1<<50, true, 1200, 300, 4),
		pl.graphFits(need, 0, 1<<50, false, 1200, 300, 4),
	} {
		if err == nil {
			t.Fatal("a need of an eighth over the memory left: no error")
		}
		if want := bytesText(need+need/8) + " with the margin"; !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	g := pl.sparse1Bytes(1200, 300)
	pl.available = func() (int64, memLimit) { return g + g/16, limitMachine }
	cfg := Config{BatchSize: 4, Stages: 1, Solver: Sparse, Discrepancy: MMD, Kernel: Linear}
	err := pl.checkMemory(1200, 300, 2, cfg)
	if want := bytesText(g+g/8) + " with the margin"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("checkMemory: error %v does not say %q", err, want)
	}
}
