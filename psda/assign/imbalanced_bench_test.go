package assign

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkImbalancedUniform times Imbalanced on uniform random costs, from
// nr/nc close to 1 (q = 1: every column used once or twice, nc−r dummy rows
// in the copy model) to large multiples.
func BenchmarkImbalancedUniform(b *testing.B) {
	for _, sh := range [][2]int{{4000, 3000}, {3000, 2500}, {4000, 2100}, {4000, 1300}, {15000, 2000}} {
		b.Run(fmt.Sprintf("%dx%d", sh[0], sh[1]), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(11, uint64(sh[0])))
			c := fill(sh[0]*sh[1], rng.Float64)
			b.ResetTimer()
			defer reportCPU(b, cpuNow())
			for range b.N {
				if _, err := Imbalanced(c, sh[0], sh[1]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkImbalancedFewColumns times Imbalanced on forced and near-forced
// shapes: 10,000 rows on one column (a copy), two, ten and a hundred (h =
// nr/nc copies per column, where a bid used to scan all h).
func BenchmarkImbalancedFewColumns(b *testing.B) {
	for _, nc := range []int{1, 2, 10, 100} {
		const nr = 10000
		b.Run(fmt.Sprintf("%dx%d", nr, nc), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(12, uint64(nc)))
			c := fill(nr*nc, rng.Float64)
			b.ResetTimer()
			defer reportCPU(b, cpuNow())
			for range b.N {
				if _, err := Imbalanced(c, nr, nc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkImbalancedIdenticalRows times Imbalanced where every row is the
// same (every source at one point): the exact finish's paths settle about q
// tied copies of one column each (nextCopy).
func BenchmarkImbalancedIdenticalRows(b *testing.B) {
	for _, sh := range [][2]int{{12000, 3}, {12000, 20}} {
		nr, nc := sh[0], sh[1]
		b.Run(fmt.Sprintf("%dx%d", nr, nc), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(13, uint64(nc)))
			row := fill(nc, rng.Float64)
			c := make([]float64, 0, nr*nc)
			for range nr {
				c = append(c, row...)
			}
			b.ResetTimer()
			defer reportCPU(b, cpuNow())
			for range b.N {
				if _, err := Imbalanced(c, nr, nc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
