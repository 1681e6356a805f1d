package assign

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
	"weak"

	"github.com/psda-dev/psda/psda/internal/par"
)

// TestPricingToCertificate runs the pricing loop on dense matrices (the
// warm start's model) to its certificate, from candidate graphs of 1 and 4
// entries a row and column and with 1 and 8 kept edges a row, so that it
// needs several passes, partial passes and column passes: its solution must
// be optimal, as Rectangular (an independent exact solver) says, and its
// potentials feasible for every entry, not only the graph's.
func TestPricingToCertificate(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	cases := []struct {
		name string
		c    func(n int) []float64
	}{
		{"uniform", func(n int) []float64 { return kinds[0].gen(rng, n, n) }},
		{"int0to3", func(n int) []float64 { return kinds[1].gen(rng, n, n) }},
		{"signedWide", func(n int) []float64 { return kinds[3].gen(rng, n, n) }},
		{"euclid", func(n int) []float64 { return stage1Cost(n, n, 2, 5) }},
	}
	for _, tc := range cases {
		for _, n := range []int{40, 300} {
			for _, kc := range [][2]int{{1, 1}, {4, 8}} {
				c := tc.c(n)
				pr := &Pricing{Model: &denseModel{c: c, n: n}, Rows: n, Cols: n, Scale: 1, Coef: 1, Keep: kc[1]}
				sol, _, err := pr.Solve(denseCandidates(c, n, kc[0], false, nil))
				if err != nil {
					t.Fatalf("%s n=%d k=%v: %v", tc.name, n, kc, err)
				}
				want, err := Rectangular(c, n, n)
				if err != nil {
					t.Fatal(err)
				}
				scale := 0.0
				for _, x := range c {
					scale = math.Max(scale, math.Abs(x))
				}
				if math.Abs(sol.Cost-want.Cost) > 1e-9*(1+scale)*float64(n) {
					t.Fatalf("%s n=%d k=%v: cost %v, Rectangular %v", tc.name, n, kc, sol.Cost, want.Cost)
				}
				tol := 2 * PriceTol(c)
				for i := 0; i < n; i++ {
					for j, x := range c[i*n : i*n+n] {
						if r := x - sol.U[i] - sol.V[j]; r < -tol {
							t.Fatalf("%s n=%d k=%v: reduced cost of (%d, %d) is %v", tc.name, n, kc, i, j, r)
						}
					}
				}
			}
		}
	}
}

// TestPricingPolicy checks the warm start's knobs: MaxPasses stops the loop
// after that many pricing passes (where the certificate needs more), and
// MaxAdd gives up with ErrPricingGaveUp.
func TestPricingPolicy(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const n = 300
	c := kinds[0].gen(rng, n, n)
	lastPass := func(maxPasses int) int {
		last := -1
		pr := &Pricing{Model: &denseModel{c: c, n: n}, Rows: n, Cols: n, Scale: 1, Coef: 1, Keep: 1, MaxPasses: maxPasses,
			Trace: func(f string, args ...any) {
				if strings.HasPrefix(f, "pass ") {
					last = max(last, args[0].(int))
				}
			}}
		if _, _, err := pr.Solve(denseCandidates(c, n, 1, false, nil)); err != nil {
			t.Fatal(err)
		}
		return last
	}
	if p := lastPass(0); p < 1 {
		t.Fatalf("to the certificate: last pass %d, want several (the test needs them)", p)
	}
	if p := lastPass(1); p != 0 {
		t.Fatalf("MaxPasses = 1: last pass %d, want 0", p)
	}
	pr := &Pricing{Model: &denseModel{c: c, n: n}, Rows: n, Cols: n, Scale: 1, Coef: 1, Keep: 8, MaxAdd: 1}
	if _, _, err := pr.Solve(denseCandidates(c, n, 1, false, nil)); !errors.Is(err, ErrPricingGaveUp) {
		t.Fatalf("MaxAdd = 1 on a matrix whose 1-candidate graph misses most optima: got %v, want ErrPricingGaveUp", err)
	}
}

// TestScreen checks Pricing.Screen against the bound evaluated edge by
// edge: min_b cs·max(tauR[a], tauC[b]) − z[a] − w[b], with ties among the
// thresholds and lists that hold their whole line (+Inf).
func TestScreen(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, sh := range [][2]int{{1, 1}, {7, 3}, {40, 40}, {25, 60}} {
		rows, cols := sh[0], sh[1]
		st := &Pricing{Coef: 2, Scale: 0.25, TauR: make([]float64, rows), TauC: make([]float64, cols)}
		draw := func(tau []float64) {
			for i := range tau {
				switch rng.IntN(6) {
				case 0:
					tau[i] = math.Inf(1)
				case 1:
					tau[i] = 0.5 // ties
				default:
					tau[i] = rng.NormFloat64()
				}
			}
		}
		draw(st.TauR)
		draw(st.TauC)
		z, w := make([]float64, rows), make([]float64, cols)
		for a := range z {
			z[a] = rng.NormFloat64()
		}
		for b := range w {
			w[b] = rng.NormFloat64()
		}
		// Without skip, and skipping a random third of the columns.
		skip := make([]bool, cols)
		for b := range skip {
			skip[b] = rng.IntN(3) == 0
		}
		for _, sk := range [][]bool{nil, skip} {
			tail := make([]float64, rows)
			st.Screen(z, w, tail, sk)
			for a := range tail {
				want := math.Inf(1)
				for b := range w {
					if sk == nil || !sk[b] {
						want = min(want, 0.5*max(st.TauR[a], st.TauC[b])-z[a]-w[b])
					}
				}
				if tail[a] != want && math.Abs(tail[a]-want) > 1e-12 {
					t.Fatalf("%dx%d skip %v: tail[%d] = %v, want %v", rows, cols, sk != nil, a, tail[a], want)
				}
			}
			// The sorted order's ties reversed (the pricing loop sorts
			// once and filters; Screen once sorted the filtered columns):
			// the same bits.
			order := st.byTauC()
			for i := 0; i < len(order); {
				j := i + 1
				for j < len(order) && st.TauC[order[j]] == st.TauC[order[i]] {
					j++
				}
				slices.Reverse(order[i:j])
				i = j
			}
			rev := make([]float64, rows)
			st.screenBy(order, z, w, rev, sk)
			for a := range tail {
				if math.Float64bits(rev[a]) != math.Float64bits(tail[a]) {
					t.Fatalf("%dx%d skip %v: tail[%d] = %v with ties reversed, %v", rows, cols, sk != nil, a, rev[a], tail[a])
				}
			}
		}
	}
}

// TestPricingHubs runs the pricing loop as psda's sparse Stage 2 runs it
// (symmetric costs, no diagonal, candidate lists' thresholds as the screen)
// on points in the plane with far outliers, whose large potentials fail the
// screen for every row: the first pricing then prices the outliers' lines
// (screenAll's hub pass, which prices their rows whole and their columns
// into the other rows' capped lists). With one kept edge a row the lists
// overflow, so that a row's tail must take its hub edges' limit. The
// solution must be the dense optimum (Rectangular, the diagonal forbidden
// by a large cost) and the potentials' symmetric mean feasible for every
// edge.
//
// With noise, the model's float32 passes (noisyModel) hand every cross part
// raised by the most its error bounds allow, so that only lowered values
// (Pricing.lowered) keep the tails true.
func TestPricingHubs(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, sh := range []struct {
		n, far int
		noise  float64
	}{{200, 6, 0}, {301, 9, 0}, {200, 6, 0.02}, {301, 9, 0.01}} {
		n := sh.n
		px, py := make([]float64, n), make([]float64, n)
		for i := range px {
			px[i], py[i] = rng.Float64(), rng.Float64()
			if i < sh.far { // outliers, far from everything and each other
				ang := 2 * math.Pi * float64(i) / float64(sh.far)
				px[i], py[i] = 20*math.Cos(ang), 20*math.Sin(ang)
			}
		}
		c, big := make([]float64, n*n), make([]float64, n*n)
		for a := 0; a < n; a++ {
			for b := 0; b < n; b++ {
				dx, dy := px[a]-px[b], py[a]-py[b]
				c[a*n+b], big[a*n+b] = dx*dx+dy*dy, dx*dx+dy*dy
			}
			c[a*n+a], big[a*n+a] = math.Inf(1), 1e9
		}
		// Candidates: each row's k nearest, symmetrised; tau bounds every
		// entry outside a row's list.
		adj, tau := nearestLists(c, n, 4)
		// screenAll's claim, edge by edge: every edge of row a outside the
		// graph and the row's kept list has reduced cost >= tail[a].
		var model PricedModel = &denseModel{c: c, n: n}
		var e []float64
		if sh.noise > 0 {
			e = make([]float64, n)
			for a := range e {
				e[a] = sh.noise * rng.Float64()
			}
			model = &noisyModel{denseModel{c: c, n: n}, e}
		}
		pr := newPricing(&Pricing{Model: model, Rows: n, Cols: n, Scale: 1, Coef: 1, NoDiag: true,
			Symmetric: true, TauR: tau, TauC: tau, ER: e, EC: e, Keep: 1}, deepCopy(adj))
		if err := pr.resolve(); err != nil {
			t.Fatal(err)
		}
		if _, err := pr.screenAll(); err != nil {
			t.Fatal(err)
		}
		z, w := pr.potentials()
		for a := 0; a < n; a++ {
			kept := map[int]bool{}
			pr.kept.Each(a, func(b int, _, _ float64) { kept[b] = true })
			for b := 0; b < n; b++ {
				if r := c[a*n+b] - z[a] - w[b]; a != b && !kept[b] && !pr.adj.Has(a, b) && r < pr.tail[a]-1e-12 {
					t.Fatalf("n=%d: after the screen, edge (%d, %d) has reduced cost %v below its row's tail %v", n, a, b, r, pr.tail[a])
				}
			}
		}
		hubs := 0
		st := &Pricing{Model: model, Rows: n, Cols: n, Scale: 1, Coef: 1, NoDiag: true, Symmetric: true,
			TauR: tau, TauC: tau, ER: e, EC: e, Keep: 1, Trace: func(f string, args ...any) {
				if strings.HasPrefix(f, "screen: ") {
					hubs = args[2].(int)
				}
			}}
		sol, _, err := st.Solve(adj)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if hubs == 0 {
			t.Fatalf("n=%d: the screen priced no hub columns (the test needs them)", n)
		}
		want, err := Rectangular(big, n, n)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(sol.Cost-want.Cost) > 1e-9*want.Cost {
			t.Fatalf("n=%d: cost %.15g, Rectangular %.15g", n, sol.Cost, want.Cost)
		}
		// The certificate is the potentials' symmetric mean (potentials).
		y := make([]float64, n)
		for a := range y {
			y[a] = (sol.U[a] + sol.V[a]) / 2
		}
		tol := 2 * PriceTol(c)
		for a := 0; a < n; a++ {
			for b := 0; b < n; b++ {
				if r := c[a*n+b] - y[a] - y[b]; a != b && r < -tol {
					t.Fatalf("n=%d: reduced cost of (%d, %d) is %v", n, a, b, r)
				}
			}
		}
	}
}

// deepCopy returns a copy of adj that shares no row with it.
func deepCopy(adj Edges) Edges {
	out := make(Edges, len(adj))
	for a, row := range adj {
		out[a] = slices.Clone(row)
	}
	return out
}

// noisyModel is denseModel whose float32 passes hand every cross part
// raised by e[a] + e[b], the most the error bounds ER = EC = e allow.
type noisyModel struct {
	denseModel
	e []float64
}

func (m *noisyModel) Pass(sub []int, f32 bool, row func(a, b0 int, xs []float64), col func(b, a0 int, xs []float64, idx []int)) {
	if !f32 {
		m.denseModel.Pass(sub, false, row, col)
		return
	}
	n := m.n
	for _, a := range par.Indices(sub, n) {
		xs := make([]float64, n)
		for b := range xs {
			xs[b] = m.c[a*n+b] + m.e[a] + m.e[b]
		}
		row(a, 0, xs)
	}
}

// graphWatch is denseModel that, each time the loop asks for a new graph,
// collects and counts the earlier graphs still reachable.
type graphWatch struct {
	denseModel
	built, held int
	last        int // the last graph's edges
	cols        weak.Pointer[int32]
	costs       weak.Pointer[float64]
}

func (m *graphWatch) Graph(adj Edges) *Graph {
	if m.built > 0 {
		runtime.GC()
		if m.cols.Value() != nil || m.costs.Value() != nil {
			m.held++
		}
	}
	g := m.denseModel.Graph(adj)
	m.built++
	m.last = len(g.Col)
	m.cols, m.costs = weak.Make(&g.Col[0]), weak.Make(&g.Cost[0])
	return g
}

// TestPricingDropsOldGraph checks that the loop lets go of its graph
// before the model builds the next one after violators join: the sparse
// Stage 1's graph repeats every edge once per copy of its column, and two
// of them live at once had doubled its peak (8000 × 250, Gaussian, RBF:
// 1.25 GB against 0.66 without a pricing round; plan.sparse1Bytes counts
// one).
func TestPricingDropsOldGraph(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 60
	c := kinds[0].gen(rng, n, n)
	m := &graphWatch{denseModel: denseModel{c: c, n: n}}
	pr := &Pricing{Model: m, Rows: n, Cols: n, Scale: 1, Coef: 1, Keep: 1}
	if _, _, err := pr.Solve(denseCandidates(c, n, 1, false, nil)); err != nil {
		t.Fatal(err)
	}
	if m.built < 2 {
		t.Fatalf("%d graph built: the case needs violators to join", m.built)
	}
	if m.held > 0 {
		t.Errorf("the old graph was still reachable at %d of %d rebuilds", m.held, m.built-1)
	}
}

// TestPricingBeforeGraph checks that BeforeGraph sees the edges of every
// graph before it is built, the first included and each after violators
// joined (as many calls as graphs, each with the edges the graph is then
// built from), and that its error ends Solve with that error and no graph
// built after it.
func TestPricingBeforeGraph(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 60
	c := kinds[0].gen(rng, n, n)
	for _, refuseAt := range []int{0, 1, 2} { // 0: never
		t.Run(fmt.Sprintf("refuse=%d", refuseAt), func(t *testing.T) {
			m := &graphWatch{denseModel: denseModel{c: c, n: n}}
			calls, seen := 0, 0
			stop := errors.New("no room for this graph")
			pr := &Pricing{Model: m, Rows: n, Cols: n, Scale: 1, Coef: 1, Keep: 1,
				BeforeGraph: func(adj Edges) error {
					calls++
					if calls != m.built+1 {
						t.Errorf("call %d before graph %d", calls, m.built+1)
					}
					seen = 0
					for _, row := range adj {
						seen += len(row)
					}
					if calls == refuseAt {
						return stop
					}
					return nil
				}}
			_, _, err := pr.Solve(denseCandidates(c, n, 1, false, nil))
			switch {
			case refuseAt == 0 && err != nil:
				t.Fatal(err)
			case refuseAt == 0 && m.built < 2:
				t.Fatalf("%d graph built: the case needs violators to join", m.built)
			case refuseAt == 0 && calls != m.built:
				t.Errorf("%d calls for %d graphs", calls, m.built)
			case refuseAt > 0 && !errors.Is(err, stop):
				t.Errorf("refused before graph %d: Solve returned %v", refuseAt, err)
			case refuseAt > 0 && m.built != refuseAt-1:
				t.Errorf("refused before graph %d: %d built", refuseAt, m.built)
			}
			if refuseAt == 0 && seen != m.last {
				t.Errorf("the last call saw %d edges, the last graph has %d", seen, m.last)
			}
		})
	}
}
