package psda

import (
	"fmt"
	"github.com/psda-dev/psda/psda/internal/cost"
	"github.com/psda-dev/psda/psda/internal/topk"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/psda-dev/psda/psda/assign"
)

// TestPriceBlossom checks priceBlossom, the pricing of Stage 2's sparse
// blossom rounds, against every edge's reduced cost computed from the
// features alone (cost.Stage2.At) and the duals' own ReducedCost: the exact
// duals of the dense optimum (blossoms included, so that Shared matters),
// raised at some vertices so that edges become violated, with a random part
// of the edges in the graph. The float64 pass, the float32 pass with its
// exact recomputation, and the float32 pass whose rows exceed their budget
// of recomputations (priced again in float64) must each return exactly the
// violated edges outside the graph.
func TestPriceBlossom(t *testing.T) {
	for _, tc := range []struct {
		kernel string
		p, d   int
		raise  float64 // fraction of the vertices raised
	}{
		{RBF, 120, 16, 0.1}, {RBF, 151, 40, 0.5}, {Linear, 100, 8, 0.3}, {RBF, 90, 3, 1},
	} {
		t.Run(fmt.Sprintf("%s/P=%d/d=%d/raise=%v", tc.kernel, tc.p, tc.d, tc.raise), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.p), uint64(tc.d)))
			bc := newBlossomCase(t, rng, tc.p, tc.d, uint64(tc.p), tc.kernel)
			md, cost, em, tol, scale := bc.md, bc.costOf, bc.em, bc.tol, bc.scale
			p := md.P
			d := &em.Duals
			if len(d.Z) == 0 {
				t.Fatal("no blossom in the optimum's duals: the test needs Shared")
			}
			y0 := slices.Clone(d.Y)
			var rows []int
			for r := 0; r < p; r++ {
				if rng.Float64() < tc.raise {
					d.Y[r] += scale * 0.05 * rng.Float64()
					rows = append(rows, r)
				}
			}
			inGraph := map[[2]int]bool{}
			for r := 0; r < p; r++ {
				for q := r + 1; q < p; q++ {
					if rng.IntN(4) == 0 {
						inGraph[[2]int{r, q}], inGraph[[2]int{q, r}] = true, true
					}
				}
			}
			has := func(r, q int) bool { return inGraph[[2]int{r, q}] }
			want, near := map[[2]int]bool{}, map[[2]int]bool{}
			for _, r := range rows {
				for q := 0; q < p; q++ {
					if q == r || has(r, q) {
						continue
					}
					rc := d.ReducedCost(r, q, cost(r, q, md.At(r, q)))
					if rc < -tol {
						want[[2]int{r, q}] = true
					}
					if math.Abs(rc+tol) < 1e-12*scale {
						near[[2]int{r, q}] = true // either answer is right
					}
				}
			}
			if len(want) == 0 {
				t.Fatal("no violated edge: the test checks nothing")
			}
			e := md.Err32()
			for _, run := range []struct {
				name string
				e    []float64
			}{{"float64", nil}, {"float32", e}, {"float32 redo", e}} {
				pl := defaultPlan()
				if run.name == "float32 redo" {
					pl.blossomBudget = 1 << 30 // 1/2^30 of a row: every row with a violator goes to float64
				}
				rec := newRowRecords(make([]float64, p), topk.New(p, 16))
				found, cross, err := pl.priceBlossom(md, rows, d, y0, rec, run.e, has, cost, tol, nil)
				if err != nil {
					t.Fatal(err)
				}
				checkRecords(t, run.name, rec, rows, md, y0, has, cost)
				got := map[[2]int]bool{}
				for k, f := range found {
					if x := md.At(f[0], f[1]); math.Abs(cross[k]-x) > 1e-12*(1+math.Abs(x)) {
						t.Fatalf("%s: edge %v cross part %v, exact %v", run.name, f, cross[k], x)
					}
					got[f] = true
				}
				for f := range want {
					if !got[f] && !near[f] {
						t.Fatalf("%s: violated edge %v missed (%d found, %d violated)", run.name, f, len(got), len(want))
					}
				}
				for f := range got {
					if !want[f] && !near[f] {
						t.Fatalf("%s: edge %v is not violated", run.name, f)
					}
				}
			}
		})
	}
}

// checkRecords fails t unless every row in rows holds a record whose kept
// edges carry their exact cross parts (up to rounding) and whose bound low is at most s0 of
// every other edge of the row outside the graph, computed exactly.
func checkRecords(t *testing.T, name string, rec *rowRecords, rows []int, md *cost.Stage2, y0 []float64,
	has func(r, q int) bool, cost func(r, q int, v float64) float64) {
	t.Helper()
	p := md.P
	for _, r := range rows {
		kept := map[int]bool{}
		rec.kept.Each(r, func(q int, _, x float64) {
			kept[q] = true
			if want := md.At(r, q); math.Abs(x-want) > 1e-12*(1+math.Abs(want)) {
				t.Fatalf("%s: row %d kept edge to %d has cross part %v, exact %v", name, r, q, x, want)
			}
		})
		if len(kept) == 0 {
			t.Fatalf("%s: row %d keeps no edge", name, r)
		}
		for q := 0; q < p; q++ {
			if q == r || has(r, q) || kept[q] {
				continue
			}
			if s0 := cost(r, q, md.At(r, q)) - y0[r] - y0[q]; s0 < rec.low[r] {
				t.Fatalf("%s: row %d edge to %d has s0 %v below the record's bound %v", name, r, q, s0, rec.low[r])
			}
		}
	}
}

// TestRowRecords checks, on the sparse Stage 2 of several matchings
// (clustered and Gaussian features, RBF, linear and CORAL, few candidates so
// that pricing runs), that at every blossom round each row's record bounds
// s0 of every edge of the row outside the graph and its kept list, computed
// exactly, and that Match's result is still certified.
func TestRowRecords(t *testing.T) {
	pl := defaultPlan()
	pl.sparseK, pl.sparseAdd = 4, 8
	checked := 0
	var fail error
	pl.records = func(rec *rowRecords, md *cost.Stage2, has func(a, b int) bool, y0 []float64, cost func(a, b int, x float64) float64) {
		p := md.P
		scale := 0.0
		for a := 0; a < p; a++ {
			for b := 0; b < p; b++ {
				if a != b {
					scale = max(scale, math.Abs(cost(a, b, md.At(a, b))))
				}
			}
		}
		for a := 0; a < p && fail == nil; a++ {
			kept := map[int]bool{}
			rec.kept.Each(a, func(b int, _, x float64) {
				kept[b] = true
				if want := md.At(a, b); math.Abs(x-want) > 1e-12*(1+math.Abs(want)) {
					fail = fmt.Errorf("row %d kept edge to %d has cross part %v, exact %v", a, b, x, want)
				}
			})
			for b := 0; b < p; b++ {
				if b == a || has(a, b) || kept[b] {
					continue
				}
				if s0 := cost(a, b, md.At(a, b)) - y0[a] - y0[b]; s0 < rec.low[a]-1e-9*scale {
					fail = fmt.Errorf("row %d edge to %d: s0 %v below the record's bound %v", a, b, s0, rec.low[a])
					break
				}
			}
			checked++
		}
	}
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"rbf", Config{BatchSize: 2, Discrepancy: MMD, Kernel: RBF, Stages: 2, Solver: Sparse}},
		{"linear", Config{BatchSize: 4, Discrepancy: MMD, Kernel: Linear, Stages: 2, Solver: Sparse}},
		{"coral", Config{BatchSize: 2, Discrepancy: CORAL, Stages: 2, Solver: Sparse}},
	} {
		for seed := uint64(1); seed <= 3; seed++ {
			for _, data := range []string{"classes", "gauss"} {
				var src, tgt Matrix
				if data == "classes" {
					src, tgt = classFeatures(300, 8, false, seed), classFeatures(260, 8, true, seed)
				} else {
					src, tgt = gaussFeatures(300, 5, seed), gaussFeatures(260, 5, seed+10)
				}
				m, err := pl.match(src, tgt, tc.cfg)
				if err != nil {
					t.Fatalf("%s/%s/%d: %v", tc.name, data, seed, err)
				}
				if fail != nil {
					t.Fatalf("%s/%s/%d: %v", tc.name, data, seed, fail)
				}
				if gap := m.Stage2Cost - m.Stage2Bound; gap > 1e-9*math.Abs(m.Stage2Cost) {
					t.Fatalf("%s/%s/%d: stage 2 cost %v, bound %v", tc.name, data, seed, m.Stage2Cost, m.Stage2Bound)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no record was checked: the blossom rounds did not run")
	}
	t.Logf("%d row records checked", checked)
}

// blossomCase is the set-up of the blossom pricing tests: p pairs of two
// clustered Gaussian domains of d features (blossoms nest; seeds seed and
// seed+1), paired at random by rng; the dense Stage 2's matrix c (m nodes)
// and its exact optimum em; the model after a full pass, with costOf, the
// cost the sparse path gives a cross part v of edge (r, q); the matrix's
// largest |entry| (scale) and assign.PriceTol(c).
type blossomCase struct {
	md         *cost.Stage2
	c          []float64
	m          int
	costOf     func(r, q int, v float64) float64
	em         *assign.ExactMatching
	tol, scale float64
}

func newBlossomCase(t *testing.T, rng *rand.Rand, p, d int, seed uint64, kernel string) *blossomCase {
	t.Helper()
	src, tgt := gaussFeatures(p, d, seed), gaussFeatures(p, d, seed+1)
	for i := range src.F64 {
		src.F64[i] += 3 * float64(i/d%2)
		tgt.F64[i] += 3 * float64(i/d%2)
	}
	pairs := make([]Pair, p)
	for r := range pairs {
		pairs[r] = Pair{S: r, T: rng.IntN(p)}
	}
	cfg := Config{BatchSize: 4, Discrepancy: MMD, Kernel: kernel, Stages: 2}
	c, m := stage2Costs(src, tgt, cfg, pairs)
	md := newStage2Model(src, tgt, cfg, pairs, math.MaxInt64)
	md.Pass(cost.Scope{}, func(int, int, []float64) {})
	node, single := md.Finish()
	costOf := func(r, q int, v float64) float64 {
		switch {
		case r == p:
			return single[q] * md.Scale
		case q == p:
			return single[r] * md.Scale
		}
		return (node[r] + node[q] + md.Coef*v) * md.Scale
	}
	em, err := assign.BlossomDense(c, m, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	scale := 0.0
	for _, x := range c {
		scale = max(scale, math.Abs(x))
	}
	return &blossomCase{md: md, c: c, m: m, costOf: costOf, em: em, tol: assign.PriceTol(c), scale: scale}
}
