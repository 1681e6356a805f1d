package assign

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// The certificates' answers on costs that are not valid (NaN, −Inf), where
// their one-test passes over c must still name the bad entry.

// TestCertifyRefusesMinusInf checks that Certify names a −Inf entry of c
// wherever its one-test pass would not see it, as its check of c did
// before the pass: with tol = +Inf (c+tol is NaN there), and with
// potentials whose sum overflows to −Inf (U+V <= c holds at −Inf) and a
// certificate otherwise valid. The −Inf sits off the assignment, in a row
// after the first chunk.
func TestCertifyRefusesMinusInf(t *testing.T) {
	const n = 1000                // 16 chunks of 65 rows
	big := math.MaxFloat64 * 0.75 // two of them sum to +Inf
	for _, tc := range []struct {
		name     string
		tol      float64
		overflow bool
	}{
		{"tol=+Inf", math.Inf(1), false},
		{"U+V overflows", 1e-9, true},
	} {
		c := make([]float64, n*n)
		sol := &Solution{Col4Row: make([]int, n), U: make([]float64, n), V: make([]float64, n)}
		for i := range sol.Col4Row {
			sol.Col4Row[i] = i
		}
		c[700*n+3] = math.Inf(-1)
		if tc.overflow {
			// U[700] = V[3] = −big, U[3] = big: row 700 tight at its
			// own column, row 3 at column 3, its other entries raised.
			sol.U[700], sol.V[3], sol.U[3] = -big, -big, big
			c[700*n+700] = -big
			for j := 0; j < n; j++ {
				if j != 3 {
					c[3*n+j] = big
				}
			}
			sol.Cost = -big
		}
		forWorkers(t, func(w int) {
			err := Certify(c, n, n, sol, tc.tol)
			if err == nil || !strings.Contains(err.Error(), "c[700][3] = -Inf") {
				t.Fatalf("%s, %d workers: Certify = %v, want the −Inf at c[700][3]", tc.name, w, err)
			}
		})
		c[700*n+3] = 0 // without it the certificate holds
		if err := Certify(c, n, n, sol, tc.tol); err != nil {
			t.Fatalf("%s: Certify without the −Inf = %v, want nil", tc.name, err)
		}
	}
}

// TestCertifyMatchingRefusesNaN checks that CertifyMatching names a NaN or
// −Inf cost off the matching, in a row after the first chunk, rather than
// accept the duals there (c − Y_i − Y_j >= −tol fails at NaN).
func TestCertifyMatchingRefusesNaN(t *testing.T) {
	const n = 600 // 6 chunks of 109 rows
	c := stage2Cost(n, 8)
	pm, err := MinWeightPerfectMatching(c, n)
	if err != nil {
		t.Fatal(err)
	}
	m := &ExactMatching{Mate: pm.Mate, Cost: pm.Cost, Duals: pm.Duals}
	tol := PriceTol(c)
	if err := CertifyMatching(c, n, m, tol); err != nil {
		t.Fatalf("the solver's matching fails: %v", err)
	}
	v, w := 400, 17
	if m.Mate[v] == w {
		w++
	}
	for _, x := range []float64{math.NaN(), math.Inf(-1)} {
		old := c[v*n+w]
		c[v*n+w], c[w*n+v] = x, x
		forWorkers(t, func(k int) {
			err := CertifyMatching(c, n, m, tol)
			want := fmt.Sprintf("c[%d][%d] = %v", w, v, x)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("%d workers: CertifyMatching = %v, want an error naming %s", k, err, want)
			}
		})
		c[v*n+w], c[w*n+v] = old, old
	}
}
