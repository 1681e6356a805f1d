package psda

import (
	"cmp"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/psda-dev/psda/psda/assign"
	"github.com/psda-dev/psda/psda/internal/cost"
	"github.com/psda-dev/psda/psda/internal/topk"
)

// TestPriceBlossomSameEveryRun checks that the edges a float32 blossom
// pricing pass hands to AddEdges, and the cross parts they are linked
// with, do not depend on the order in which the pass's goroutines visit a
// row's tiles. Rows here have more violated edges than their budget of
// exact recomputations (priceBlossom): each is priced again in float64,
// so the pass returns the row's first budget edges twice, once with the
// cross part of cost.Stage2.At and once with the float64 pass's, and
// which edges came first depends on the schedule. P spans several tiles
// of columns, so that a row's tiles can run in any order.
func TestPriceBlossomSameEveryRun(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	const p, d = 600, 24
	rng := rand.New(rand.NewPCG(17, 3))
	src, tgt := gaussFeatures(p, d, 41), gaussFeatures(p, d, 42)
	for i := range src.F64 { // two clusters
		src.F64[i] += 3 * float64(i/d%2)
		tgt.F64[i] += 3 * float64(i/d%2)
	}
	pairs := make([]Pair, p)
	for r := range pairs {
		pairs[r] = Pair{S: r, T: rng.IntN(p)}
	}
	cfg := Config{BatchSize: 4, Discrepancy: MMD, Kernel: RBF, Stages: 2}
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
	duals := &em.Duals
	tol := assign.PriceTol(c)
	scale := 0.0
	for _, x := range c {
		scale = max(scale, math.Abs(x))
	}
	y0 := append([]float64(nil), duals.Y...)
	var rows []int
	for r := 0; r < p; r += 3 {
		duals.Y[r] += scale * 0.02 * rng.Float64()
		rows = append(rows, r)
	}
	has := func(r, q int) bool { return false }
	e := md.Err32()
	type linked struct {
		e [2]int
		x uint64
	}
	var first []linked
	pl := defaultPlan()
	redone := 0
	pl.trace = func(format string, args ...any) {
		if strings.Contains(format, "priced again in float64") {
			redone = args[0].(int)
		}
	}
	for run := 0; run < 20; run++ {
		rec := newRowRecords(make([]float64, p), topk.New(p, 16))
		found, cross, err := pl.priceBlossom(md, rows, duals, y0, rec, e, has, costOf, tol, nil)
		if err != nil {
			t.Fatal(err)
		}
		// What AddEdges links: the first of each edge in (row, column) order.
		f, x := byEdge(found, cross)
		var got []linked
		for k := range f {
			if k > 0 && f[k] == f[k-1] {
				continue
			}
			got = append(got, linked{f[k], math.Float64bits(x[k])})
		}
		if run == 0 {
			first = got
			if redone == 0 {
				t.Fatal("no row went over its budget: the test checks nothing")
			}
			continue
		}
		if len(got) != len(first) {
			t.Fatalf("run %d: %d edges, first run %d", run, len(got), len(first))
		}
		for k := range got {
			if got[k] != first[k] {
				t.Fatalf("run %d: edge %v linked with cross part %v, first run %v with %v",
					run, got[k].e, math.Float64frombits(got[k].x), first[k].e, math.Float64frombits(first[k].x))
			}
		}
	}
}

// byEdge is assign's byEdge (pricing_pass.go), which AddEdges sorts the
// found edges with before it links the first of each: the same sort on
// the same input, so the same order.
func byEdge(found [][2]int, cross []float64) ([][2]int, []float64) {
	order := make([]int, len(found))
	for k := range order {
		order[k] = k
	}
	slices.SortFunc(order, func(p, q int) int {
		if c := cmp.Compare(found[p][0], found[q][0]); c != 0 {
			return c
		}
		return cmp.Compare(found[p][1], found[q][1])
	})
	f, x := make([][2]int, len(found)), make([]float64, len(found))
	for k, o := range order {
		f[k], x[k] = found[o], cross[o]
	}
	return f, x
}
