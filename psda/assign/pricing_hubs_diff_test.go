package assign

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/psda-dev/psda/psda/internal/par"
)

// TestPricingHubsRandom runs the pricing loop as psda's sparse Stage 2 runs
// it (symmetric costs, no diagonal, the candidate lists' thresholds as the
// screen) on random point sets built to make the screen's hub pass run:
// far outliers, some stacked on one spot (hubs whose edges to each other
// tie), duplicated points, odd and even sizes, a lattice of tied costs,
// few candidates, kept lists sorted (Keep <= 16) and buffered, and float32
// passes whose cross parts err by up to their bounds in either direction.
// Each instance checks screenAll's claim edge by edge (every edge of a row
// outside the graph and its kept list costs at least the row's tail, and
// the kept edges carry exact cross parts), then the solution against the
// dense optimum (Rectangular) and the symmetric potentials' feasibility
// for every edge.
func TestPricingHubsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	instances, withHubs := 300, 0
	if testing.Short() {
		instances = 60
	}
	for it := range instances {
		n := 8 + rng.IntN(150)
		c := hubCosts(rng, n)
		k := 1 + rng.IntN(4)
		adj, tau := nearestCandidates(c, n, k)
		keep := []int{1, 2, 3, 5, 17, 24}[rng.IntN(6)]
		var e []float64
		var model PricedModel = &denseModel{c: c, n: n}
		if rng.IntN(2) == 0 {
			e = make([]float64, n)
			scale := math.Pow(10, -1-3*rng.Float64())
			for a := range e {
				e[a] = scale * rng.Float64()
			}
			model = &jitterModel{denseModel{c: c, n: n}, e}
		}
		name := func() string {
			return fmt.Sprintf("instance %d (n=%d, k=%d, Keep=%d, float32 %t)", it, n, k, keep, e != nil)
		}
		pricing := func(trace func(string, ...any)) *Pricing {
			return &Pricing{Model: model, Rows: n, Cols: n, Scale: 1, Coef: 1, NoDiag: true, Symmetric: true,
				TauR: tau, TauC: tau, ER: e, EC: e, Keep: keep, Trace: trace}
		}
		// screenAll's claim, edge by edge.
		pr := newPricing(pricing(nil), deepCopy(adj))
		if err := pr.resolve(); err != nil {
			t.Fatalf("%s: %v", name(), err)
		}
		if _, err := pr.screenAll(); err != nil {
			t.Fatalf("%s: %v", name(), err)
		}
		z, w := pr.potentials()
		scale := maxAbsFinite(c)
		for a := 0; a < n; a++ {
			kept := map[int]bool{}
			pr.kept.Each(a, func(b int, _, x float64) {
				kept[b] = true
				if x != c[a*n+b] {
					t.Fatalf("%s: kept edge (%d, %d) has cross part %v, exact %v", name(), a, b, x, c[a*n+b])
				}
			})
			for b := 0; b < n; b++ {
				if r := c[a*n+b] - z[a] - w[b]; a != b && !kept[b] && !pr.adj.Has(a, b) && r < pr.tail[a]-1e-12*scale {
					t.Fatalf("%s: after the screen, edge (%d, %d) has reduced cost %v below its row's tail %v", name(), a, b, r, pr.tail[a])
				}
			}
		}
		hubs := 0
		sol, _, err := pricing(func(f string, args ...any) {
			if strings.HasPrefix(f, "screen: ") {
				hubs = args[2].(int)
			}
		}).Solve(deepCopy(adj))
		if err != nil {
			t.Fatalf("%s: %v", name(), err)
		}
		if hubs > 0 {
			withHubs++
		}
		big := slices.Clone(c)
		for a := 0; a < n; a++ {
			big[a*n+a] = 1e9
		}
		want, err := Rectangular(big, n, n)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(sol.Cost-want.Cost) > 1e-9*scale*float64(n) {
			t.Fatalf("%s (%d hubs): cost %.15g, Rectangular %.15g", name(), hubs, sol.Cost, want.Cost)
		}
		tol := 2 * PriceTol(c)
		for a := 0; a < n; a++ {
			for b := 0; b < n; b++ {
				if r := c[a*n+b] - (sol.U[a]+sol.V[a])/2 - (sol.U[b]+sol.V[b])/2; a != b && r < -tol {
					t.Fatalf("%s (%d hubs): reduced cost of (%d, %d) is %v", name(), hubs, a, b, r)
				}
			}
		}
	}
	if withHubs < instances/4 {
		t.Fatalf("only %d of %d instances priced hub columns (the test needs them)", withHubs, instances)
	}
	t.Logf("%d of %d instances priced hub columns", withHubs, instances)
}

// hubCosts returns the symmetric n×n matrix of squared distances between
// random points in the plane (diagonal +Inf): a cloud, far outliers (some
// stacked on one spot), duplicated points and, at random, every cost
// rounded to a coarse lattice so that many tie.
func hubCosts(rng *rand.Rand, n int) []float64 {
	px, py := make([]float64, n), make([]float64, n)
	for i := range px {
		px[i], py[i] = rng.Float64(), rng.Float64()
	}
	far := rng.IntN(max(2, n/6))
	for i := range far {
		j := rng.IntN(n)
		if i > 0 && rng.IntN(3) == 0 { // stacked on an earlier outlier
			px[j], py[j] = px[i-1], py[i-1]
			continue
		}
		r, ang := 3+30*rng.Float64(), 2*math.Pi*rng.Float64()
		px[j], py[j] = r*math.Cos(ang), r*math.Sin(ang)
	}
	for range rng.IntN(n / 4) { // duplicated points
		i, j := rng.IntN(n), rng.IntN(n)
		px[j], py[j] = px[i], py[i]
	}
	grid := 0.0
	if rng.IntN(3) == 0 {
		grid = 0.25
	}
	c := make([]float64, n*n)
	for a := 0; a < n; a++ {
		for b := 0; b < n; b++ {
			dx, dy := px[a]-px[b], py[a]-py[b]
			v := dx*dx + dy*dy
			if grid > 0 {
				v = grid * math.Round(v/grid)
			}
			c[a*n+b] = v
		}
		c[a*n+a] = math.Inf(1)
	}
	return c
}

// nearestCandidates returns nearestLists' graph with a perfect matching
// inside it, as stage2Sparse adds, and its bounds.
func nearestCandidates(c []float64, n, k int) (Edges, []float64) {
	adj, tau := nearestLists(c, n, k)
	// A perfect matching inside the graph, as stage2Sparse adds.
	for a := 0; a+1 < n; a += 2 {
		adj.Add(a, a+1, c[a*n+a+1])
		adj.Add(a+1, a, c[a*n+a+1])
	}
	if n%2 == 1 { // a triangle on the last three
		for _, e := range [][2]int{{n - 1, n - 2}, {n - 1, n - 3}} {
			adj.Add(e[0], e[1], c[e[0]*n+e[1]])
			adj.Add(e[1], e[0], c[e[0]*n+e[1]])
		}
	}
	return adj, tau
}

// nearestLists returns each row's k nearest entries of the symmetric n×n
// c as candidate edges (symmetrised) and the bound tau[a] on every entry
// outside row a's list.
func nearestLists(c []float64, n, k int) (Edges, []float64) {
	adj, tau := make(Edges, n), make([]float64, n)
	for a := 0; a < n; a++ {
		order := make([]int, 0, n-1)
		for b := 0; b < n; b++ {
			if b != a {
				order = append(order, b)
			}
		}
		slices.SortFunc(order, func(p, q int) int { return cmp.Compare(c[a*n+p], c[a*n+q]) })
		kk := min(k, len(order))
		for _, b := range order[:kk] {
			adj.Add(a, b, c[a*n+b])
			adj.Add(b, a, c[a*n+b])
		}
		tau[a] = c[a*n+order[kk-1]]
	}
	return adj, tau
}

// jitterModel is denseModel whose float32 passes hand every cross part
// moved by up to its error bound e[a] + e[b], up or down (symmetric in a
// and b, as a float32 Gram entry's error bound is).
type jitterModel struct {
	denseModel
	e []float64
}

func (m *jitterModel) Pass(sub []int, f32 bool, row func(a, b0 int, xs []float64), col func(b, a0 int, xs []float64, idx []int)) {
	if !f32 {
		m.denseModel.Pass(sub, false, row, col)
		return
	}
	rows, n := par.Indices(sub, m.n), m.n
	par.Rows(len(rows), func(k0, k1 int) {
		for _, a := range rows[k0:k1] {
			xs := make([]float64, n)
			for b := range xs {
				u := float64(tieKey2(min(a, b), max(a, b))%2001)/1000 - 1 // in [-1, 1]
				xs[b] = m.c[a*n+b] + u*(m.e[a]+m.e[b])
			}
			row(a, 0, xs)
		}
	})
}

// tieKey2 mixes a pair into a pseudo-random key (SplitMix64's finaliser).
func tieKey2(a, b int) uint64 {
	z := uint64(a)<<32 ^ uint64(b)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
