package gram

import (
	"fmt"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/psda-dev/psda/psda/internal/testref"
)

// BenchmarkGram compares the engine's cross Gram matrix (float64, and
// float32 with gram32), on each assembly path the CPU supports, with gonum's pure-Go Dgemm on the same product (n×d
// times d×n, n = 2000, d = 512; engine and engine32 also at n = 8000); the
// metrics are GFlop/s of wall time and GFlop per CPU second (which stays
// meaningful when other processes share the machine).
func BenchmarkGram(b *testing.B) {
	const d = 512
	engines := []struct {
		name string
		run  func(x, y Vectors, sym bool, kind Kind, mon Progress, epi func(t *Tile))
	}{{"engine", Gram}, {"engine32", Gram32}}
	for _, n := range []int{2000, 8000} {
		x, y := testref.BenchFeatures(n, d, 1), testref.BenchFeatures(n, d, 2)
		flops := func(b *testing.B, cpu0 time.Duration) {
			f := 2 * float64(n) * float64(n) * d * float64(b.N)
			b.ReportMetric(f/float64(b.Elapsed().Nanoseconds()), "GFlop/s")
			b.ReportMetric(f/float64((testref.CPUTime()-cpu0).Nanoseconds()), "GFlop/cpu-s")
		}
		for _, path := range Paths() {
			if path == "portable" {
				continue // gonum's Dgemm below, and far slower
			}
			for _, e := range engines {
				b.Run(fmt.Sprintf("%s/%s/n=%d", e.name, path, n), func(b *testing.B) {
					prev, _ := UsePath(path)
					defer UsePath(prev)
					c := make([]float64, n*n)
					cpu0 := testref.CPUTime()
					for b.Loop() {
						e.run(DenseRows(x.F64, n, d), DenseRows(y.F64, n, d), false, Dots, nil, func(t *Tile) {
							for i := 0; i < t.NI; i++ {
								copy(c[(t.I0+i)*n+t.J0:][:t.NJ], t.G[i*t.LD:][:t.NJ])
							}
						})
					}
					flops(b, cpu0)
				})
			}
		}
		if n > 2000 {
			continue
		}
		b.Run(fmt.Sprintf("gonum-Dgemm/n=%d", n), func(b *testing.B) {
			c := make([]float64, n*n)
			var impl gonum.Implementation
			cpu0 := testref.CPUTime()
			for b.Loop() {
				impl.Dgemm(blas.NoTrans, blas.Trans, n, n, d, 1, x.F64, d, y.F64, d, 0, c, n)
			}
			flops(b, cpu0)
		})
	}
}
