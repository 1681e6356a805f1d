package psda

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/psda-dev/psda/psda/assign"
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
	bc := newBlossomCase(t, rng, p, d, 41, RBF)
	md, m, costOf, tol, scale := bc.md, bc.m, bc.costOf, bc.tol, bc.scale
	duals := &bc.em.Duals
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
		// What the sparse Stage 2 links into its graph (AddEdges).
		adj := make(assign.Edges, m)
		(&assign.Pricing{}).AddEdges(adj, found, cross)
		var got []linked
		for a, row := range adj {
			for _, e := range row {
				got = append(got, linked{[2]int{a, int(e.B)}, math.Float64bits(e.X)})
			}
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
