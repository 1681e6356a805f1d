package psda

// This file holds the sparse stages' settings of the pricing loop,
// assign.Pricing (docs/design.md, "The pricing loop"), which the dense
// LSAP's warm start runs too. psda's side of the loop is the models
// (sparse1.go, sparse.go: cross parts by Gram passes, float32 bounds,
// column copies and dummies); each stage builds its assign.Pricing, run to
// the certificate (no MaxPasses or MaxAdd) keeping sparseAdd edges a row.

// sparseK is the number of candidate edges kept per row and per column by
// the first pass of Stage 2, and a third of that of Stage 1, whose nearest
// neighbours predict the optimal partners less well (at n = 50,000, d = 512,
// 64 per row left 100,000 violated edges and a second full pricing pass;
// at n = 20,000, 192 left 3,500 and a pass over 2% of the rows). sparseAdd
// is the number of edges a pricing pass keeps per row (96: clustered data
// can have dozens of violated edges per row after the first solve).
// Variables so that tests can force several pricing rounds.
var sparseK, sparseAdd = 64, 96

// sparseTrace, when set (benchmarks), receives one line per sparse round.
var sparseTrace func(format string, args ...any)

func trace(format string, args ...any) {
	if sparseTrace != nil {
		sparseTrace(format, args...)
	}
}

// lowerBy sets tau[i] −= e[i] + emax.
func lowerBy(tau, e []float64, emax float64) {
	for i := range tau {
		tau[i] -= e[i] + emax
	}
}
