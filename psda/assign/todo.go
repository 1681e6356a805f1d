package assign

import "errors"

var errTodo = errors.New("assign: not implemented yet")


type PerfectMatching struct {
	Mate        []int
	Cost, Bound float64
}

func MinWeightPerfectMatching(c []float64, n int) (*PerfectMatching, error) { return nil, errTodo }
