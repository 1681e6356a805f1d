package diverse

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// sseRef evaluates (3) independently of Clustering's own helpers.
func sseRef(x, w []float64, d int, g []int64, k int) float64 {
	f := 0.0
	for h := 0; h < k; h++ {
		c, wt := make([]float64, d), 0.0
		for i, gi := range g {
			if int(gi) == h {
				wt += w[i]
				for j := 0; j < d; j++ {
					c[j] += w[i] * x[i*d+j]
				}
			}
		}
		for i, gi := range g {
			if int(gi) == h {
				for j := 0; j < d; j++ {
					t := x[i*d+j] - c[j]/wt
					f += w[i] * t * t
				}
			}
		}
	}
	return f
}

func randomClustering(seed uint64, m, d, k, minSize int) *Clustering {
	rng := rand.New(rand.NewPCG(seed, 7))
	c := &Clustering{X: make([]float64, m*d), M: m, D: d, W: make([]float64, m), Group: make([]int64, m), K: k,
		MinSize: minSize}
	for i := range c.X {
		c.X[i] = rng.NormFloat64()
	}
	for i := 0; i < m; i++ {
		c.W[i] = 0.2 + 2*rng.Float64()
		c.Group[i] = int64(i % k)
	}
	return c
}

func TestWeightedKMeansDescendsToAConstrainedLocalOptimum(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		c := randomClustering(seed, 10, 2, 3, 3)
		start := sseRef(c.X, c.W, c.D, c.Group, c.K)
		var passes []int
		h, err := WeightedKMeans(c, Options{Passes: 50, Seed: seed, OnPass: func(p int, f float64) { passes = append(passes, p) }})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(h[0]-start) > 1e-9*start {
			t.Fatalf("seed %d: history starts at %g, explicit %g", seed, h[0], start)
		}
		for i := 1; i < len(h); i++ {
			if h[i] > h[i-1]+1e-12 {
				t.Fatalf("seed %d: SSE rose in pass %d: %v", seed, i, h)
			}
		}
		if len(passes) != len(h)-1 || passes[len(passes)-1] != len(h)-1 {
			t.Fatalf("seed %d: OnPass saw %v for history %v", seed, passes, h)
		}
		final := sseRef(c.X, c.W, c.D, c.Group, c.K)
		if math.Abs(h[len(h)-1]-final) > 1e-9*final {
			t.Fatalf("seed %d: last SSE %g, explicit %g", seed, h[len(h)-1], final)
		}
		count := make([]int, c.K)
		for _, g := range c.Group {
			count[g]++
		}
		for hh, n := range count {
			if n < c.MinSize {
				t.Fatalf("seed %d: cluster %d has %d rows < MinSize %d", seed, hh, n, c.MinSize)
			}
		}
		// Local optimality by enumeration: no allowed single move lowers (3).
		g := append([]int64(nil), c.Group...)
		for i := range g {
			a := g[i]
			if count[a] <= c.MinSize {
				continue
			}
			for b := int64(0); b < int64(c.K); b++ {
				if b == a {
					continue
				}
				g[i] = b
				if v := sseRef(c.X, c.W, c.D, g, c.K); v < final-1e-9*final {
					t.Fatalf("seed %d: moving row %d to %d gives %g < %g", seed, i, b, v, final)
				}
				g[i] = a
			}
		}
	}
}

// With MinSize = M/K the clusters cannot change size: no move is allowed.
func TestWeightedKMeansMinSizeBinds(t *testing.T) {
	c := randomClustering(3, 9, 2, 3, 3)
	before := append([]int64(nil), c.Group...)
	h, err := WeightedKMeans(c, Options{Passes: 5, Seed: 1})
	if err != nil || len(h) != 2 || h[1] != h[0] {
		t.Fatalf("history %v, err %v: want one pass without moves", h, err)
	}
	for i := range before {
		if before[i] != c.Group[i] {
			t.Fatal("a row moved although every cluster is at MinSize")
		}
	}
}

func TestWeightedKMeansCancelAndErrors(t *testing.T) {
	c := randomClustering(5, 200, 2, 4, 10)
	_, err := WeightedKMeans(c, Options{Passes: 5, Stop: func() bool { return true }})
	if !errors.Is(err, ErrCancelled) {
		t.Fatalf("err = %v, want ErrCancelled", err)
	}
	polls := 0
	_, err = WeightedKMeans(randomClustering(5, 200, 2, 4, 10), Options{Passes: 50, Stop: func() bool { polls++; return polls > 3 }})
	if !errors.Is(err, ErrCancelled) || polls != 4 {
		t.Fatalf("err = %v after %d polls: want ErrCancelled at the 4th poll (every 64 visits)", err, polls)
	}
	bad := randomClustering(5, 10, 2, 3, 4)
	if _, err := WeightedKMeans(bad, Options{Passes: 1}); err == nil {
		t.Fatal("MinSize·K > M accepted")
	}
	bad = randomClustering(5, 10, 2, 3, 3)
	bad.Group[0] = 1 // cluster 0 now has 3 rows; move another out
	bad.Group[3] = 1
	if _, err := WeightedKMeans(bad, Options{Passes: 1}); err == nil {
		t.Fatal("a start below MinSize accepted")
	}
	bad = randomClustering(5, 10, 2, 3, 1)
	bad.W[2] = 0
	if _, err := WeightedKMeans(bad, Options{Passes: 1}); err == nil {
		t.Fatal("a zero weight accepted")
	}
}
