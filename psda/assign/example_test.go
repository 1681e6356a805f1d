package assign_test

import (
	"fmt"

	"github.com/psda-dev/psda/psda/assign"
)

// Rectangular assigns every row to a distinct column at least cost and
// returns potentials that Certify checks against every entry.
func ExampleRectangular() {
	c := []float64{ // 2 workers × 3 jobs, row-major
		4, 1, 4,
		2, 0, 5,
	}
	s, err := assign.Rectangular(c, 2, 3)
	if err != nil {
		panic(err)
	}
	fmt.Println("columns:", s.Col4Row, "cost:", s.Cost)
	fmt.Println("certified:", assign.Certify(c, 2, 3, s, 1e-12) == nil)
	// Output:
	// columns: [1 0] cost: 3
	// certified: true
}

// Imbalanced solves the paper's Stage 1 constraints when rows outnumber
// columns: every row is used once and the column uses differ by at most one.
func ExampleImbalanced() {
	c := []float64{ // 5 sources × 2 targets
		0, 9,
		1, 8,
		9, 0,
		2, 7,
		8, 1,
	}
	s, err := assign.Imbalanced(c, 5, 2)
	if err != nil {
		panic(err)
	}
	fmt.Println("target of each source:", s.Col4Row, "cost:", s.Cost)
	fmt.Println("certified:", assign.Certify(c, 5, 2, s, 1e-12) == nil)
	// Output:
	// target of each source: [0 0 1 0 1] cost: 4
	// certified: true
}

// MinWeightPerfectMatching pairs the vertices of a complete graph; Stage 2
// uses it to group Stage 1 pairs into quadruplets.
func ExampleMinWeightPerfectMatching() {
	c := []float64{ // symmetric 4×4, the diagonal is ignored
		0, 1, 5, 5,
		1, 0, 5, 5,
		5, 5, 0, 2,
		5, 5, 2, 0,
	}
	m, err := assign.MinWeightPerfectMatching(c, 4)
	if err != nil {
		panic(err)
	}
	fmt.Println("mates:", m.Mate, "cost:", m.Cost)
	// Output:
	// mates: [1 0 3 2] cost: 3
}

// On two triangles joined by one edge the symmetric assignment relaxation
// takes two 3-cycles, which no matching can follow: the blossom algorithm
// shrinks each triangle and pairs across the joining edge. The vertex and
// blossom duals it returns prove the matching optimal (CertifyMatching).
func ExampleMinWeightPerfectMatching_blossom() {
	const x = 10 // between the triangles, except the edge 2–3
	c := []float64{
		0, 1, 1, x, x, x,
		1, 0, 1, x, x, x,
		1, 1, 0, 4, x, x,
		x, x, 4, 0, 1, 1,
		x, x, x, 1, 0, 1,
		x, x, x, 1, 1, 0,
	}
	m, err := assign.MinWeightPerfectMatching(c, 6)
	if err != nil {
		panic(err)
	}
	fmt.Println("mates:", m.Mate, "cost:", m.Cost, "bound:", m.Bound)
	fmt.Println("vertices on odd cycles of the relaxation:", m.OddVertices)
	cert := &assign.ExactMatching{Mate: m.Mate, Cost: m.Cost, Duals: m.Duals, Bound: m.Bound}
	fmt.Println("certified:", assign.CertifyMatching(c, 6, cert, 1e-12) == nil)
	// Output:
	// mates: [1 0 3 2 5 4] cost: 6 bound: 6
	// vertices on odd cycles of the relaxation: 6
	// certified: true
}

// SolveSparse solves an assignment on a sparse graph: only the listed edges
// may be used. Here row 0 may take column 0 or 1, row 1 column 1 or 2 and
// row 2 only column 0, which forces a dearer choice on row 0. The potentials
// prove optimality among the graph's perfect matchings.
func ExampleSolveSparse() {
	g := &assign.Graph{
		N:    3,
		Lo:   []int{0, 2, 4},
		Hi:   []int{2, 4, 5},
		Col:  []int32{0, 1, 1, 2, 0},
		Cost: []float64{1, 3, 1, 2, 5},
	}
	s, err := assign.SolveSparse(g, nil, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("columns:", s.Col4Row, "cost:", s.Cost)
	ok := true
	for i := 0; i < g.N; i++ {
		for e := g.Lo[i]; e < g.Hi[i]; e++ {
			j := g.Col[e]
			ok = ok && s.U[i]+s.V[j] <= g.Cost[e]+1e-12 // feasible on every edge
			if int(j) == s.Col4Row[i] {
				ok = ok && s.U[i]+s.V[j] >= g.Cost[e]-1e-12 // tight on the matching
			}
		}
	}
	fmt.Println("potentials certify it:", ok)
	// Output:
	// columns: [1 2 0] cost: 10
	// potentials certify it: true
}

// A cost written by mirroring, as psda's Stage 2 writes it, skips the check
// of its two triangles against each other.
func ExampleMinWeightPerfectMatchingMirrored() {
	c := []float64{
		0, 1, 5, 2,
		1, 0, 2, 5,
		5, 2, 0, 1,
		2, 5, 1, 0,
	}
	pm, err := assign.MinWeightPerfectMatchingMirrored(c, 4, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(pm.Mate, pm.Cost)
	// Output: [1 0 3 2] 2
}
