package assign

import (
	"math"
	"math/rand/v2"
	"testing"
)

// networkxMatchingCost returns the exact minimum-weight perfect matching cost
// of the symmetric n×n matrix c computed by networkx's blossom algorithm
// (min_weight_matching on the complete graph), or skips the test when
// networkx is not available.
func networkxMatchingCost(t *testing.T, c []float64, n int) float64 {
	return runPython(t, c, n, n, `import networkx as nx
n = c.shape[0]
g = nx.Graph()
g.add_weighted_edges_from((i, j, float(c[i, j])) for i in range(n) for j in range(i + 1, n))
m = nx.min_weight_matching(g)
assert len(m) == n // 2
print(repr(float(sum(c[i, j] for i, j in m))))`)
}

// TestMatchingAgainstNetworkx checks, against networkx's exact blossom
// solver, that Bound never exceeds the optimum and that Cost equals it.
func TestMatchingAgainstNetworkx(t *testing.T) {
	if testing.Short() {
		t.Skip("networkx comparison is slow")
	}
	rng := rand.New(rand.NewPCG(31, 32))
	var centres [][2]float64
	for k := 0; k < 30; k++ {
		centres = append(centres, [2]float64{float64(k%6) * 50, float64(k/6) * 50})
	}
	tri, ntri := triangles(rng, centres)
	cases := []struct {
		name string
		n    int
		c    []float64
	}{
		{"stage2Rank2_200", 200, stage2Cost(200, 41)},
		{"stage2Rank2_300", 300, stage2Cost(300, 42)},
		{"stage2Clustered_260", 260, stage2Clustered(260, 43)}, // the symmetric warm start
		{"uniform150", 150, symmetrize(fill(150*150, rng.Float64), 150)},
		{"thirtyTriangles", ntri, tri},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pm, err := MinWeightPerfectMatching(tc.c, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			checkPerfect(t, tc.c, tc.n, pm)
			want := networkxMatchingCost(t, tc.c, tc.n)
			tol := 1e-9 * (1 + math.Abs(want))
			if pm.Bound > want+tol || pm.Cost < want-tol {
				t.Fatalf("bound %v, optimum %v, cost %v", pm.Bound, want, pm.Cost)
			}
			if pm.Cost > want+tol {
				t.Fatalf("cost %v above the optimum %v", pm.Cost, want)
			}
			t.Logf("odd vertices %d: cost/optimum − 1 = %.3g, optimum/bound − 1 = %.3g", pm.OddVertices, pm.Cost/want-1, want/pm.Bound-1)
		})
	}
}
