package assign

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// stage1Cost returns PSDA's Stage 1 MMD-like cost for the linear kernel: the
// squared Euclidean distance between nr and nc Gaussian points in dimension d.
func stage1Cost(nr, nc, d int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	return sqDist(gaussian(rng, nr, d), gaussian(rng, nc, d))
}

// stage2Cost returns the pathological Stage 2 cost of the paper's variance
// experiment: c_rq = ‖w_r + w_q‖² with w_r standard normal in R².
func stage2Cost(n int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 2))
	w := make([][2]float64, n)
	for r := range w {
		w[r] = [2]float64{rng.NormFloat64(), rng.NormFloat64()}
	}
	c := make([]float64, n*n)
	for r := range w {
		for q := range w {
			a, b := w[r][0]+w[q][0], w[r][1]+w[q][1]
			c[r*n+q] = a*a + b*b
		}
	}
	return c
}

func BenchmarkStage1(b *testing.B) {
	for _, n := range []int{1000, 4000} {
		for _, d := range []int{2, 512} {
			b.Run(fmt.Sprintf("n=%d/d=%d", n, d), func(b *testing.B) {
				c := stage1Cost(n, n, d, 1)
				b.ResetTimer()
				defer reportCPU(b, cpuNow())
				for range b.N {
					if _, err := Rectangular(c, n, n); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkImbalanced(b *testing.B) {
	for _, sh := range [][2]int{{4000, 1300}, {15000, 2000}} {
		for _, d := range []int{2, 512} {
			b.Run(fmt.Sprintf("%dx%d/d=%d", sh[0], sh[1], d), func(b *testing.B) {
				c := stage1Cost(sh[0], sh[1], d, 3)
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
}

func BenchmarkStage2(b *testing.B) {
	for _, n := range []int{1000, 4000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			c := stage2Cost(n, 4)
			b.ResetTimer()
			defer reportCPU(b, cpuNow())
			for range b.N {
				if _, err := MinWeightPerfectMatching(c, n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// reportCPU adds the CPU seconds per operation since start as a metric.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric((cpuNow()-start).Seconds()/float64(b.N), "cpu-s/op")
}
