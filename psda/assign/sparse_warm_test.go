package assign

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSparseWarm solves a graph, adds edges (the most violated ones under the
// first solution's potentials, as PSDA's pricing loop does, or random ones),
// re-solves from the first solution, and compares with a cold solve of the
// larger graph.
func TestSparseWarm(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	cases := []struct {
		name      string
		g         *Graph
		extra     func(g *Graph, s *Solution) [][]edge
		wantSame  bool // warm restart on unchanged graph
		sharedRow bool
	}{
		{"violators/knn", knnGraph(1500, 8, 6, 43), func(g *Graph, s *Solution) [][]edge {
			return violators(g, knnGraph(1500, 8, 20, 43), s, 500)
		}, false, false},
		{"random/int", randomSparse(rng, 1000, 5, func() float64 { return float64(rng.IntN(5)) }, false), func(g *Graph, s *Solution) [][]edge {
			extra := make([][]edge, g.N)
			for range 300 {
				i := rng.IntN(g.N)
				extra[i] = append(extra[i], edge{rng.IntN(g.N), float64(rng.IntN(5)) - 1})
			}
			return extra
		}, false, false},
		{"unchanged", randomSparse(rng, 800, 6, rng.Float64, true), func(g *Graph, s *Solution) [][]edge {
			return make([][]edge, g.N)
		}, true, false},
		{"cheaperRepeat", randomSparse(rng, 800, 6, rng.Float64, false), func(g *Graph, s *Solution) [][]edge {
			// the assigned pairs of some rows get a cheaper second edge
			extra := make([][]edge, g.N)
			for i := 0; i < g.N; i += 7 {
				extra[i] = []edge{{s.Col4Row[i], -0.5}}
			}
			return extra
		}, false, false},
	}
	// Warm starts that do not come from a solve must still give the optimum.
	g := randomSparse(rng, 700, 6, rng.Float64, false)
	junk := []struct {
		name string
		warm *Solution
	}{
		{"sameColumn", &Solution{Col4Row: make([]int, g.N), V: make([]float64, g.N)}},
		{"randomV", &Solution{Col4Row: rng.Perm(g.N), V: fill(g.N, func() float64 { return 10 * rng.NormFloat64() })}},
		{"allFree", &Solution{Col4Row: slices.Repeat([]int{-1}, g.N), V: fill(g.N, rng.Float64)}},
	}
	cold, err := SolveSparse(g, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range junk {
		t.Run("junk/"+tc.name, func(t *testing.T) {
			s, err := SolveSparse(g, tc.warm, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkSparse(t, g, s)
			sameCost(t, s.Cost, cold.Cost, "cold solve")
		})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			first, err := SolveSparse(tc.g, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			keep := &Solution{Col4Row: slices.Clone(first.Col4Row), U: slices.Clone(first.U), V: slices.Clone(first.V), Cost: first.Cost}
			big := addEdges(tc.g, tc.extra(tc.g, first))
			warm, err := SolveSparse(big, first, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(first.Col4Row, keep.Col4Row) || !slices.Equal(first.V, keep.V) {
				t.Fatal("SolveSparse modified the warm start")
			}
			checkSparse(t, big, warm)
			cold, err := SolveSparse(big, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			sameCost(t, warm.Cost, cold.Cost, "cold solve")
			if tc.wantSame && !slices.Equal(warm.Col4Row, first.Col4Row) {
				t.Error("warm restart on the unchanged graph moved rows")
			}
			if warm.Cost > first.Cost+1e-9*(1+math.Abs(first.Cost)) {
				t.Errorf("adding edges raised the optimum from %v to %v", first.Cost, warm.Cost)
			}
			// ResolveSparse: paths alone, the same optimum; on the unchanged
			// graph no potential moves.
			re, err := ResolveSparse(big, first, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkSparse(t, big, re)
			sameCost(t, re.Cost, cold.Cost, "cold solve")
			if tc.wantSame && !slices.Equal(re.V, first.V) {
				t.Error("ResolveSparse on the unchanged graph moved column potentials")
			}
		})
	}
	if _, err := ResolveSparse(g, nil, nil); err == nil {
		t.Error("ResolveSparse without a warm start: no error")
	}
}

// pricedEdge is a candidate edge of row i with its reduced cost r.
type pricedEdge struct {
	i int
	e edge
	r float64
}

// priced returns the edges of the candidate graph c that g lacks, with
// their reduced costs under s, most violated (most negative) first, as
// PSDA's pricing pass finds them.
func priced(g, c *Graph, s *Solution) []pricedEdge {
	var all []pricedEdge
	for i := 0; i < c.N; i++ {
		have := map[int]bool{}
		for e := g.Lo[i]; e < g.Hi[i]; e++ {
			have[int(g.Col[e])] = true
		}
		for e := c.Lo[i]; e < c.Hi[i]; e++ {
			if j := int(c.Col[e]); !have[j] {
				all = append(all, pricedEdge{i, edge{j, c.Cost[e]}, c.Cost[e] - s.U[i] - s.V[j]})
			}
		}
	}
	slices.SortFunc(all, func(a, b pricedEdge) int { return cmpFloat(a.r, b.r) })
	return all
}

// perRow returns edges as per-row lists for addEdges.
func perRow(n int, edges []pricedEdge) [][]edge {
	extra := make([][]edge, n)
	for _, x := range edges {
		extra[x.i] = append(extra[x.i], x.e)
	}
	return extra
}

// violators returns up to max edges of the candidate graph c that g lacks
// and whose reduced cost under s is negative, most negative first.
func violators(g, c *Graph, s *Solution, max int) [][]edge {
	all := priced(g, c, s)
	k := 0
	for k < len(all) && k < max && all[k].r < -1e-12 {
		k++
	}
	return perRow(c.N, all[:k])
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
