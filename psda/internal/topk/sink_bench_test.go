package topk

import (
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkRowSink times one pass of the row sink over a 2000×2000 matrix
// of uniform costs into lists of 8 per row (the dense warm start's pricing
// pass, on one core) against SmallestK over the same rows, the sorted
// insertion that pass used before the one pricing loop, and reports the
// ratio. Run: go test -run XXX -bench RowSink ./psda/internal/topk
func BenchmarkRowSink(b *testing.B) {
	const n, k = 2000, 8
	rng := rand.New(rand.NewPCG(1, 2))
	c := make([]float64, n*n)
	for i := range c {
		c[i] = rng.Float64()
	}
	z, w := make([]float64, n), make([]float64, n)
	for i := range z {
		z[i], w[i] = rng.Float64()/10, rng.Float64()/10
	}
	none := func(int, int) bool { return false }
	for _, byIndex := range []bool{false, true} {
		name := map[bool]string{false: "hash", true: "index"}[byIndex]
		b.Run(name, func(b *testing.B) {
			var sink, sorted time.Duration
			for it := 0; it < b.N; it++ {
				t0 := time.Now()
				s := New(n, k)
				if byIndex {
					s = NewByIndex(n, k)
				}
				row, _ := s.Sinks(1, z, w, true, none)
				for a := 0; a < n; a++ {
					row(a, 0, c[a*n:a*n+n])
				}
				t1 := time.Now()
				topV, topJ := make([]float64, k), make([]int, k)
				negW := make([]float64, n)
				for j := range negW {
					negW[j] = -w[j]
				}
				for a := 0; a < n; a++ {
					SmallestK(c[a*n:a*n+n], negW, topV, topJ)
				}
				t2 := time.Now()
				sink += t1.Sub(t0)
				sorted += t2.Sub(t1)
			}
			b.ReportMetric(sink.Seconds()/float64(b.N), "sink-s/op")
			b.ReportMetric(sorted.Seconds()/float64(b.N), "smallestk-s/op")
			b.ReportMetric(sink.Seconds()/sorted.Seconds(), "sink/smallestk")
		})
	}
}
