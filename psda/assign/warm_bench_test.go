package assign

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkWarmAttempt times warmStart alone at n = 4000, in passes over c
// (one summing pass timed in the same iteration), and the auction that
// follows when it gives up: the 2-D Stage 2 cost (stage2Cost, diagonal
// forbidden), squared distances of 2-D Gaussian points (stage1Cost) and
// integers in [0, 4). "used" is the fraction of iterations where the warm
// start was kept. Run: go test -run XXX -bench WarmAttempt -benchtime 3x
// ./psda/assign
func BenchmarkWarmAttempt(b *testing.B) {
	const n = 4000
	ints := kinds[1].gen(rand.New(rand.NewPCG(7, 7)), n, n)
	cases := []struct {
		name string
		c    []float64
	}{{"stage2-d2", forbidDiagonal(stage2Cost(n, 1), n)}, {"euclid-d2", stage1Cost(n, n, 2, 3)}, {"int0to3", ints}}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var pass, warm, auction time.Duration
			used := 0
			for it := 0; it < b.N; it++ {
				t0 := time.Now()
				sum := 0.0
				for _, x := range tc.c {
					if x < math.Inf(1) {
						sum += x
					}
				}
				if math.IsNaN(sum) {
					b.Fatal("NaN cost")
				}
				pass += time.Since(t0)
				s := newLSAP(tc.c, n, n)
				t1 := time.Now()
				ok, err := s.warmStart(nil)
				warm += time.Since(t1)
				if err != nil {
					b.Fatal(err)
				}
				if ok {
					used++
					continue
				}
				t2 := time.Now()
				if err := s.warmAuction(nil); err != nil {
					b.Fatal(err)
				}
				auction += time.Since(t2)
			}
			b.ReportMetric(warm.Seconds()/float64(b.N), "warm-s/op")
			b.ReportMetric(warm.Seconds()/pass.Seconds(), "passes")
			b.ReportMetric(auction.Seconds()/float64(b.N), "auction-s/op")
			b.ReportMetric(float64(used)/float64(b.N), "used")
		})
	}
}
