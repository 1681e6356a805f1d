package psda_test

import (
	"fmt"

	"github.com/psda-dev/psda/psda"
)

// Match pairs every source example with a target example (Stage 1) and the
// pairs into quadruplets (Stage 2). Here the target is the source shifted by
// (10, 0) plus a small vertical residual of ±0.1 or ±0.3; the linear-kernel
// MMD cost matches each point to its own shifted copy, and Stage 2 groups the
// pairs whose residuals cancel.
func ExampleMatch() {
	src := psda.Matrix{N: 4, D: 2, F64: []float64{
		-1, 0,
		1, 0,
		0, 3,
		0, -3,
	}}
	tgt := psda.Matrix{N: 4, D: 2, F64: []float64{ // rows in another order than src's
		10, 3.3,
		11, 0.1,
		9, -0.1,
		10, -3.3,
	}}
	m, err := psda.Match(src, tgt, psda.Config{BatchSize: 2, Stages: 2, Discrepancy: psda.MMD, Kernel: psda.Linear})
	if err != nil {
		panic(err)
	}
	fmt.Println("pairs (source, target):", m.Pairs)
	fmt.Println("quadruplets (pair indices):", m.Quads)
	fmt.Printf("certified Stage 1 cost %.4f, Stage 2 gap %.0g\n", m.Stage1Cost, m.Stage2Gap())
	// Output:
	// pairs (source, target): [{0 2} {1 1} {2 0} {3 3}]
	// quadruplets (pair indices): [[0 1] [2 3]]
	// certified Stage 1 cost 0.0500, Stage 2 gap 0
}

// SparseStages tells which path Match takes for each stage. Small problems
// run dense unless the sparse path is forced; with Auto, the Stage 2 of a
// linear-kernel MMD on low-dimensional features with at least 2,000 pairs
// runs sparse, where it is faster.
func ExampleSparseStages() {
	grid := func(n int, shift float64) psda.Matrix { // n distinct 2-D points
		m := psda.Matrix{N: n, D: 2, F64: make([]float64, 2*n)}
		for i := 0; i < n; i++ {
			m.F64[2*i], m.F64[2*i+1] = float64(i%50)+shift, float64(i/50)
		}
		return m
	}
	cfg := psda.Config{BatchSize: 64, Stages: 2, Discrepancy: psda.MMD, Kernel: psda.RBF}
	fmt.Println(psda.SparseStages(grid(500, 0), grid(500, 0.5), cfg))
	cfg.Solver = psda.Sparse
	fmt.Println(psda.SparseStages(grid(500, 0), grid(500, 0.5), cfg))
	cfg.Solver, cfg.Kernel = psda.Auto, psda.Linear
	fmt.Println(psda.SparseStages(grid(2000, 0), grid(2000, 0.5), cfg))
	// Output:
	// false false
	// true true
	// false true
}
