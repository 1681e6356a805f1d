package diverse

import (
	"math/rand/v2"
	"testing"
)

// brute returns min or max of (1) over all partitions reachable by
// permuting groups within classes (every assignment keeping class-wise group
// multisets), by enumeration of all permutations of the slot groups.
func brute(p *Problem, sign float64) float64 {
	g := append([]int64(nil), p.Group...)
	best := sign * p.Objective()
	var rec func(int)
	rec = func(k int) {
		if k == len(g) {
			q := *p
			q.Group = g
			if v := sign * q.Objective(); v < best {
				best = v
			}
			return
		}
		for j := k; j < len(g); j++ {
			if p.Class[j] != p.Class[k] {
				continue
			}
			g[k], g[j] = g[j], g[k]
			rec(k + 1)
			g[k], g[j] = g[j], g[k]
		}
	}
	rec(0)
	return sign * best
}

// randomProblem returns m standard normal points in R^d, unit weights,
// point i in group i mod g and class i mod classes, unit ω and zero centres.
func randomProblem(rng *rand.Rand, m, d, g, classes int) *Problem {
	p := &Problem{M: m, D: d, X: make([]float64, m*d), W: make([]float64, m), Group: make([]int64, m),
		Class: make([]int64, m), Centre: make([]float64, g*d), Omega: make([]float64, g)}
	for i := range p.X {
		p.X[i] = rng.NormFloat64()
	}
	for i := 0; i < m; i++ {
		p.W[i], p.Group[i], p.Class[i] = 1, int64(i%g), int64(i%classes)
	}
	for k := range p.Omega {
		p.Omega[k] = 1
	}
	return p
}

func TestExchange(t *testing.T) {
	for _, tc := range []struct {
		name    string
		m, d, g int
		classes int
		sign    float64
	}{
		{"anticlustering", 8, 2, 4, 1, 1},
		{"strata", 8, 3, 2, 1, -1},
		{"classes", 8, 2, 4, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := randomProblem(rand.New(rand.NewPCG(1, 2)), tc.m, tc.d, tc.g, tc.classes)
			opt := brute(p, tc.sign)
			h, err := Exchange(p, Options{Sign: tc.sign, Passes: 50, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			for k := 1; k < len(h); k++ {
				if tc.sign*(h[k]-h[k-1]) > 1e-12 {
					t.Errorf("pass %d: F went from %g to %g", k, h[k-1], h[k])
				}
			}
			if got := p.Objective(); got != h[len(h)-1] {
				t.Errorf("history ends at %g, explicit evaluation %g", h[len(h)-1], got)
			}
			// A local optimum of swaps: no better than the enumeration's optimum,
			// and for these tiny cases within a modest factor of it.
			if tc.sign*(h[len(h)-1]-opt) < -1e-9 {
				t.Errorf("F = %g beats the enumerated optimum %g", h[len(h)-1], opt)
			}
			for i := range p.Group {
				for j := range p.Group {
					if p.Class[i] == p.Class[j] && p.Group[i] != p.Group[j] {
						q := *p
						q.Group = append([]int64(nil), p.Group...)
						q.Group[i], q.Group[j] = q.Group[j], q.Group[i]
						if tc.sign*(q.Objective()-p.Objective()) < -1e-9 {
							t.Fatalf("swap (%d, %d) still improves F: not a local optimum", i, j)
						}
					}
				}
			}
		})
	}
}

func TestExchangeCancel(t *testing.T) {
	p := &Problem{M: 4, D: 1, X: []float64{1, 2, 3, 4}, W: []float64{1, 1, 1, 1}, Group: []int64{0, 0, 1, 1},
		Class: make([]int64, 4), Centre: make([]float64, 2), Omega: []float64{1, 1}}
	if _, err := Exchange(p, Options{Sign: 1, Passes: 5, Stop: func() bool { return true }}); err != ErrCancelled {
		t.Fatalf("err = %v, want ErrCancelled", err)
	}
}

func BenchmarkExchange(b *testing.B) {
	for _, m := range []int{1000, 4000} {
		b.Run(string(rune('0'+m/1000))+"k", func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			for it := 0; it < b.N; it++ {
				p := randomProblem(rng, m, 2, m/16, 1)
				if _, err := Exchange(p, Options{Sign: 1, Passes: 3, Seed: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
