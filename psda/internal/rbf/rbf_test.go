package rbf

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/psda-dev/psda/psda/internal/gram"
	"github.com/psda-dev/psda/psda/internal/testref"
)

// defaultGammas is the paper's mixture (psda.DefaultGammas).
var defaultGammas = []float64{0.001, 0.01, 0.1, 1, 10}

func TestRBFMixturePlan(t *testing.T) {
	for _, tc := range []struct {
		name   string
		gammas []float64
		pow    []int
		pow32  []int
	}{
		{"paper", defaultGammas, []int{0, 10, 10, 0, 10}, []int{0, 10, 10, 10, 10}},
		{"unsorted", []float64{1, 0.001, 10}, []int{0, 0, 10}, []int{0, 0, 10}},
		{"non-integer", []float64{0.7, 0.03, 3}, []int{0, 0, 0}, []int{0, 0, 0}},
		{"near-integer ratio", []float64{0.7, 0.05, 3}, []int{0, 14, 0}, []int{0, 14, 0}},
		{"powers of two", []float64{1, 2, 4, 8, 16, 32, 64, 128}, []int{0, 2, 2, 2, 2, 2, 2, 0}, []int{0, 2, 2, 2, 2, 2, 2, 2}},
		{"long chain", []float64{1, 16, 256, 4096, 65536}, []int{0, 16, 0, 16, 0}, []int{0, 16, 16, 16, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := Plan(tc.gammas, true)
			if !slices.Equal(k.pow, tc.pow) || !slices.Equal(k.pow32, tc.pow32) {
				t.Fatalf("pow = %v, pow32 = %v, want %v and %v", k.pow, k.pow32, tc.pow, tc.pow32)
			}
			kappa := testref.RBFKappa(tc.gammas)
			// row32, over a row long enough for the vector code and its
			// tail, up to the underflow cut of every gamma.
			var ds []float64
			for d := 0.0; d < 2e5; d = d*1.05 + 1e-6 {
				ds = append(ds, d)
			}
			got, e := make([]float64, len(ds)), make([]float64, len(ds))
			k.Row32(got, ds, e)
			worst := 0.0
			for j, d := range ds {
				want := kappa([]float64{0}, []float64{math.Sqrt(d)})
				worst = max(worst, math.Abs(got[j]-want)/k.ChainErr32())
			}
			if worst > 1 {
				t.Errorf("row32 off by %.3g × chainErr32", worst)
			}
			for _, k := range []*Mixture{k, Plan(tc.gammas, false), New(tc.gammas)} {
				for _, d := range []float64{0, 1e-9, 0.3, 2, 17, 150, 700, 5e4} {
					got, want := k.Eval(d), kappa([]float64{0}, []float64{math.Sqrt(d)})
					if math.Abs(got-want) > 1e-13*float64(len(tc.gammas)) {
						t.Errorf("pow %v: κ(D=%v) = %.17g, want %.17g", k.pow, d, got, want)
					}
				}
			}
		})
	}
}

// onEveryPath runs f with each of the Gram engine's paths active: the
// exponentials follow it (gram.ActivePath).
func onEveryPath(t *testing.T, f func(t *testing.T)) {
	for _, path := range gram.Paths() {
		t.Run(path, func(t *testing.T) {
			prev, err := gram.UsePath(path)
			if err != nil {
				t.Fatal(err)
			}
			defer gram.UsePath(prev)
			f(t)
		})
	}
}

// TestPowNeg compares powNeg (assembly where available, on each path) with
// powNegGeneric bit for bit, for every tail length, masked and unmasked
// lanes, and with x^m computed by math.Pow.
func TestPowNeg(t *testing.T) { onEveryPath(t, testPowNeg) }

func testPowNeg(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, m := range []int{1, 2, 3, 10, 16} {
		for n := 0; n <= 13; n++ {
			src, e := make([]float64, n), make([]float64, n)
			for i := range src {
				src[i] = rng.Float64() * 150 // gamma = 10: masked past 69
				e[i] = math.Exp(-src[i] * 10 / float64(m))
			}
			dst := make([]float64, n)
			for i := range dst {
				dst[i] = float64(i)
			}
			gd, ge := slices.Clone(dst), slices.Clone(e)
			powNeg(dst, e, src, 10, m)
			powNegGeneric(gd, ge, src, 10, m)
			for i := range src {
				want := 0.0 // x^m by math.Pow, 0 past the underflow cut
				if 10*src[i] <= expUnderflow {
					want = math.Pow(math.Exp(-src[i]*10/float64(m)), float64(m))
				}
				if e[i] != ge[i] || dst[i] != gd[i] || math.Abs(e[i]-want) > 1e-14*want || gd[i] != float64(i)+ge[i] {
					t.Fatalf("m=%d n=%d i=%d: e %.17g dst %.17g, generic %.17g %.17g, want e %.17g", m, n, i, e[i], dst[i], ge[i], gd[i], want)
				}
			}
		}
	}
}

// TestExpNeg compares the vectorised exp (on each path) with math.Exp over
// the whole range the RBF mixture uses, including the underflow cut and
// every tail length.
func TestExpNeg(t *testing.T) { onEveryPath(t, testExpNeg) }

func testExpNeg(t *testing.T) {
	for n := 1; n <= 17; n++ {
		src := make([]float64, 0, 4000)
		for x := 0.0; x < 720; x = x*1.01 + 1e-3 {
			src = append(src, x)
		}
		src = src[:len(src)/n*n]
		got := make([]float64, len(src))
		for i := 0; i < len(src); i += n {
			expNeg(got[i:i+n], src[i:i+n], 1, false)
		}
		for i, x := range src {
			want := math.Exp(-x)
			if x > expUnderflow {
				want = 0
			}
			if math.Abs(got[i]-want) > 4e-16*want {
				t.Fatalf("n=%d: exp(-%v) = %.17g, want %.17g", n, x, got[i], want)
			}
		}
	}
}
