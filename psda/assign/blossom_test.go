package assign

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// randomGraph returns a symmetric graph on n vertices holding a random
// perfect matching and each other edge with probability p, with costs from
// gen, and its dense matrix with +Inf for the missing edges.
func randomGraph(rng *rand.Rand, n int, p float64, gen func() float64) (*Graph, []float64) {
	c := make([]float64, n*n)
	for k := range c {
		c[k] = inf
	}
	perm := rng.Perm(n)
	for k := 0; k < n; k += 2 {
		x := gen()
		c[perm[k]*n+perm[k+1]], c[perm[k+1]*n+perm[k]] = x, x
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if c[i*n+j] == inf && rng.Float64() < p {
				x := gen()
				c[i*n+j], c[j*n+i] = x, x
			}
		}
	}
	g := &Graph{N: n, Lo: make([]int, n), Hi: make([]int, n)}
	for i := 0; i < n; i++ {
		g.Lo[i] = len(g.Col)
		for j := 0; j < n; j++ {
			if j != i && c[i*n+j] != inf {
				g.Col = append(g.Col, int32(j))
				g.Cost = append(g.Cost, c[i*n+j])
			}
		}
		g.Hi[i] = len(g.Col)
	}
	return g, c
}

// checkExact fails t unless m is a certified perfect matching of cost want.
func checkExact(t *testing.T, m *ExactMatching, want, scale float64, certify func(*ExactMatching, float64) error) {
	t.Helper()
	tol := 1e-9 * (1 + scale)
	if math.Abs(m.Cost-want) > tol*float64(len(m.Mate)) {
		t.Fatalf("cost %v, optimum %v", m.Cost, want)
	}
	if err := certify(m, tol); err != nil {
		t.Fatalf("certificate: %v", err)
	}
}

// startFromRelaxation returns the warm start of Stage 2: halved potentials of
// the symmetric assignment and the pairs of its even cycles.
func startFromRelaxation(t *testing.T, c []float64, n int) *BlossomStart {
	t.Helper()
	cc := append([]float64(nil), c...)
	for i := 0; i < n; i++ {
		cc[i*n+i] = inf
	}
	s, err := solveLSAP(cc, n, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	return RelaxationStart(s.col4row, s.u, s.v, denseCost(c, n))
}

// TestBlossomBrute compares BlossomDense and BlossomSparse with enumeration
// of all perfect matchings for n <= 12 on every matrix family, cold and
// warm started (from the relaxation and from random, infeasible duals with a
// random matching), and checks the certificate.
func TestBlossomBrute(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	for _, kind := range kinds {
		for n := 2; n <= 12; n += 2 {
			for rep := 0; rep < 12; rep++ {
				name := fmt.Sprintf("%s/n%d/%d", kind.name, n, rep)
				c := symmetrize(kind.gen(rng, n, n), n)
				want := bruteMatching(c, n)
				scale := 0.0
				for _, x := range c {
					scale = math.Max(scale, math.Abs(x))
				}
				randomStart := &BlossomStart{Y: fill(n, func() float64 { return (rng.Float64() - 0.3) * scale }), Mate: make([]int, n)}
				perm := rng.Perm(n)
				for k := 0; k < n; k += 2 {
					randomStart.Mate[perm[k]], randomStart.Mate[perm[k+1]] = perm[k+1], perm[k]
				}
				starts := map[string]*BlossomStart{"cold": nil, "relaxation": startFromRelaxation(t, c, n), "random": randomStart}
				for sname, st := range starts {
					m, err := BlossomDense(c, n, st, nil)
					if err != nil {
						t.Fatalf("%s %s: %v", name, sname, err)
					}
					t.Run(name+"/"+sname, func(t *testing.T) {
						checkExact(t, m, want, scale, func(m *ExactMatching, tol float64) error { return CertifyMatching(c, n, m, tol) })
					})
				}
			}
		}
	}
}

// TestBlossomSparseBrute checks BlossomSparse on random sparse graphs
// against enumeration, and that a graph without a perfect matching gives
// ErrNoPerfect.
func TestBlossomSparseBrute(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	for n := 2; n <= 12; n += 2 {
		for rep := 0; rep < 40; rep++ {
			p := []float64{0.1, 0.3, 0.6}[rep%3]
			g, c := randomGraph(rng, n, p, func() float64 { return float64(rng.IntN(20)) - 5 })
			want := bruteMatching(c, n)
			m, err := BlossomSparse(g, nil, nil)
			if err != nil {
				t.Fatalf("n%d/%d: %v", n, rep, err)
			}
			checkExact(t, m, want, 15, func(m *ExactMatching, tol float64) error { return CertifyMatchingGraph(g, m, tol) })
		}
	}
	// Two triangles joined by nothing: odd components.
	g := &Graph{N: 6, Lo: []int{0, 2, 4, 6, 8, 10}, Hi: []int{2, 4, 6, 8, 10, 12},
		Col:  []int32{1, 2, 0, 2, 0, 1, 4, 5, 3, 5, 3, 4},
		Cost: []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}
	if _, err := BlossomSparse(g, nil, nil); !errors.Is(err, ErrNoPerfect) {
		t.Fatalf("two triangles: err = %v, want ErrNoPerfect", err)
	}
}

// TestBlossomAgainstNetworkx compares BlossomDense, started from the
// relaxation as Stage 2 starts it, with networkx's blossom algorithm on
// instances whose relaxation has many odd cycles.
func TestBlossomAgainstNetworkx(t *testing.T) {
	if testing.Short() {
		t.Skip("networkx comparison is slow")
	}
	rng := rand.New(rand.NewPCG(75, 76))
	var centres [][2]float64
	for k := 0; k < 24; k++ {
		centres = append(centres, [2]float64{float64(k%6) * 3, float64(k/6) * 3})
	}
	tri, ntri := triangles(rng, centres)
	cases := []struct {
		name string
		n    int
		c    []float64
	}{
		{"stage2Rank2_120", 120, stage2Cost(120, 41)},
		{"uniform100", 100, symmetrize(fill(100*100, rng.Float64), 100)},
		{"int0to3_120", 120, symmetrize(fill(120*120, func() float64 { return float64(rng.IntN(4)) }), 120)},
		{"twentyFourTriangles", ntri, tri},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := BlossomDense(tc.c, tc.n, startFromRelaxation(t, tc.c, tc.n), nil)
			if err != nil {
				t.Fatal(err)
			}
			want := networkxMatchingCost(t, tc.c, tc.n)
			checkExact(t, m, want, math.Abs(want), func(m *ExactMatching, tol float64) error { return CertifyMatching(tc.c, tc.n, m, tol) })
		})
	}
}

// TestCertifyMatchingRejects perturbs a certified matching and its duals and
// expects every perturbation to be caught.
func TestCertifyMatchingRejects(t *testing.T) {
	rng := rand.New(rand.NewPCG(77, 78))
	var centres [][2]float64
	for k := 0; k < 6; k++ {
		centres = append(centres, [2]float64{float64(k) * 4, 0})
	}
	c, n := triangles(rng, centres)
	m, err := BlossomDense(c, n, startFromRelaxation(t, c, n), nil)
	if err != nil {
		t.Fatal(err)
	}
	const tol = 1e-9
	if err := CertifyMatching(c, n, m, tol); err != nil {
		t.Fatal(err)
	}
	if len(m.Duals.Z) == 0 {
		t.Fatal("triangles gave no blossom: the test needs one")
	}
	clone := func() *ExactMatching {
		d := m.Duals
		return &ExactMatching{Mate: append([]int(nil), m.Mate...), Cost: m.Cost, Bound: m.Bound, Duals: MatchingDuals{
			Y: append([]float64(nil), d.Y...), Z: append([]float64(nil), d.Z...),
			Parent: append([]int(nil), d.Parent...), In: append([]int(nil), d.In...)}}
	}
	zb := 0 // a blossom with a positive dual
	for b, z := range m.Duals.Z {
		if z > m.Duals.Z[zb] {
			zb = b
		}
	}
	cases := []struct {
		name string
		edit func(x *ExactMatching)
	}{
		{"swapPartners", func(x *ExactMatching) {
			a, b := 0, x.Mate[0]
			var p int
			for p = 1; p == b || p == a; p++ {
			}
			q := x.Mate[p]
			x.Mate[a], x.Mate[b], x.Mate[p], x.Mate[q] = p, q, a, b
			x.Cost = 0
			for v, w := range x.Mate {
				if v < w {
					x.Cost += c[v*n+w]
				}
			}
		}},
		{"costUnderstated", func(x *ExactMatching) { x.Cost -= 0.01 }},
		{"vertexDualRaised", func(x *ExactMatching) { x.Duals.Y[3] += 0.01 }},
		{"vertexDualLowered", func(x *ExactMatching) { x.Duals.Y[3] -= 0.01 }},
		{"blossomDualRaised", func(x *ExactMatching) { x.Duals.Z[zb] += 0.01 }},
		{"blossomDualNegative", func(x *ExactMatching) { x.Duals.Z[zb] = -0.01 }},
		{"evenBlossom", func(x *ExactMatching) {
			for v, b := range x.Duals.In {
				if b < 0 {
					x.Duals.In[v] = zb
					return
				}
			}
			x.Duals.In[x.Mate[0]] = -1
		}},
		{"parentCycle", func(x *ExactMatching) { x.Duals.Parent[zb] = zb }},
		{"notPerfect", func(x *ExactMatching) { x.Mate[0] = 0 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := clone()
			tc.edit(x)
			if err := CertifyMatching(c, n, x, tol); err == nil {
				t.Fatal("perturbed certificate accepted")
			}
		})
	}
}
