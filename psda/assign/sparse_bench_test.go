package assign

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// rbfCost is the RBF-like cost 1 − exp(−‖a−b‖²): cheapest for the nearest
// points, bounded, and nearly constant far away as PSDA's kernel costs are.
func rbfCost(a, b []float64) float64 {
	s := 0.0
	for k := range a {
		d := a[k] - b[k]
		s += d * d
	}
	return 1 - math.Exp(-s)
}

// knnLists returns, for every point of x, about k of the cheapest points of
// y under cost, found exactly inside the leaves of a few random projection
// trees (leaves of up to 1024 points from x and y together; exact k nearest
// when len(x)+len(y) <= 1024). With skipSelf, x and y are the same set and
// a point is not its own neighbour.
func knnLists(x, y [][]float64, k int, seed uint64, skipSelf bool) [][]edge {
	const leaf, trees = 1024, 3
	rng := rand.New(rand.NewPCG(seed, 3))
	d := len(x[0])
	type item struct {
		row bool
		i   int
		key float64
	}
	cand := make([][]edge, len(x))
	var split func(items []item)
	split = func(items []item) {
		if len(items) <= leaf {
			var cols []int
			for _, it := range items {
				if !it.row {
					cols = append(cols, it.i)
				}
			}
			for _, it := range items {
				if !it.row {
					continue
				}
				var es []edge
				for _, j := range cols {
					if !(skipSelf && j == it.i) {
						es = append(es, edge{j, rbfCost(x[it.i], y[j])})
					}
				}
				slices.SortFunc(es, func(a, b edge) int { return cmpFloat(a.c, b.c) })
				cand[it.i] = append(cand[it.i], es[:min(k, len(es))]...)
			}
			return
		}
		dir := make([]float64, d)
		for t := range dir {
			dir[t] = rng.NormFloat64()
		}
		for t := range items {
			var p []float64
			if items[t].row {
				p = x[items[t].i]
			} else {
				p = y[items[t].i]
			}
			s := 0.0
			for q := range dir {
				s += dir[q] * p[q]
			}
			items[t].key = s
		}
		slices.SortFunc(items, func(a, b item) int { return cmpFloat(a.key, b.key) })
		h := len(items) / 2
		split(items[:h])
		split(items[h:])
	}
	for range trees {
		items := make([]item, 0, len(x)+len(y))
		for i := range x {
			items = append(items, item{row: true, i: i})
		}
		for j := range y {
			items = append(items, item{i: j})
		}
		split(items)
		if len(x)+len(y) <= leaf {
			break
		}
	}
	for i, es := range cand {
		slices.SortFunc(es, func(a, b edge) int { return cmpFloat(a.c, b.c) })
		es = slices.CompactFunc(es, func(a, b edge) bool { return a.j == b.j })
		cand[i] = es[:min(k, len(es))]
	}
	return cand
}

// knnGraph returns PSDA's Stage 1 candidate graph on n Gaussian source and
// target points in dimension d: each row's about k cheapest columns under
// rbfCost, plus the identity edges so that a perfect matching exists.
func knnGraph(n, d, k int, seed uint64) *Graph {
	rng := rand.New(rand.NewPCG(seed, 4))
	x, y := gaussian(rng, n, d), gaussian(rng, n, d)
	adj := knnLists(x, y, k, seed, false)
	for i := range adj {
		if !slices.ContainsFunc(adj[i], func(e edge) bool { return e.j == i }) {
			adj[i] = append(adj[i], edge{i, rbfCost(x[i], y[i])})
		}
	}
	return graphOf(adj)
}

// symmetricKNN returns a Stage 2-like graph: n points in dimension d, the
// symmetric closure of each point's about k cheapest other points under
// rbfCost, no diagonal, plus the pairs (2m, 2m+1) so that a perfect matching
// exists (n even).
func symmetricKNN(n, d, k int, seed uint64) *Graph {
	rng := rand.New(rand.NewPCG(seed, 5))
	w := gaussian(rng, n, d)
	lists := knnLists(w, w, k, seed, true)
	has := make([]map[int]bool, n)
	adj := make([][]edge, n)
	add := func(i, j int) {
		if has[i] == nil {
			has[i] = map[int]bool{}
		}
		if !has[i][j] {
			has[i][j] = true
			adj[i] = append(adj[i], edge{j, rbfCost(w[i], w[j])})
		}
	}
	for i, es := range lists {
		for _, e := range es {
			add(i, e.j)
			add(e.j, i)
		}
	}
	for i := 0; i+1 < n; i += 2 {
		add(i, i+1)
		add(i+1, i)
	}
	return graphOf(adj)
}

// benchGraphs caches the benchmark graphs: building the 50,000-row
// candidate lists takes longer than a solve.
var benchGraphs = struct {
	sync.Mutex
	m map[string]*Graph
}{m: map[string]*Graph{}}

func cachedGraph(key string, build func() *Graph) *Graph {
	benchGraphs.Lock()
	defer benchGraphs.Unlock()
	g, ok := benchGraphs.m[key]
	if !ok {
		g = build()
		benchGraphs.m[key] = g
	}
	return g
}

// BenchmarkSparse times SolveSparse at PSDA's sparse scale, N = 50,000 with
// k-nearest-neighbour candidate edges under rbfCost: a cold solve of the
// k-NN graph ("cold"), and re-solves from its solution after adding edges
// of each row's 2k cheapest that the graph lacks, priced by the solution:
// "warm1%" adds 1% of the graph's edge count, every violated edge first (on
// d = 8 all 1,365 of them, 0.08%) and then the least positive; "warm16"
// adds only the 16 least violated edges. Each reports the cold solve of the
// same larger graph as cold-s/op and the ratio warm/cold.
//
//	go test ./psda/assign -run XXX -bench Sparse -benchtime 1x
func BenchmarkSparse(b *testing.B) {
	const n = 50000
	for _, c := range []struct{ d, k int }{{8, 32}, {32, 64}} {
		name := fmt.Sprintf("n=%d/d=%d/k=%d", n, c.d, c.k)
		g := func() *Graph {
			return cachedGraph(name, func() *Graph { return knnGraph(n, c.d, c.k, 7) })
		}
		b.Run(name+"/cold", func(b *testing.B) {
			g := g()
			b.ResetTimer()
			defer reportCPU(b, cpuNow())
			for range b.N {
				if _, err := SolveSparse(g, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		adds := []struct {
			name string
			pick func(g *Graph, all []pricedEdge) []pricedEdge
		}{
			{"warm1%", func(g *Graph, all []pricedEdge) []pricedEdge { return all[:len(g.Col)/100] }},
			{"warm16", func(g *Graph, all []pricedEdge) []pricedEdge {
				k := 0
				for k < len(all) && all[k].r < -1e-12 {
					k++
				}
				return all[max(0, k-16):k]
			}},
		}
		for _, add := range adds {
			b.Run(name+"/"+add.name, func(b *testing.B) {
				g := g()
				s, err := SolveSparse(g, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				more := cachedGraph(name+"/2k", func() *Graph { return knnGraph(n, c.d, 2*c.k, 7) })
				big := addEdges(g, perRow(n, add.pick(g, priced(g, more, s))))
				start := time.Now()
				if _, err := SolveSparse(big, nil, nil); err != nil {
					b.Fatal(err)
				}
				cold := time.Since(start).Seconds()
				b.ResetTimer()
				defer reportCPU(b, cpuNow())
				start = time.Now()
				for range b.N {
					if _, err := SolveSparse(big, s, nil); err != nil {
						b.Fatal(err)
					}
				}
				warm := time.Since(start).Seconds() / float64(b.N)
				b.ReportMetric(cold, "cold-s/op")
				b.ReportMetric(warm/cold, "warm/cold")
			})
		}
	}
}
