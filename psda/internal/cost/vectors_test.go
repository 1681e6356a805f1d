package cost

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/psda-dev/psda/psda/internal/feat"
)

// TestColMeans checks the compensated means against exact sums (math/big)
// on features with a large common offset, where a plain sum loses n·ε of
// the offset, and that identical rows give their value exactly.
func TestColMeans(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	const n, d = 100000, 3
	x := make([]float64, n*d)
	for i := range x {
		x[i] = 1e8 + rng.NormFloat64()
	}
	got := colMeans(feat.Matrix{N: n, D: d, F64: x})
	for c := 0; c < d; c++ {
		exact := new(big.Float).SetPrec(2000)
		for i := 0; i < n; i++ {
			exact.Add(exact, new(big.Float).SetFloat64(x[i*d+c]))
		}
		want, _ := exact.Quo(exact, new(big.Float).SetInt64(n)).Float64()
		if math.Abs(got[c]-want) > 2*math.Abs(want)*0x1p-53 {
			t.Errorf("column %d: mean %.17g, exact %.17g", c, got[c], want)
		}
	}
	same := []float64{1e30, 1e30, 1e30, 1e30, 1e30, 1e30, 1e30, 1e30}
	if m := colMeans(feat.Matrix{N: 8, D: 1, F64: same}); m[0] != 1e30 {
		t.Errorf("eight rows of 1e30: mean %.17g", m[0])
	}
}
