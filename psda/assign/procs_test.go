package assign

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/psda-dev/psda/psda/internal/testref"
)

// TestProcsSameResult checks that the dense solvers' results, duals
// included, do not depend on GOMAXPROCS (which sets how many parts the
// warm start splits its rows into, par.NParts) nor on the thread setting
// (par.SetWorkers): bit for bit, on tie-heavy costs above par's 1024-row
// threshold, where the parts' candidate lists are merged (merged in
// reverse part order, they change Rectangular's result here).
func TestProcsSameResult(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 5))
	const n = 1100
	rect := stage1Cost(n, n, 2, 5) // squared distances, rounded: ties
	for k, x := range rect {
		rect[k] = math.Round(16*x) / 16
	}
	const nr, nc = 1100, 400
	imb := fill(nr*nc, func() float64 { return float64(rng.IntN(9)) })
	sym := stage2Cost(n, 3)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			sym[i*n+j] = math.Round(2 * sym[i*n+j])
			sym[j*n+i] = sym[i*n+j]
		}
	}
	same := func(a, b []float64) bool {
		return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
	}
	var r0, i0 *Solution
	var m0 *PerfectMatching
	settings := []testref.Setting{{Procs: 1}, {Procs: 3, Workers: 1}, {Procs: 8}, {Procs: 2, Workers: 5}}
	testref.EachSetting(t, settings, func(run testref.Setting) {
		procs, w := run.Procs, run.Workers
		r, err := Rectangular(rect, n, n)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Imbalanced(imb, nr, nc)
		if err != nil {
			t.Fatal(err)
		}
		m, err := MinWeightPerfectMatching(sym, n)
		if err != nil {
			t.Fatal(err)
		}
		if r0 == nil {
			r0, i0, m0 = r, s, m
			return
		}
		if !slices.Equal(r.Col4Row, r0.Col4Row) || !same(r.U, r0.U) || !same(r.V, r0.V) {
			t.Fatalf("GOMAXPROCS %d, %d workers: Rectangular differs from GOMAXPROCS 1's", procs, w)
		}
		if !slices.Equal(s.Col4Row, i0.Col4Row) || !same(s.U, i0.U) || !same(s.V, i0.V) {
			t.Fatalf("GOMAXPROCS %d, %d workers: Imbalanced differs from GOMAXPROCS 1's", procs, w)
		}
		if !slices.Equal(m.Mate, m0.Mate) || !same(m.Duals.Y, m0.Duals.Y) || !same([]float64{m.Cost, m.Bound}, []float64{m0.Cost, m0.Bound}) {
			t.Fatalf("GOMAXPROCS %d, %d workers: MinWeightPerfectMatching differs from GOMAXPROCS 1's", procs, w)
		}
	})
}
