package diverse

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestSampleKDPP compares the frequency of every k-subset with
// det(L_Y)/e_k(L) by enumeration, for a random 6×6 L-ensemble and k = 2, 3.
func TestSampleKDPP(t *testing.T) {
	const n = 6
	rng := rand.New(rand.NewPCG(4, 5))
	b := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			b.Set(i, j, rng.NormFloat64())
		}
	}
	var l mat.SymDense
	l.SymOuterK(1, b)
	var eig mat.EigenSym
	if !eig.Factorize(&l, true) {
		t.Fatal("eigendecomposition failed")
	}
	lam := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	v := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			v[i*n+j] = vecs.At(i, j)
		}
	}
	for _, k := range []int{2, 3} {
		t.Run(string(rune('0'+k)), func(t *testing.T) {
			// Enumerate the subsets as bit masks.
			want := map[int]float64{}
			z := 0.0
			for mask := 0; mask < 1<<n; mask++ {
				var idx []int
				for i := 0; i < n; i++ {
					if mask>>i&1 == 1 {
						idx = append(idx, i)
					}
				}
				if len(idx) != k {
					continue
				}
				sub := mat.NewDense(k, k, nil)
				for a, i := range idx {
					for c, j := range idx {
						sub.Set(a, c, l.At(i, j))
					}
				}
				d := mat.Det(sub)
				want[mask] = d
				z += d
			}
			const draws = 40000
			out := make([]int64, draws*k)
			if err := SampleKDPP(lam, v, n, k, draws, 9, out, nil, nil); err != nil {
				t.Fatal(err)
			}
			got := map[int]float64{}
			for r := 0; r < draws; r++ {
				mask := 0
				for _, i := range out[r*k : (r+1)*k] {
					if mask>>i&1 == 1 {
						t.Fatalf("draw %d repeats row %d", r, i)
					}
					mask |= 1 << i
				}
				got[mask]++
			}
			for mask, w := range want {
				p := w / z
				// 5 binomial standard errors, fixed seed.
				if tol := 5 * math.Sqrt(p*(1-p)/draws); math.Abs(got[mask]/draws-p) > tol+1e-12 {
					t.Errorf("subset %06b: frequency %.4f, want %.4f ± %.4f", mask, got[mask]/draws, p, tol)
				}
			}
		})
	}
}

func BenchmarkSampleKDPP(b *testing.B) {
	for _, k := range []int{8, 64} {
		b.Run(string(rune('0'+k/8)), func(b *testing.B) {
			const n, N = 4000, 640
			rng := rand.New(rand.NewPCG(1, 1))
			lam := make([]float64, N)
			v := make([]float64, n*N)
			for i := range lam {
				lam[i] = rng.Float64()
			}
			for i := range v {
				v[i] = rng.NormFloat64() / math.Sqrt(n)
			}
			out := make([]int64, k)
			for it := 0; it < b.N; it++ {
				if err := SampleKDPP(lam, v, n, k, 1, uint64(it), out, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSampleKDPPRefuses checks that non-finite eigenvalues and eigenvectors
// are refused with a message naming the entry (issue 25: a NaN in v was
// accepted and gave draws decided by comparisons with NaN).
func TestSampleKDPPRefuses(t *testing.T) {
	lam, v := []float64{1, 2}, []float64{1, 0, 0, 1}
	with := func(s []float64, i int, x float64) []float64 {
		s = append([]float64(nil), s...)
		s[i] = x
		return s
	}
	for _, tc := range []struct {
		name   string
		lam, v []float64
		want   string
	}{
		{"NaN in v", lam, with(v, 2, math.NaN()), "v[2] = NaN (row 1, eigenvector 0)"},
		{"-Inf in v", lam, with(v, 1, math.Inf(-1)), "v[1] = -Inf"},
		{"+Inf eigenvalue", with(lam, 1, math.Inf(1)), v, "lam[1] = +Inf"},
		{"NaN eigenvalue", with(lam, 0, math.NaN()), v, "lam[0] = NaN"},
		{"negative eigenvalue", with(lam, 0, -1), v, "lam[0] = -1"},
	} {
		err := SampleKDPP(tc.lam, tc.v, 2, 1, 3, 0, make([]int64, 3), nil, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
	// k larger than n (two eigenvectors of one row: an input no
	// eigendecomposition gives) names k and n, not an internal fault.
	err := SampleKDPP(lam, []float64{1, 1}, 1, 2, 1, 0, make([]int64, 2), nil, nil)
	if err == nil || !strings.Contains(err.Error(), "k = 2 rows of n = 1") || strings.Contains(err.Error(), "internal") {
		t.Errorf("k = 2 > n = 1: err = %v, want it to name k and n", err)
	}
}
