package assign

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// lsapCase is one rectangular problem (nr <= nc) of a batch for SciPy.
type lsapCase struct {
	name   string
	nr, nc int
	c      []float64
}

// scipyCosts returns, for each case, the optimum of
// scipy.optimize.linear_sum_assignment, or +Inf where SciPy reports the
// matrix infeasible; all cases go to one Python process (skipped as
// runPython is).
func scipyCosts(t *testing.T, cases []lsapCase) []float64 {
	t.Helper()
	python := scipyPython(t)
	f := filepath.Join(t.TempDir(), "c.f64")
	var buf []byte
	var shapes []string
	for _, tc := range cases {
		for _, x := range tc.c {
			buf = binary.LittleEndian.AppendUint64(buf, math.Float64bits(x))
		}
		shapes = append(shapes, fmt.Sprintf("(%d, %d)", tc.nr, tc.nc))
	}
	if err := os.WriteFile(f, buf, 0o600); err != nil {
		t.Fatal(err)
	}
	prog := fmt.Sprintf(`import numpy as np
from scipy.optimize import linear_sum_assignment
a = np.fromfile(%q, dtype='<f8')
at = 0
for nr, nc in [%s]:
    m = a[at:at + nr * nc].reshape(nr, nc)
    at += nr * nc
    try:
        r, k = linear_sum_assignment(m)
        print(repr(float(m[r, k].sum())))
    except ValueError as e:
        assert "infeasible" in str(e), e
        print("inf")
`, f, strings.Join(shapes, ", "))
	out, err := exec.Command(python, "-c", prog).CombinedOutput()
	if err != nil {
		t.Fatalf("SciPy reference failed: %v: %s", err, out)
	}
	lines := strings.Fields(string(out))
	if len(lines) != len(cases) {
		t.Fatalf("SciPy printed %d values for %d cases: %s", len(lines), len(cases), out)
	}
	want := make([]float64, len(cases))
	for k, s := range lines {
		if want[k], err = strconv.ParseFloat(s, 64); err != nil {
			t.Fatalf("SciPy printed %q", s)
		}
	}
	return want
}

// checkAgainstSciPy solves every case with Rectangular and compares the
// optimum with SciPy's: the same total up to 1e-12 of the largest finite
// entry on the assignment, or ErrInfeasible where SciPy finds none.
func checkAgainstSciPy(t *testing.T, cases []lsapCase) {
	t.Helper()
	want := scipyCosts(t, cases)
	bad := 0
	for k, tc := range cases {
		s, err := Rectangular(tc.c, tc.nr, tc.nc)
		if want[k] == inf {
			if !errors.Is(err, ErrInfeasible) {
				t.Errorf("%s: SciPy finds it infeasible, Rectangular returned (%v, %v)", tc.name, s != nil, err)
				bad++
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v, SciPy's optimum %v", tc.name, err, want[k])
			bad++
			continue
		}
		scale := 0.0
		for i, j := range s.Col4Row {
			scale = math.Max(scale, math.Abs(tc.c[i*tc.nc+j]))
		}
		if math.Abs(s.Cost-want[k]) > 1e-12*scale*float64(tc.nr) {
			t.Errorf("%s: cost %v, SciPy %v", tc.name, s.Cost, want[k])
			bad++
		}
		if bad > 10 {
			t.Fatal("too many failures")
		}
	}
}

// TestRectangularHugeEntriesAgainstSciPy covers huge finite entries (the
// auction's prices used to grow to their magnitude and hide every cost
// difference below it from the exact phase): a single 1e20 (or −1e20) in a
// Gaussian matrix, a diagonal, a row or a column of them, many seeds each,
// on both the auction path (n < 256) and the warm-start path, whose sparse
// auction had the same flaw.
func TestRectangularHugeEntriesAgainstSciPy(t *testing.T) {
	cases := []lsapCase{{"issue3x3", 3, 3, []float64{1e20, 0, 0, 0, 5, 1, 0, 1, 5}}}
	for _, n := range []int{3, 5, 8, 12, 20, 50, 120, 300} {
		seeds := 25
		if n >= 120 {
			seeds = 6
		}
		for seed := 0; seed < seeds; seed++ {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(n)))
			for _, huge := range []string{"one", "minusOne", "diagonal", "row", "column", "wide"} {
				nr, nc := n, n
				if huge == "wide" {
					nc = n + n/2 + 1
				}
				c := fill(nr*nc, rng.NormFloat64)
				switch huge {
				case "one", "wide":
					c[rng.IntN(nr*nc)] = 1e20
				case "minusOne":
					c[rng.IntN(nr*nc)] = -1e20
				case "diagonal":
					for i := 0; i < n; i++ {
						c[i*n+i] = 1e20 * (1 + rng.Float64())
					}
				case "row":
					for j, i := 0, rng.IntN(n); j < n; j++ {
						c[i*n+j] = 1e20 * (1 + rng.Float64())
					}
				case "column":
					for i, j := 0, rng.IntN(n); i < n; i++ {
						c[i*n+j] = 1e20 * (1 + rng.Float64())
					}
				}
				cases = append(cases, lsapCase{fmt.Sprintf("%s/n=%d/seed=%d", huge, n, seed), nr, nc, c})
			}
		}
	}
	// warmStart's candidates always hold the cyclic entries (i, i+1): huge
	// ones there reached the sparse auction's ε schedule.
	for _, n := range []int{300, 600} {
		for seed := 0; seed < 3; seed++ {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(n)+1))
			for _, huge := range []string{"cyclicOne", "cyclicAll"} {
				c := fill(n*n, rng.NormFloat64)
				for i := 0; i < n; i++ {
					if huge == "cyclicAll" || i == seed {
						c[i*n+(i+1)%n] = 1e20
					}
				}
				cases = append(cases, lsapCase{fmt.Sprintf("%s/n=%d/seed=%d", huge, n, seed), n, n, c})
			}
		}
	}
	checkAgainstSciPy(t, cases)
}

// TestRectangularForbiddenAgainstSciPy covers +Inf (forbidden) entries at
// densities from nearly infeasible to nearly full, square and wide, and
// tie-heavy integers.
func TestRectangularForbiddenAgainstSciPy(t *testing.T) {
	var cases []lsapCase
	rng := rand.New(rand.NewPCG(31, 32))
	for _, n := range []int{2, 5, 20, 100, 300} {
		for _, allowed := range []float64{0.03, 0.1, 0.3, 0.9} {
			for _, wide := range []int{0, 3} {
				for seed := 0; seed < 4; seed++ {
					nr, nc := n, n+wide
					c := fill(nr*nc, func() float64 {
						if rng.Float64() >= allowed {
							return inf
						}
						return float64(1 + rng.IntN(100))
					})
					cases = append(cases, lsapCase{fmt.Sprintf("n=%dx%d/allowed=%v/seed=%d", nr, nc, allowed, seed), nr, nc, c})
				}
			}
		}
	}
	for _, n := range []int{300, 700} {
		for _, top := range []int{2, 10, 100} {
			c := fill(n*n, func() float64 { return float64(rng.IntN(top)) })
			cases = append(cases, lsapCase{fmt.Sprintf("int%d/n=%d", top, n), n, n, c})
		}
	}
	checkAgainstSciPy(t, cases)
}

// TestRectangularForbiddenExhaustive compares with brute force on small
// matrices with +Inf entries, infeasible ones included.
func TestRectangularForbiddenExhaustive(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	infeasible := 0
	for _, sh := range [][2]int{{1, 1}, {2, 2}, {3, 3}, {3, 5}, {4, 4}, {5, 5}, {5, 6}, {6, 6}} {
		nr, nc := sh[0], sh[1]
		for rep := 0; rep < 200; rep++ {
			allowed := rng.Float64()
			c := fill(nr*nc, func() float64 {
				if rng.Float64() >= allowed {
					return inf
				}
				return float64(rng.IntN(5))
			})
			want := bruteAssign(c, nr, nc, 0, 1)
			s, err := Rectangular(c, nr, nc)
			if want == inf {
				infeasible++
				if !errors.Is(err, ErrInfeasible) || s != nil {
					t.Fatalf("%v: got (%v, %v), want ErrInfeasible", c, s, err)
				}
				if !strings.Contains(err.Error(), "cost matrix is infeasible") {
					t.Fatalf("message %q lacks SciPy's wording", err)
				}
				continue
			}
			if err != nil || s.Cost != want {
				t.Fatalf("%v: got (%v, %v), brute force %v", c, s, err, want)
			}
			if err := Certify(c, nr, nc, s, 1e-9); err != nil {
				t.Fatalf("certificate: %v", err)
			}
		}
	}
	if infeasible < 100 {
		t.Fatalf("only %d infeasible cases: the test does not cover them", infeasible)
	}
}

// TestHasPerfectMatching compares the feasibility check with brute force.
func TestHasPerfectMatching(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	for n := 1; n <= 6; n++ {
		for rep := 0; rep < 300; rep++ {
			allowed := rng.Float64()
			c := fill(n*n, func() float64 {
				if rng.Float64() >= allowed {
					return inf
				}
				return 0
			})
			if got, want := hasPerfectMatching(c, n), bruteAssign(c, n, n, 0, 1) < inf; got != want {
				t.Fatalf("n=%d %v: hasPerfectMatching %v, brute force %v", n, c, got, want)
			}
		}
	}
}

// TestCostScaleIgnoresOutliers checks that a minority of huge entries does
// not set the auction's scale, and that it is the range without them.
func TestCostScaleIgnoresOutliers(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 38))
	n := 200
	c := fill(n*n, rng.Float64)
	lo, hi := costRange(c)
	if got := costScale(c); got != hi-lo {
		t.Fatalf("uniform costs: scale %v, want the range %v", got, hi-lo)
	}
	for i := 0; i < n; i++ {
		c[i*n+i] = 1e20
	}
	c[5] = inf
	if got := costScale(c); !(got > 0 && got <= 1000) {
		t.Fatalf("uniform costs with a diagonal of 1e20: scale %v, want at most 1000", got)
	}
	tail := fill(n*n, rng.Float64)
	tail[7] = 100 // a heavy tail, not an outlier: the range stays
	if lo, hi := costRange(tail); costScale(tail) != hi-lo {
		t.Fatalf("uniform costs with one 100: scale %v, want the range %v", costScale(tail), hi-lo)
	}
	if got := costScale([]float64{1e20, 0, 0, 0, 5, 1, 0, 1, 5}); got != 1000 {
		t.Fatalf("issue's 3×3: scale %v, want 1000 (1000× the median 1)", got)
	}
	if got := costScale([]float64{0, 0, 0, 0, 1e20, 0, 0, 0, 3}); got != 3000 {
		t.Fatalf("zero median: scale %v, want 1000× the smallest positive 3", got)
	}
	if got := costScale([]float64{2, 2, inf, 2}); got != 0 {
		t.Fatalf("constant: scale %v, want 0", got)
	}
}
