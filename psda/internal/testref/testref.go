// Package testref holds the references that the Go tests of psda and its
// internal packages share: a relative comparison of vectors, the RBF
// mixture evaluated directly from its definition, the paper's cost
// matrices evaluated from its formulas (costref.go), and the random inputs
// and CPU timers of the tests and benchmarks (inputs.go). Only test files
// import it.
package testref

import (
	"math"
	"testing"
)

// CloseTo fails t unless got matches want entry by entry to tol relative to
// the larger of want's largest magnitude and floor (floor keeps a comparison
// of near-zero vectors from demanding absolute agreement).
func CloseTo(t testing.TB, name string, got, want []float64, tol, floor float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: len %d, want %d", name, len(got), len(want))
	}
	scale := floor
	for _, v := range want {
		scale = max(scale, math.Abs(v))
	}
	for i := range got {
		if d := math.Abs(got[i] - want[i]); !(d <= tol*scale) {
			t.Fatalf("%s: entry %d = %.17g, want %.17g (|diff| %.3g, scale %.3g)", name, i, got[i], want[i], d, scale)
		}
	}
}

// RBFKappa returns the RBF mixture κ(x, y) = Σ_γ exp(−γ‖x − y‖²) (the
// kernel of docs/method.md) evaluated directly, one pair at a time, as the
// independent reference for the blocked and vectorised implementations.
func RBFKappa(gammas []float64) func(x, y []float64) float64 {
	return func(x, y []float64) float64 {
		d := 0.0
		for i := range x {
			d += (x[i] - y[i]) * (x[i] - y[i])
		}
		s := 0.0
		for _, g := range gammas {
			s += math.Exp(-g * d)
		}
		return s
	}
}

// Rel returns |a − b|/|b| (|a − b| when b = 0): relative, whatever the
// scale of the costs.
func Rel(a, b float64) float64 {
	if b == 0 {
		return math.Abs(a)
	}
	return math.Abs(a-b) / math.Abs(b)
}
