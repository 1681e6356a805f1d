package cost

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/psda-dev/psda/psda/internal/rbf"
	"github.com/psda-dev/psda/psda/internal/testref"
	"github.com/psda-dev/psda/psda/internal/topk"
)

// TestRBFErr32AnyThreads checks rbfErr32, which runs its bisections on all
// cores, bit for bit against its formula evaluated entry by entry in
// order, for GOMAXPROCS 1, 2 and 8 and a thread setting below them, with
// and without the nearest-kernel values, on 3000 vectors (many of
// par.Rows' chunks).
func TestRBFErr32AnyThreads(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 11))
	kern := rbf.New([]float64{0.5, 1, 2, 4, 8})
	const n = 3000
	e, near := make([]float64, n), topk.NewMax(n)
	for i := range e {
		e[i] = 1e-6 * rng.Float64()
		near.K[i] = kern.NTerms * rng.Float64()
	}
	emax := 1e-6
	for _, nr := range []*topk.Max{nil, near} {
		want := make([]float64, n)
		for i, x := range e {
			d := 0.0
			if nr != nil {
				d = kern.DistBelow(nr.K[i]+kern.ChainErr32()) - 2*(x+emax)
			}
			want[i] = x*kern.Slope(d) + kern.ChainErr32()/2
		}
		testref.EachSetting(t, testref.Settings, func(run testref.Setting) {
			got := rbfErr32(e, emax, nr, kern)
			for i := range want {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("near %v, GOMAXPROCS %d, threads %d: entry %d = %v, want %v",
						nr != nil, run.Procs, run.Workers, i, got[i], want[i])
				}
			}
		})
	}
}
