package assign

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/psda-dev/psda/psda/internal/testref"
)

// TestNormaliseAnyThreads checks Normalise, which sorts its rows on all
// cores, against a brute-force reference (per row: the columns in
// increasing order, each with the value first added for it) for
// GOMAXPROCS 1, 2 and 8 and a thread setting below them, on 5000 rows
// (many of par.Rows' chunks) of which some repeat columns with other
// values and some are already in order.
func TestNormaliseAnyThreads(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 9))
	const n, cols = 5000, 30
	in := make(Edges, n)
	for a := range in {
		for range rng.IntN(40) {
			in.Add(a, rng.IntN(cols), rng.Float64())
		}
		if a%7 == 0 { // in order already: one scan, left as it is
			slices.SortFunc(in[a], func(p, q Edge) int { return int(p.B) - int(q.B) })
			in[a] = slices.CompactFunc(in[a], func(p, q Edge) bool { return p.B == q.B })
		}
	}
	want, total := make(Edges, n), 0
	for a, row := range in {
		for b := int32(0); b < cols; b++ {
			if k := slices.IndexFunc(row, func(e Edge) bool { return e.B == b }); k >= 0 {
				want[a] = append(want[a], row[k])
				total++
			}
		}
	}
	testref.EachSetting(t, testref.Settings, func(run testref.Setting) {
		e := make(Edges, n)
		for a, row := range in {
			e[a] = slices.Clone(row)
		}
		if got := e.Normalise(); got != total {
			t.Fatalf("GOMAXPROCS %d, threads %d: Normalise returned %d edges, want %d", run.Procs, run.Workers, got, total)
		}
		for a := range e {
			if !slices.Equal(e[a], want[a]) { // Edge's X compares bit for bit (no NaN here)
				t.Fatalf("GOMAXPROCS %d, threads %d: row %d = %v, want %v", run.Procs, run.Workers, a, e[a], want[a])
			}
		}
	})
}
