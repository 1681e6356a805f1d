package psda

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/psda-dev/psda/psda/internal/feat"
)

// Matrix is a read-only, row-major view of N feature vectors of dimension D:
// exactly one of its fields F32 and F64 holds the N*D values, and float32
// input is never converted to float64 as a whole. At(i, j) returns an
// element and Row(i, dst) copies a row, both as float64. It is defined in
// internal/feat, below the cost models that read it.
type Matrix = feat.Matrix

// validateMatrix checks m's shape and finiteness; name is the argument's
// name in messages.
func validateMatrix(m Matrix, name string) error {
	if m.N < 1 || m.D < 1 {
		return fmt.Errorf("psda: %s has shape (%d, %d): need at least one row and one feature column", name, m.N, m.D)
	}
	if (m.F32 == nil) == (m.F64 == nil) {
		return fmt.Errorf("psda: %s must hold exactly one of float32 or float64 data", name)
	}
	n := len(m.F64)
	if m.F32 != nil {
		n = len(m.F32)
	}
	if n != m.N*m.D {
		return fmt.Errorf("psda: %s has %d values, want N*D = %d*%d = %d", name, n, m.N, m.D, m.N*m.D)
	}
	for i := 0; i < m.N; i++ {
		for j := 0; j < m.D; j++ {
			if v := m.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("psda: %s[%d, %d] = %s: features must be finite, but %d row(s) of %s contain NaN or Inf, "+
					"the first is row %d; remove or impute them (e.g. replace them by 0 or a column mean)",
					name, i, j, FormatFloat(v), badRows(m, i), name, i)
			}
		}
	}
	return nil
}

// badRows counts the rows of m from first on that hold a NaN or an infinity.
func badRows(m Matrix, first int) int {
	n := 0
	for i := first; i < m.N; i++ {
		for j := 0; j < m.D; j++ {
			if v := m.At(i, j); math.IsNaN(v) || math.IsInf(v, 0) {
				n++
				break
			}
		}
	}
	return n
}

// Discrepancy and kernel names accepted in Config.
const (
	MMD    = "mmd"
	CORAL  = "coral"
	Linear = "linear"
	RBF    = "rbf"
)

// DefaultGammas is the paper's RBF mixture {0.001, 0.01, 0.1, 1, 10}.
var DefaultGammas = []float64{0.001, 0.01, 0.1, 1, 10}

// Config selects the discrepancy whose minibatch estimate PSDA stabilises.
type Config struct {
	BatchSize   int       // per-domain batch size k
	Stages      int       // 1 (Paired) or 2 (Double-paired)
	Discrepancy string    // MMD or CORAL
	Kernel      string    // Linear or RBF; MMD only
	Gammas      []float64 // RBF mixture; nil means DefaultGammas
	// Solver picks how each stage is solved: Dense, Sparse, or Auto (also
	// ""), which chooses per stage by the rule of SparseStages (plan.go)
	// (docs/design.md, "Solver choice"). Both are exact.
	Solver string
	// Monitor, when non-nil, receives Match's progress and lets another
	// goroutine cancel it.
	Monitor *Monitor
}

// gammas returns the RBF mixture in force.
func (c Config) gammas() []float64 {
	if c.Gammas == nil {
		return DefaultGammas
	}
	return c.Gammas
}

// Validate checks everything about c that does not depend on the data: it
// is the one home of these rules, which Match, the C ABI and the Python
// package all apply through it. Its messages name the setting, the value and
// the fix, quote names as 'mmd' and print floats as Python does (1.0, nan),
// so that the Python package passes them on unchanged. Time O(len(Gammas)).
func (c Config) Validate() error {
	switch c.Discrepancy {
	case MMD:
		switch c.Kernel {
		case Linear:
		case RBF:
			if len(c.gammas()) == 0 {
				return fmt.Errorf("psda: gammas is empty: the RBF mixture needs at least one gamma > 0, e.g. gammas = (0.1, 1.0)")
			}
			for _, g := range c.gammas() {
				if !(g > 0) || math.IsInf(g, 0) {
					return fmt.Errorf("psda: gammas contains %s: every gamma must be finite and > 0", FormatFloat(g))
				}
			}
		default:
			return fmt.Errorf("psda: kernel = '%s': want 'rbf' (the paper's RBF mixture) or 'linear'", c.Kernel)
		}
	case CORAL:
	default:
		return fmt.Errorf("psda: discrepancy = '%s': want 'mmd' or 'coral'", c.Discrepancy)
	}
	switch c.Solver {
	case "", Auto, Dense, Sparse:
	default:
		return fmt.Errorf("psda: solver = '%s': want 'auto' (the default; docs/design.md, \"Solver choice\"), 'dense' or 'sparse'", c.Solver)
	}
	if c.Stages != 1 && c.Stages != 2 {
		return fmt.Errorf("psda: stages = %d: want 1 (Paired: source-target pairs) or 2 (Double-paired: quadruplets)", c.Stages)
	}
	if c.BatchSize < 1 {
		return fmt.Errorf("psda: batch_size = %d: must be >= 1 (examples per domain in a batch)", c.BatchSize)
	}
	if c.Discrepancy == CORAL && c.BatchSize < 2 {
		return fmt.Errorf("psda: batch_size = %d with discrepancy = 'coral': covariances need batch_size >= 2", c.BatchSize)
	}
	if c.Stages == 2 && c.BatchSize%2 != 0 {
		return fmt.Errorf("psda: batch_size = %d with stages = 2: quadruplets need an even batch_size (use %d or %d, or stages = 1)",
			c.BatchSize, max(c.BatchSize-1, 2), c.BatchSize+1)
	}
	return nil
}

// ValidateFor is Validate followed by the one rule that depends on the data
// sizes: a batch takes batch_size of the P = max(nSource, nTarget) pairs, so
// batch_size <= P. Callers that convert the features themselves (the Python
// package) use it to fail before any heavy work; Match applies the same
// rules. Time O(len(Gammas)).
func (c Config) ValidateFor(nSource, nTarget int) error {
	if err := c.Validate(); err != nil {
		return err
	}
	return c.fits(nSource, nTarget)
}

// fits checks that c.BatchSize pairs fit in the P = max(nSource, nTarget).
func (c Config) fits(nSource, nTarget int) error {
	if p := max(nSource, nTarget); c.BatchSize > p {
		return fmt.Errorf("psda: batch_size = %d but there are only %d pairs (max(n_source, n_target) = max(%d, %d)): use batch_size <= %d",
			c.BatchSize, p, nSource, nTarget, p)
	}
	return nil
}

// FormatFloat formats v as Python's repr does for the values messages show
// (1.0, 0.001, -1e-300, nan, inf), so that a message reads the same from C,
// Go and Python.
func FormatFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}
