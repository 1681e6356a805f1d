package assign

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// This file checks the dense passes that skip entries with package scan
// (rowPass, tightenWithin, certifyMatching; the blossom start's repair is
// TestBlossomLoweringSerial's) against the plain loops they replaced, bit
// for bit, on tie-heavy matrices whose rows are not a multiple of the
// scans' eight-entry blocks.

// tieMatrix returns a symmetric n×n matrix of few distinct values (ties
// everywhere, signed zeros among them), with a few entries falling along
// each row so that running minima change often.
func tieMatrix(rng *rand.Rand, n int) []float64 {
	c := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			x := float64(rng.IntN(7)-2) / 4
			if x == 0 && rng.IntN(2) == 0 {
				x = math.Copysign(0, -1)
			}
			if rng.IntN(13) == 0 {
				x = -float64(j) / float64(n) // falling along row i
			}
			c[i*n+j], c[j*n+i] = x, x
		}
	}
	return c
}

// TestRowPassPlain checks rowPass's scale and column minima against the
// plain loop over the off-diagonal entries, for several worker counts,
// and that a NaN or an infinity anywhere off the diagonal makes the scale
// +Inf.
func TestRowPassPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 7))
	for _, n := range []int{2, 9, 37, 130} {
		c := tieMatrix(rng, n)
		for i := 0; i < n; i++ {
			c[i*n+i] = -9 // ignored
		}
		// The largest magnitude in one entry, not a column's minimum:
		// only the scale's test stops a scan there.
		if i, j := n-1, rng.IntN(n-1); n > 2 {
			c[i*n+j] = 1.5
		}
		scale, lo := rowPassPlain(c, n)
		forWorkers(t, func(w int) {
			gs, glo := rowPass(c, n)
			if gs != scale {
				t.Fatalf("n=%d, %d workers: scale %v, want %v", n, w, gs, scale)
			}
			for j := range lo {
				// A minimum's zero may differ in sign between the parts'
				// orders (rowPass's comment); its value may not.
				if glo[j] != lo[j] || glo[j] != 0 && math.Float64bits(glo[j]) != math.Float64bits(lo[j]) {
					t.Fatalf("n=%d, %d workers: column %d's minimum %v, want %v", n, w, j, glo[j], lo[j])
				}
			}
		})
		for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			i, j := rng.IntN(n), rng.IntN(n)
			if i == j {
				continue
			}
			old := c[i*n+j]
			c[i*n+j] = bad
			if gs, _ := rowPass(c, n); !math.IsInf(gs, 1) {
				t.Fatalf("n=%d: c[%d][%d] = %v, scale %v, want +Inf", n, i, j, bad, gs)
			}
			c[i*n+j] = old
		}
	}
}

// TestTightenWithinPlain checks tightenWithin's potentials and kept rows
// against its plain loop (u[i] = min_j c[i][j] − v[j], then the assigned
// entry's test), on tie-heavy costs with the diagonal forbidden and v with
// ties, signed zeros and a NaN column.
func TestTightenWithinPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 8))
	for _, n := range []int{3, 17, 101} {
		c := tieMatrix(rng, n)
		for i := 0; i < n; i++ {
			c[i*n+i] = inf
		}
		v := make([]float64, n)
		for j := range v {
			v[j] = float64(rng.IntN(5)-2) / 4
			if j%11 == 10 {
				v[j] = math.NaN() // never the minimum
			}
		}
		perm := rng.Perm(n)
		for _, rel := range []float64{0, 1e-3, 0.5} {
			wantU, wantCol := make([]float64, n), make([]int, n)
			for i := 0; i < n; i++ {
				m := inf
				for j := 0; j < n; j++ {
					if h := c[i*n+j] - v[j]; h < m {
						m = h
					}
				}
				wantU[i], wantCol[i] = m, perm[i]
				j := perm[i]
				if r := c[i*n+j] - v[j]; r-m <= rel*(math.Abs(c[i*n+j])+math.Abs(v[j])) {
					wantU[i] = r
				} else {
					wantCol[i] = -1
				}
			}
			s := newLSAP(c, n, n)
			copy(s.v, v)
			s.adopt(perm)
			s.tightenWithin(rel)
			for i := range wantU {
				if math.Float64bits(s.u[i]) != math.Float64bits(wantU[i]) || s.col4row[i] != wantCol[i] {
					t.Fatalf("n=%d rel=%v row %d: u %v, column %d; want %v, %d", n, rel, i, s.u[i], s.col4row[i], wantU[i], wantCol[i])
				}
			}
		}
	}
}

// TestCertifyMatchingFirstInfeasible checks that CertifyMatching names the
// first infeasible edge in row order, as its plain loop over every row
// did, when a single edge of reduced cost just below −tol sits at each
// position of a row (every lane of the scan's blocks and its tail), and
// that an edge at exactly −tol passes.
func TestCertifyMatchingFirstInfeasible(t *testing.T) {
	const n, tol = 22, 1.0 / (1 << 20) // 1 − tol and 1 − 2·tol exact
	c := make([]float64, n*n)
	for i := range c {
		c[i] = 1
	}
	m := &ExactMatching{Mate: make([]int, n), Cost: float64(n / 2), Duals: MatchingDuals{Y: make([]float64, n), In: make([]int, n)}}
	for v := range m.Mate {
		m.Mate[v], m.Duals.Y[v], m.Duals.In[v] = v^1, 0.5, -1
	}
	if err := CertifyMatching(c, n, m, tol); err != nil {
		t.Fatalf("a valid certificate fails: %v", err)
	}
	for v := 0; v < n; v++ {
		for w := 0; w < n; w++ {
			if w == v || w == v^1 {
				continue
			}
			c[v*n+w], c[w*n+v] = 1-tol, 1-tol // reduced cost −tol: feasible
			if err := CertifyMatching(c, n, m, tol); err != nil {
				t.Fatalf("edge (%d, %d) at −tol: %v", v, w, err)
			}
			c[v*n+w], c[w*n+v] = 1-2*tol, 1-2*tol
			err := CertifyMatching(c, n, m, tol)
			first := fmt.Sprintf("(%d, %d)", min(v, w), max(v, w))
			if err == nil || !strings.Contains(err.Error(), first) {
				t.Fatalf("edge (%d, %d) infeasible: %v, want it named as %s", v, w, err, first)
			}
			c[v*n+w], c[w*n+v] = 1, 1
		}
	}
}

// ulpSteps returns n values from x, each the next float64 after the one
// before towards to: along a row of them every entry moves a running
// minimum or maximum by one unit in the last place, which a scan whose
// bound were off by any rounding would skip.
func ulpSteps(n int, x, to float64) []float64 {
	s := make([]float64, n)
	for j := range s {
		s[j], x = x, math.Nextafter(x, to)
	}
	return s
}

// TestScanPassesUlpSteps checks the dense passes that skip entries by
// scan against their plain loops, bit for bit, on rows whose entries each
// beat the running bound by one ulp (minDiff's minimum, the blossom
// repair's lowSlack, rowPass's scale and column minima), and that
// CertifyMatching names an edge whose reduced cost is one ulp below −tol.
func TestScanPassesUlpSteps(t *testing.T) {
	for _, n := range []int{1, 7, 8, 9, 23, 64} {
		// minDiff: min_j row[j] − v[j], every entry a new minimum.
		row, v := ulpSteps(n, 1, 0), make([]float64, n)
		if got, want := minDiff(row, v), row[n-1]; math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("n=%d: minDiff %v, want %v", n, got, want)
		}
		// lowSlackDense: the most negative c − y_v − y_w, vertex 0's own
		// entry excluded, every entry a new low.
		costs, y := ulpSteps(n, -1, -2), make([]float64, n)
		want := 0.0
		for w := 1; w < n; w++ {
			want = costs[w]
		}
		if got := lowSlackDense(costs, 0, y); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("n=%d: lowSlackDense %v, want %v", n, got, want)
		}
	}
	// rowPass: in row order, |c| rising by one ulp an entry while every
	// column's minimum stays its first entry, and every column falling
	// while |c| does.
	for _, tc := range [][3]float64{{2, 1, 2}, {9, 1, 2}, {30, 1, 2}, {2, 2, 1}, {9, 2, 1}, {30, 2, 1}} {
		n := int(tc[0])
		c := ulpSteps(n*n, tc[1], tc[2])
		scale, lo := rowPassPlain(c, n)
		forWorkers(t, func(w int) {
			gs, glo := rowPass(c, n)
			if gs != scale || !sameBits(glo, lo) {
				t.Fatalf("n=%d, %d workers: scale %v, minima %v; want %v, %v", n, w, gs, glo, scale, lo)
			}
		})
	}
	// CertifyMatching: the first edge one ulp below −tol, in every lane.
	const n, tol = 22, 1.0 / (1 << 20)
	c := make([]float64, n*n)
	for i := range c {
		c[i] = 1 - tol // reduced cost −tol: feasible
	}
	m := &ExactMatching{Mate: make([]int, n), Cost: float64(n / 2), Duals: MatchingDuals{Y: make([]float64, n), In: make([]int, n)}}
	for v := range m.Mate {
		m.Mate[v], m.Duals.Y[v], m.Duals.In[v] = v^1, 0.5, -1
		c[v*n+v^1] = 1
	}
	if err := CertifyMatching(c, n, m, tol); err != nil {
		t.Fatalf("a valid certificate fails: %v", err)
	}
	for w := 2; w < n; w++ {
		below := math.Nextafter(1-tol, 0) // (c − 0.5) − 0.5 = −tol − ulp, exactly
		c[w], c[w*n] = below, below
		first := fmt.Sprintf("(0, %d)", w)
		if err := CertifyMatching(c, n, m, tol); err == nil || !strings.Contains(err.Error(), first) {
			t.Fatalf("edge (0, %d) one ulp below −tol: %v, want it named as %s", w, err, first)
		}
		c[w], c[w*n] = 1-tol, 1-tol
	}
}

// rowPassPlain is rowPass as a plain loop in row order: the largest
// |off-diagonal entry| and each column's first least off-diagonal entry.
func rowPassPlain(c []float64, n int) (scale float64, lo []float64) {
	lo = make([]float64, n)
	for j := range lo {
		lo[j] = inf
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if x := c[i*n+j]; i != j {
				scale = max(scale, math.Abs(x))
				if x < lo[j] {
					lo[j] = x
				}
			}
		}
	}
	return scale, lo
}
