package assign

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// matrixKind names a family of test cost matrices.
type matrixKind struct {
	name string
	gen  func(rng *rand.Rand, nr, nc int) []float64
}

// kinds are the matrix families every exhaustive test runs on: continuous,
// tie-heavy integers, constant, and negative/large-range values.
var kinds = []matrixKind{
	{"uniform", func(rng *rand.Rand, nr, nc int) []float64 {
		return fill(nr*nc, func() float64 { return rng.Float64() })
	}},
	{"int0to3", func(rng *rand.Rand, nr, nc int) []float64 {
		return fill(nr*nc, func() float64 { return float64(rng.IntN(4)) })
	}},
	{"constant", func(rng *rand.Rand, nr, nc int) []float64 {
		return fill(nr*nc, func() float64 { return 2.5 })
	}},
	{"signedWide", func(rng *rand.Rand, nr, nc int) []float64 {
		return fill(nr*nc, func() float64 { return (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(7))) })
	}},
}

func fill(n int, f func() float64) []float64 {
	c := make([]float64, n)
	for k := range c {
		c[k] = f()
	}
	return c
}

// bruteAssign returns the minimum of Σ c[i][f(i)] over all maps f from rows to
// columns whose column counts lie in [lo, hi], by enumerating all nc^nr maps.
func bruteAssign(c []float64, nr, nc, lo, hi int) float64 {
	best := inf
	f := make([]int, nr)
	count := make([]int, nc)
	var rec func(i int, sum float64)
	rec = func(i int, sum float64) {
		if i == nr {
			for _, k := range count {
				if k < lo {
					return
				}
			}
			best = math.Min(best, sum)
			return
		}
		for j := 0; j < nc; j++ {
			if count[j] == hi {
				continue
			}
			count[j]++
			f[i] = j
			rec(i+1, sum+c[i*nc+j])
			count[j]--
		}
	}
	rec(0, 0)
	return best
}

// tolFor returns a certificate tolerance proportional to the cost scale.
func tolFor(c []float64) float64 {
	m := 0.0
	for _, x := range c {
		m = math.Max(m, math.Abs(x))
	}
	return 1e-9 * (1 + m)
}

// gaussian returns n points in dimension d with N(0, 1/d) coordinates.
func gaussian(rng *rand.Rand, n, d int) [][]float64 {
	p := make([][]float64, n)
	s := 1 / math.Sqrt(float64(d))
	for i := range p {
		p[i] = make([]float64, d)
		for k := range p[i] {
			p[i][k] = rng.NormFloat64() * s
		}
	}
	return p
}

// sqDist returns the nr×nc matrix of squared Euclidean distances.
func sqDist(a, b [][]float64) []float64 {
	c := make([]float64, len(a)*len(b))
	for i, x := range a {
		for j, y := range b {
			s := 0.0
			for k := range x {
				d := x[k] - y[k]
				s += d * d
			}
			c[i*len(b)+j] = s
		}
	}
	return c
}

// perturbation names a change that must make a solution fail Certify.
type perturbation struct {
	name string
	f    func(s *Solution)
}

// certifyAndBreak checks that the solver's answer s passes Certify on the
// nr×nc matrix c and that every perturbed copy of it fails.
func certifyAndBreak(t *testing.T, c []float64, nr, nc int, s *Solution, breaks []perturbation) {
	t.Helper()
	tol := tolFor(c)
	if err := Certify(c, nr, nc, s, tol); err != nil {
		t.Fatalf("certificate of the solver's answer: %v", err)
	}
	for _, p := range breaks {
		bad := &Solution{
			Col4Row: append([]int(nil), s.Col4Row...),
			U:       append([]float64(nil), s.U...),
			V:       append([]float64(nil), s.V...),
			Cost:    s.Cost,
		}
		p.f(bad)
		if err := Certify(c, nr, nc, bad, tol); err == nil {
			t.Errorf("%s: perturbed solution passed the certificate", p.name)
		}
	}
}

// forbidDiagonal returns a copy of the n×n matrix c with +Inf on the
// diagonal: the symmetric assignment relaxation's matrix.
func forbidDiagonal(c []float64, n int) []float64 {
	cc := append([]float64(nil), c...)
	for i := 0; i < n; i++ {
		cc[i*n+i] = inf
	}
	return cc
}

// loadDump reads a file of raw little-endian float64 values (the dumped
// cost matrices and feature snapshots the benchmarks run on).
func loadDump(tb testing.TB, path string) []float64 {
	tb.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if len(raw)%8 != 0 {
		tb.Fatalf("%s: %d bytes, not float64s", path, len(raw))
	}
	c := make([]float64, len(raw)/8)
	for k := range c {
		c[k] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*k:]))
	}
	return c
}
