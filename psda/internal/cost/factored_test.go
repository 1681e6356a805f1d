package cost

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/psda-dev/psda/psda/internal/feat"
	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/testref"
)

// TestStage2Factored checks the factored RBF Stage 2 (cross kernel stored,
// used for Stage 1's pairs when one side is much larger) against the
// paper's formula and against the Gram matrix of the paired vectors, with
// the larger side as source and as target, odd and even numbers of pairs.
func TestStage2Factored(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	defer func(old int) { gram.TileSize = old }(gram.TileSize)
	gram.TileSize = 12 // several tiles, diagonal and off-diagonal
	for _, tc := range []struct {
		name   string
		ns, nt int
		f32    bool
	}{
		{"source larger/even", 40, 9, false},
		{"source larger/odd", 41, 10, true},
		{"target larger/odd", 7, 33, false},
		{"target larger/even", 8, 36, true},
	} {
		for _, spec := range []Spec{
			{Kind: RBFMMD, K: 2, Gammas: paperGammas},
			{Kind: RBFMMD, K: 4, Gammas: []float64{0.7, 0.03, 3}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				src, tgt := testref.RandMatrix(rng, tc.ns, 5, tc.f32), testref.RandMatrix(rng, tc.nt, 5, tc.f32)
				p := max(tc.ns, tc.nt)
				small := min(tc.ns, tc.nt)
				perm := rng.Perm(small)
				pairs := make([]feat.Pair, p)
				for r := range pairs {
					j := perm[r%small]
					if tc.ns >= tc.nt {
						pairs[r] = feat.Pair{S: r, T: j}
					} else {
						pairs[r] = feat.Pair{S: j, T: r}
					}
				}
				if _, _, _, _, ok := factorable(src, tgt, pairs); !ok {
					t.Fatal("pairs not recognised as factorable")
				}
				checkCosts(t, spec, src, tgt, pairs, 1e-12)
				got, m := stage2Costs(src, tgt, spec, pairs)
				FactorMin = math.MaxInt
				want, wm := stage2Costs(src, tgt, spec, pairs)
				FactorMin = 2
				if m != wm {
					t.Fatalf("m = %d, unfactored %d", m, wm)
				}
				testref.CloseTo(t, "factored vs paired Gram", got, want, 1e-12, testref.TermScale(refCost(spec), src, tgt))
			})
		}
	}
}
