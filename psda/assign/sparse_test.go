package assign

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// edge is one entry of a test graph's adjacency lists.
type edge struct {
	j int
	c float64
}

// graphOf packs adjacency lists into a Graph, one edge range per row.
func graphOf(adj [][]edge) *Graph {
	g := &Graph{N: len(adj), Lo: make([]int, len(adj)), Hi: make([]int, len(adj))}
	for i, row := range adj {
		g.Lo[i] = len(g.Col)
		for _, e := range row {
			g.Col = append(g.Col, int32(e.j))
			g.Cost = append(g.Cost, e.c)
		}
		g.Hi[i] = len(g.Col)
	}
	return g
}

// completeGraph returns the complete graph of the row-major n×n matrix c.
func completeGraph(c []float64, n int) *Graph {
	adj := make([][]edge, n)
	for i := range adj {
		for j := 0; j < n; j++ {
			adj[i] = append(adj[i], edge{j, c[i*n+j]})
		}
	}
	return graphOf(adj)
}

// denseOf returns g as a row-major matrix with +Inf for missing entries and
// the cheapest cost of repeated ones.
func denseOf(g *Graph) []float64 {
	n := g.N
	c := fill(n*n, func() float64 { return inf })
	for i := 0; i < n; i++ {
		for e := g.Lo[i]; e < g.Hi[i]; e++ {
			k := i*n + int(g.Col[e])
			c[k] = math.Min(c[k], g.Cost[e])
		}
	}
	return c
}

// addEdges returns a copy of g with extra[i] appended to row i (rows keep
// their own ranges; shared ranges are copied).
func addEdges(g *Graph, extra [][]edge) *Graph {
	adj := make([][]edge, g.N)
	for i := range adj {
		for e := g.Lo[i]; e < g.Hi[i]; e++ {
			adj[i] = append(adj[i], edge{int(g.Col[e]), g.Cost[e]})
		}
		adj[i] = append(adj[i], extra[i]...)
	}
	return graphOf(adj)
}

// randomSparse returns an n×n graph with deg random edges per row plus a
// hidden random perfect matching, costs drawn by cost; with dup, every fifth
// row repeats one of its edges at a random cost.
func randomSparse(rng *rand.Rand, n, deg int, cost func() float64, dup bool) *Graph {
	perm := rng.Perm(n)
	adj := make([][]edge, n)
	for i := range adj {
		adj[i] = append(adj[i], edge{perm[i], cost()})
		for range deg {
			adj[i] = append(adj[i], edge{rng.IntN(n), cost()})
		}
		if dup && i%5 == 0 {
			adj[i] = append(adj[i], edge{adj[i][rng.IntN(len(adj[i]))].j, cost()})
		}
		rng.Shuffle(len(adj[i]), func(a, b int) { adj[i][a], adj[i][b] = adj[i][b], adj[i][a] })
	}
	return graphOf(adj)
}

// checkSparse verifies s on g independently of the solver: a permutation
// using only edges of g, U+V <= c+tol on every edge, U+V = c within tol on
// the cheapest edge of each assigned pair, and Cost the sum of those.
func checkSparse(t *testing.T, g *Graph, s *Solution) {
	t.Helper()
	n := g.N
	if len(s.Col4Row) != n || len(s.U) != n || len(s.V) != n {
		t.Fatalf("solution sizes %d, %d, %d for N = %d", len(s.Col4Row), len(s.U), len(s.V), n)
	}
	scale := 0.0
	for _, x := range g.Cost {
		scale = math.Max(scale, math.Abs(x))
	}
	for _, x := range s.V {
		scale = math.Max(scale, math.Abs(x))
	}
	tol := 1e-9 * (1 + scale)
	used := make([]bool, n)
	sum := 0.0
	for i := 0; i < n; i++ {
		j := s.Col4Row[i]
		if j < 0 || j >= n || used[j] {
			t.Fatalf("row %d assigned to column %d: not a permutation", i, j)
		}
		used[j] = true
		cij := inf
		for e := g.Lo[i]; e < g.Hi[i]; e++ {
			k, c := int(g.Col[e]), g.Cost[e]
			if s.U[i]+s.V[k] > c+tol {
				t.Fatalf("dual infeasible at edge (%d, %d): U+V = %v > c = %v", i, k, s.U[i]+s.V[k], c)
			}
			if k == j {
				cij = math.Min(cij, c)
			}
		}
		if cij == inf {
			t.Fatalf("row %d assigned to column %d, which is not an edge", i, j)
		}
		if d := s.U[i] + s.V[j] - cij; math.Abs(d) > tol {
			t.Fatalf("assigned edge (%d, %d) not tight: U+V-c = %v", i, j, d)
		}
		sum += cij
	}
	if math.Abs(sum-s.Cost) > tol*float64(n) {
		t.Fatalf("Cost = %v, assigned edges sum to %v", s.Cost, sum)
	}
}

// sameCost fails unless got equals want to a relative 1e-9.
func sameCost(t *testing.T, got, want float64, ref string) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
		t.Fatalf("cost %v, %s %v", got, ref, want)
	}
}

// scipySparseCost returns the optimum of SciPy's LAPJVsp
// (scipy.sparse.csgraph.min_weight_full_bipartite_matching) on g with
// repeated edges reduced to the cheapest, or skips the test when SciPy is
// missing. SciPy drops zero weights, so they are shifted to be positive and
// the cost is summed on the unshifted matrix.
func scipySparseCost(t *testing.T, g *Graph) float64 {
	t.Helper()
	n := g.N
	ptr := []float64{0}
	var ind, w []float64
	for i := 0; i < n; i++ {
		best := map[int32]float64{}
		for e := g.Lo[i]; e < g.Hi[i]; e++ {
			if c, ok := best[g.Col[e]]; !ok || g.Cost[e] < c {
				best[g.Col[e]] = g.Cost[e]
			}
		}
		cols := make([]int32, 0, len(best))
		for j := range best {
			cols = append(cols, j)
		}
		slices.Sort(cols)
		for _, j := range cols {
			ind, w = append(ind, float64(j)), append(w, best[j])
		}
		ptr = append(ptr, float64(len(ind)))
	}
	v := append(append(append([]float64{float64(n), float64(len(ind))}, ptr...), ind...), w...)
	return runPython(t, v, 1, len(v), `from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import min_weight_full_bipartite_matching
v = c[0]
n, m = int(v[0]), int(v[1])
ptr = v[2:3+n].astype(np.int64)
ind = v[3+n:3+n+m].astype(np.int64)
w = v[3+n+m:]
a = csr_matrix((w - w.min() + 1.0, ind, ptr), shape=(n, n))
r, k = min_weight_full_bipartite_matching(a)
b = {(i, int(ind[e])): w[e] for i in range(n) for e in range(ptr[i], ptr[i+1])}
print(repr(float(sum(b[(int(i), int(j))] for i, j in zip(r, k)))))`)
}

// TestSparseExhaustive compares SolveSparse with enumeration of all
// permutations on complete graphs of every matrix kind and on sparse graphs,
// some without a perfect matching, some with rows sharing one edge range.
func TestSparseExhaustive(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	// sparseOf keeps each entry of c with probability keep.
	sparseOf := func(c []float64, n int, keep float64) *Graph {
		adj := make([][]edge, n)
		for i := range adj {
			for j := 0; j < n; j++ {
				if rng.Float64() < keep {
					adj[i] = append(adj[i], edge{j, c[i*n+j]})
				}
			}
		}
		return graphOf(adj)
	}
	// sharedOf makes the last rows of a sparse graph point at the range of
	// row n−1, as the dummy rows of an imbalanced problem do.
	sharedOf := func(c []float64, n int, keep float64) *Graph {
		g := sparseOf(c, n, keep)
		for i := n - 1 - rng.IntN(min(n, 3)); i < n; i++ {
			g.Lo[i], g.Hi[i] = g.Lo[n-1], g.Hi[n-1]
		}
		return g
	}
	graphs := []struct {
		name string
		make func(c []float64, n int) *Graph
	}{
		{"complete", completeGraph},
		{"half", func(c []float64, n int) *Graph { return sparseOf(c, n, 0.5) }},
		{"shared", func(c []float64, n int) *Graph { return sharedOf(c, n, 0.7) }},
	}
	for _, gk := range graphs {
		for _, k := range kinds {
			for n := 1; n <= 7; n++ {
				t.Run(fmt.Sprintf("%s/%s/%d", gk.name, k.name, n), func(t *testing.T) {
					for rep := 0; rep < 30; rep++ {
						g := gk.make(k.gen(rng, n, n), n)
						want := bruteAssign(denseOf(g), n, n, 0, 1)
						s, err := SolveSparse(g, nil, nil)
						if want == inf {
							if !errors.Is(err, ErrNoPerfect) {
								t.Fatalf("no perfect matching exists, got (%v, %v)", s, err)
							}
							continue
						}
						if err != nil {
							t.Fatal(err)
						}
						sameCost(t, s.Cost, want, "brute force")
						checkSparse(t, g, s)
					}
				})
			}
		}
	}
}

// TestSparseAgainstDense compares complete graphs of N = 200 with
// Rectangular on the same matrix.
func TestSparseAgainstDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	const n = 200
	cases := []struct {
		name string
		c    []float64
	}{
		{"uniform", kinds[0].gen(rng, n, n)},
		{"int0to3", kinds[1].gen(rng, n, n)},
		{"constant", kinds[2].gen(rng, n, n)},
		{"signedWide", kinds[3].gen(rng, n, n)},
		{"sqdist8", stage1Cost(n, n, 8, 35)},
		{"stage2Rank2", stage2Cost(n, 36)},
		{"offset1e6", fill(n*n, func() float64 { return 1e6 + rng.Float64() })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, err := Rectangular(tc.c, n, n)
			if err != nil {
				t.Fatal(err)
			}
			g := completeGraph(tc.c, n)
			s, err := SolveSparse(g, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			sameCost(t, s.Cost, want.Cost, "Rectangular")
			checkSparse(t, g, s)
		})
	}
}

// TestSparseAgainstSciPy compares random sparse graphs with SciPy's LAPJVsp.
func TestSparseAgainstSciPy(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 38))
	cases := []struct {
		name string
		g    *Graph
	}{
		{"uniform300", randomSparse(rng, 300, 10, rng.Float64, false)},
		{"int0to5_1000", randomSparse(rng, 1000, 10, func() float64 { return float64(rng.IntN(6)) }, false)},
		{"int0to30_1500", randomSparse(rng, 1500, 10, func() float64 { return float64(rng.IntN(31)) }, false)}, // auction path with ties
		{"signed2000dup", randomSparse(rng, 2000, 10, func() float64 { return rng.NormFloat64() * 100 }, true)},
		{"deg3_1500", randomSparse(rng, 1500, 3, rng.Float64, false)},
		{"knnRBF1000", knnGraph(1000, 16, 10, 39)},
		{"symmetricKNN800", symmetricKNN(800, 8, 10, 40)},
		{"sharedDummies1200", withDummies(rng, 1200, 200)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := SolveSparse(tc.g, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkSparse(t, tc.g, s)
			sameCost(t, s.Cost, scipySparseCost(t, tc.g), "SciPy")
		})
	}
}

// withDummies returns an n×n graph whose last m rows share one edge range,
// as the dummy rows of an imbalanced problem do: the n−m real rows have ten
// random edges and a hidden matching onto n−m columns; the dummies reach the
// other m columns and 3m/2 random ones, at random costs.
func withDummies(rng *rand.Rand, n, m int) *Graph {
	perm := rng.Perm(n)
	adj := make([][]edge, n-m+1)
	for i := range n - m {
		adj[i] = append(adj[i], edge{perm[i], rng.Float64()})
		for range 10 {
			adj[i] = append(adj[i], edge{rng.IntN(n), rng.Float64()})
		}
	}
	for _, j := range perm[n-m:] {
		adj[n-m] = append(adj[n-m], edge{j, rng.Float64()})
	}
	for range 3 * m / 2 {
		adj[n-m] = append(adj[n-m], edge{rng.IntN(n), rng.Float64()})
	}
	g := graphOf(adj)
	g.N = n
	for range m - 1 {
		g.Lo, g.Hi = append(g.Lo, g.Lo[n-m]), append(g.Hi, g.Hi[n-m])
	}
	return g
}

// TestSparseNoPerfect checks that graphs without a perfect matching give
// ErrNoPerfect with the size of a maximum matching.
func TestSparseNoPerfect(t *testing.T) {
	rng := rand.New(rand.NewPCG(44, 45))
	// hall returns a random graph in which rows [0, k) reach only columns
	// [0, w), w < k, so that a maximum matching covers n−k+w rows.
	hall := func(n, k, w int) *Graph {
		adj := make([][]edge, n)
		for i := range adj {
			width := n
			if i < k {
				width = w
			}
			for range 5 {
				adj[i] = append(adj[i], edge{rng.IntN(width), rng.Float64()})
			}
			adj[i] = append(adj[i], edge{i % width, rng.Float64()})
			if i >= k { // every column of [w, n) gets an edge
				adj[i] = append(adj[i], edge{w + (i-k)%(n-w), rng.Float64()})
			}
		}
		return graphOf(adj)
	}
	cases := []struct {
		name string
		g    *Graph
		want string
	}{
		{"emptyRow", graphOf([][]edge{{{0, 1}, {1, 2}}, {}}), "row 1 has no edges"},
		{"emptyColumn", graphOf([][]edge{{{0, 1}}, {{0, 2}}}), "column 1 has no edges"},
		{"twoRowsOneColumn", graphOf([][]edge{{{0, 1}}, {{0, 2}}, {{1, 1}, {2, 1}}}), "covers 2 of 3 rows"},
		{"hall1000", hall(1000, 50, 49), "covers 999 of 1000 rows"},
		{"hallMany", hall(20000, 4000, 1000), "covers 17000 of 20000 rows"},
		{"hallTies", func() *Graph {
			g := hall(500, 20, 19)
			for e := range g.Cost {
				g.Cost[e] = 1
			}
			return g
		}(), "covers 499 of 500 rows"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := SolveSparse(tc.g, nil, nil)
			if !errors.Is(err, ErrNoPerfect) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got (%v, %v), want ErrNoPerfect containing %q", s, err, tc.want)
			}
		})
	}
}

// TestSparseErrors checks that malformed graphs and warm starts give errors
// naming the argument.
func TestSparseErrors(t *testing.T) {
	ok := func() *Graph { return graphOf([][]edge{{{0, 1}, {1, 2}}, {{0, 3}, {1, 4}}}) }
	with := func(f func(g *Graph)) *Graph { g := ok(); f(g); return g }
	cases := []struct {
		name string
		g    *Graph
		warm *Solution
		want string
	}{
		{"nil", nil, nil, "graph is nil"},
		{"zeroN", &Graph{}, nil, "Graph.N = 0"},
		{"shortLo", with(func(g *Graph) { g.Lo = g.Lo[:1] }), nil, "len(Graph.Lo) = 1"},
		{"shortHi", with(func(g *Graph) { g.Hi = nil }), nil, "len(Graph.Hi) = 0"},
		{"costLength", with(func(g *Graph) { g.Cost = g.Cost[:3] }), nil, "len(Graph.Cost) = 3"},
		{"negativeLo", with(func(g *Graph) { g.Lo[1] = -1 }), nil, "row 1 has edge range Lo = -1"},
		{"loAboveHi", with(func(g *Graph) { g.Lo[0] = 2; g.Hi[0] = 1 }), nil, "Lo = 2, Hi = 1"},
		{"hiPastEnd", with(func(g *Graph) { g.Hi[1] = 9 }), nil, "Hi = 9"},
		{"columnHigh", with(func(g *Graph) { g.Col[2] = 2 }), nil, "Graph.Col[2] = 2"},
		{"columnNegative", with(func(g *Graph) { g.Col[3] = -1 }), nil, "Graph.Col[3] = -1"},
		{"nanCost", with(func(g *Graph) { g.Cost[1] = math.NaN() }), nil, "Graph.Cost[1] = NaN"},
		{"infCost", with(func(g *Graph) { g.Cost[0] = math.Inf(1) }), nil, "Graph.Cost[0] = +Inf"},
		{"warmShort", ok(), &Solution{Col4Row: []int{0}, V: []float64{0, 0}}, "len(Col4Row) = 1"},
		{"warmNaN", ok(), &Solution{Col4Row: []int{0, 1}, V: []float64{0, math.NaN()}}, "V[1] = NaN"},
		{"warmColumn", ok(), &Solution{Col4Row: []int{0, 5}, V: []float64{0, 0}}, "Col4Row[1] = 5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := SolveSparse(tc.g, tc.warm, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got (%v, %v), want an error containing %q", s, err, tc.want)
			}
		})
	}
}

// TestSparseHooks checks that Stop's error is returned at any poll, and that
// progress is non-decreasing, ends at 1 and does not change the result.
func TestSparseHooks(t *testing.T) {
	errStop := errors.New("stop")
	g := knnGraph(3000, 8, 8, 46)
	cases := []struct {
		name string
		warm func() *Solution
	}{
		{"cold", func() *Solution { return nil }},
		{"warm", func() *Solution {
			s, err := SolveSparse(knnGraph(3000, 8, 4, 46), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			warm := tc.warm()
			want, err := SolveSparse(g, warm, nil)
			if err != nil {
				t.Fatal(err)
			}
			var fr []float64
			got, err := SolveSparse(g, warm, &Hooks{Stop: func() error { return nil }, Progress: func(f float64) { fr = append(fr, f) }})
			if err != nil || got.Cost != want.Cost {
				t.Fatalf("with hooks: (%v, %v), without: %v", got, err, want.Cost)
			}
			if !slices.IsSorted(fr) || len(fr) == 0 || fr[len(fr)-1] != 1 {
				t.Errorf("progress %v is not non-decreasing up to 1", fr)
			}
			for _, after := range []int{0, 1, 3, 20} {
				polls := 0
				_, err := SolveSparse(g, warm, &Hooks{Stop: func() error {
					if polls++; polls > after {
						return errStop
					}
					return nil
				}})
				if !errors.Is(err, errStop) {
					t.Errorf("stop after %d polls: err = %v, want the Stop error", after, err)
				}
			}
		})
	}
}

// TestSparseImbalancedModel solves docs/method.md's square model of the
// imbalanced problem (q+1 copies of each column, dummy rows that share one
// edge range reaching only the extra copies at cost 0) as a sparse graph
// and compares it with the dense Imbalanced solver on the same costs.
func TestSparseImbalancedModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 48))
	cases := []struct {
		name   string
		nr, nc int
		c      []float64
	}{
		{"uniform300x70", 300, 70, fill(300*70, rng.Float64)},
		{"int400x90", 400, 90, fill(400*90, func() float64 { return float64(rng.IntN(20)) })},
		{"sqdist2d500x120", 500, 120, stage1Cost(500, 120, 2, 49)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.nr / tc.nc
			n := tc.nc * (q + 1)
			adj := make([][]edge, tc.nr+1)
			for i := range tc.nr {
				for j := range tc.nc {
					for cp := 0; cp <= q; cp++ {
						adj[i] = append(adj[i], edge{j*(q+1) + cp, tc.c[i*tc.nc+j]})
					}
				}
			}
			for j := range tc.nc {
				adj[tc.nr] = append(adj[tc.nr], edge{j*(q+1) + q, 0})
			}
			g := graphOf(adj)
			g.N = n
			for range n - tc.nr - 1 {
				g.Lo, g.Hi = append(g.Lo, g.Lo[tc.nr]), append(g.Hi, g.Hi[tc.nr])
			}
			s, err := SolveSparse(g, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkSparse(t, g, s)
			want, err := Imbalanced(tc.c, tc.nr, tc.nc)
			if err != nil {
				t.Fatal(err)
			}
			sameCost(t, s.Cost, want.Cost, "Imbalanced")
		})
	}
}
