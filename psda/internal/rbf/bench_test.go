package rbf

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/psda-dev/psda/psda/internal/gram"
)

// BenchmarkMixturePaths times the RBF mixture's exponentials per entry on
// the AVX-512 and the AVX2 routines (gram.UsePath "avx512" and "avx2"),
// alternating the two in every iteration so that a shared machine's noise
// falls on both alike, and reports ns per entry for each and their ratio
// (avx512/avx2; below 1 means AVX-512 is faster). Rows of 192 entries are
// the Gram tile's (gram.TileSize); the paper's gammas: Row is 2 exps and 3
// powers per entry, Row32 1 exp and 4 powers; exp and pow10 one call each.
func BenchmarkMixturePaths(b *testing.B) {
	if !slices.Contains(gram.Paths(), "avx512") || !slices.Contains(gram.Paths(), "avx2") {
		b.Skip("needs both the avx512 and avx2 paths")
	}
	k := New(defaultGammas)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{192, 2048} {
		const entries = 1 << 16 // per path and iteration
		d := make([]float64, n)
		for i := range d {
			d[i] = rng.Float64() * 100 // every gamma's term alive somewhere
		}
		out, e := make([]float64, n), make([]float64, n)
		kinds := []struct {
			name string
			run  func()
		}{
			{"Row", func() { k.Row(out, d, e) }},
			{"Row32", func() { k.Row32(out, d, e) }},
			{"exp", func() { expNeg(out, d, 0.1, true) }},
			{"pow10", func() { copy(e, out); powNeg(out, e, d, 1, 10) }},
		}
		for _, kind := range kinds {
			b.Run(fmt.Sprintf("%s/n=%d", kind.name, n), func(b *testing.B) {
				var spent [2]time.Duration
				for b.Loop() {
					for p, path := range []string{"avx2", "avx512"} {
						prev, _ := gram.UsePath(path)
						t0 := time.Now()
						for range entries / n {
							kind.run()
						}
						spent[p] += time.Since(t0)
						gram.UsePath(prev)
					}
				}
				per := float64(b.N * (entries / n) * n)
				b.ReportMetric(float64(spent[0].Nanoseconds())/per, "ns/entry-avx2")
				b.ReportMetric(float64(spent[1].Nanoseconds())/per, "ns/entry-avx512")
				b.ReportMetric(float64(spent[1])/float64(spent[0]), "avx512/avx2")
			})
		}
	}
}
