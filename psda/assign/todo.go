package assign

import "errors"

// TEMPORARY: signatures agreed between the core and the solvers; the bodies are
// being written (see issue 2). Delete each stub when its real function lands.

var errTodo = errors.New("assign: not implemented yet")

// Solution is an assignment with its dual potentials.
type Solution struct {
	Col4Row []int     // column assigned to each row
	U, V    []float64 // row and column potentials
	Cost    float64   // sum of the assigned costs
}

// Imbalanced is a stub.
func Imbalanced(c []float64, nr, nc int) (*Solution, error) { return nil, errTodo }

// PerfectMatching is a stub result.
type PerfectMatching struct {
	Mate        []int
	Cost, Bound float64
}

// MinWeightPerfectMatching is a stub.
func MinWeightPerfectMatching(c []float64, n int) (*PerfectMatching, error) { return nil, errTodo }
