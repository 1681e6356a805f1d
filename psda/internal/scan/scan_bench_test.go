package scan

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkScan times a whole-row scan that finds nothing (the common
// case of the dense passes) against the plain loop it replaces, on rows
// that stay in cache (1,000 entries) and rows the size of the P = 20,000
// Stage 2 matrix's (20,000 entries, 160 KB: in L2). The passes over the
// full matrix are bound by memory instead (docs/performance.md).
func BenchmarkScan(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		row, p := make([]float64, n), make([]float64, n)
		for j := range row {
			row[j], p[j] = 1+rng.Float64(), rng.Float64()
		}
		b.Run(fmt.Sprintf("n=%d/DiffBelow", n), func(b *testing.B) {
			b.SetBytes(int64(8 * n))
			for range b.N {
				if DiffBelow(row, p, 0, -1) != n {
					b.Fatal("stopped")
				}
			}
		})
		b.Run(fmt.Sprintf("n=%d/plain", n), func(b *testing.B) {
			b.SetBytes(int64(8 * n))
			for range b.N {
				m := 0.0
				for j, x := range row {
					if h := x - p[j]; h < m {
						m = h
					}
				}
				if m != 0 {
					b.Fatal("stopped")
				}
			}
		})
	}
}
