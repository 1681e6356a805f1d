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
	// Output:
	// target of each source: [0 0 1 0 1] cost: 4
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
