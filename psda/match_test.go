package psda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/psda-dev/psda/psda/internal/testref"
)

// bestStage1 enumerates every assignment allowed by the paper's eqs. 4–5
// (each row of the larger side once; each example of the smaller side used
// floor or ceil of the ratio times) and returns the least total of c (ns×nt).
func bestStage1(c []float64, ns, nt int) float64 {
	big, small := max(ns, nt), min(ns, nt)
	lo, hi := big/small, (big+small-1)/small
	best := math.Inf(1)
	choice := make([]int, big)
	count := make([]int, small)
	var rec func(r int, sum float64)
	rec = func(r int, sum float64) {
		if r == big {
			for _, n := range count {
				if n < lo || n > hi {
					return
				}
			}
			best = min(best, sum)
			return
		}
		for j := 0; j < small; j++ {
			if count[j] == hi {
				continue
			}
			choice[r], count[j] = j, count[j]+1
			i, t := r, j
			if nt > ns {
				i, t = j, r
			}
			rec(r+1, sum+c[i*nt+t])
			count[j]--
		}
	}
	rec(0, 0)
	return best
}

// bestMatching enumerates every perfect matching of the m nodes of the
// symmetric cost c and returns the least total.
func bestMatching(c []float64, m int) float64 {
	used := make([]bool, m)
	var rec func() float64
	rec = func() float64 {
		r := 0
		for r < m && used[r] {
			r++
		}
		if r == m {
			return 0
		}
		used[r] = true
		best := math.Inf(1)
		for q := r + 1; q < m; q++ {
			if !used[q] {
				used[q] = true
				best = min(best, c[r*m+q]+rec())
				used[q] = false
			}
		}
		used[r] = false
		return best
	}
	return rec()
}

// TestMatchExhaustive checks Match end to end against the paper's costs
// evaluated directly (the references of internal/testref) and exhaustive
// enumeration of Stage 1 assignments and Stage 2 perfect matchings.
func TestMatchExhaustive(t *testing.T) {
	shapes := [][2]int{{4, 4}, {7, 7}, {5, 3}, {3, 5}, {7, 2}, {2, 7}, {6, 4}, {7, 3}}
	cfgs := []Config{
		{BatchSize: 2, Discrepancy: MMD, Kernel: Linear},
		{BatchSize: 2, Discrepancy: MMD, Kernel: RBF, Gammas: []float64{0.1, 1, 10}},
		{BatchSize: 4, Discrepancy: MMD, Kernel: RBF},
		{BatchSize: 2, Discrepancy: CORAL},
		{BatchSize: 4, Discrepancy: CORAL},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range shapes {
		for _, cfg := range cfgs {
			if cfg.BatchSize > max(sh[0], sh[1]) {
				continue
			}
			for _, f32 := range []bool{false, true} {
				cfg.Stages = 2
				name := fmt.Sprintf("%dx%d/%s-%s-k%d/f32=%v", sh[0], sh[1], cfg.Discrepancy, cfg.Kernel, cfg.BatchSize, f32)
				t.Run(name, func(t *testing.T) {
					src, tgt := testref.RandMatrix(rng, sh[0], 2, f32), testref.RandMatrix(rng, sh[1], 2, f32)
					m, err := Match(src, tgt, cfg)
					if err != nil {
						t.Fatal(err)
					}
					s, tg := testref.RowsF64(src), testref.RowsF64(tgt)
					c1, c2, n2 := testref.References(refCost(cfg), s, tg, m.Pairs)
					tol := 1e-9 * (1 + testref.TermScale(refCost(cfg), src, tgt))

					got := 0.0
					for _, p := range m.Pairs {
						got += c1[p.S*tgt.N+p.T]
					}
					if want := bestStage1(c1, src.N, tgt.N); math.Abs(got-want) > tol || math.Abs(m.Stage1Cost-want) > tol {
						t.Fatalf("%v: stage 1 pairs cost %.12g (reported %.12g), optimum %.12g", sh, got, m.Stage1Cost, want)
					}
					if len(m.Pairs) != max(src.N, tgt.N) {
						t.Fatalf("%d pairs, want %d", len(m.Pairs), max(src.N, tgt.N))
					}

					got = 0
					for _, q := range m.Quads {
						got += c2[q[0]*n2+q[1]]
					}
					for _, r := range m.Singles {
						got += c2[r*n2+n2-1] // the dummy node is the last one
					}
					if len(m.Singles) != n2-len(m.Pairs) {
						t.Fatalf("%d singles for %d pairs", len(m.Singles), len(m.Pairs))
					}
					want := bestMatching(c2, n2)
					if math.Abs(got-want) > tol || math.Abs(m.Stage2Cost-want) > tol {
						t.Fatalf("%v: stage 2 quads cost %.12g (reported %.12g), optimum %.12g", sh, got, m.Stage2Cost, want)
					}
					if m.Stage2Bound > want+tol {
						t.Fatalf("stage 2 bound %.12g above the optimum %.12g", m.Stage2Bound, want)
					}
				})
			}
		}
	}
}

// TestMatchStage1Only checks that Stages = 1 leaves every pair single.
func TestMatchStage1Only(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m, err := Match(testref.RandMatrix(rng, 6, 3, false), testref.RandMatrix(rng, 4, 3, false), Config{BatchSize: 3, Stages: 1, Discrepancy: MMD, Kernel: Linear})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Quads) != 0 || len(m.Singles) != len(m.Pairs) {
		t.Fatalf("stages=1 gave %d quads and %d singles for %d pairs", len(m.Quads), len(m.Singles), len(m.Pairs))
	}
}

// refCost names cfg's discrepancy for the references of internal/testref.
func refCost(cfg Config) testref.Cost {
	c := testref.Cost{K: cfg.BatchSize, CORAL: cfg.Discrepancy == CORAL}
	if !c.CORAL && cfg.Kernel == RBF {
		c.Gammas = cfg.gammas()
	}
	return c
}

// stage1Costs returns the dense matrix C^st for cfg (cost.Stage1.Dense).
func stage1Costs(src, tgt Matrix, cfg Config) []float64 {
	return newStage1Model(src, tgt, cfg, false).Dense()
}

// stage2Costs returns the dense matrix C^MM over pairs for cfg and its size
// (cost.Stage2.Dense), as the dense path computes it.
func stage2Costs(src, tgt Matrix, cfg Config, pairs []Pair) ([]float64, int) {
	c, m, _ := stage2Dense(src, tgt, cfg, pairs, nil, nil)
	return c, m
}
