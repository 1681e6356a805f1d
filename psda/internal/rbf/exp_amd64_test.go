//go:build !noasm

package rbf

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/psda-dev/psda/psda/internal/gram"
)

// expInputs returns squared distances that cover the exp's range and its
// edges for gamma: 0 and −0, tiny and subnormal values, the rounding
// boundaries of m = round(x·log2 e), the underflow limit gamma·src = 690
// and its neighbours, huge values, +Inf, NaN, small negatives (a Gram
// distance can round below 0), and random ones, shuffled so that each kind
// lands on every lane and in the tails.
func expInputs(rng *rand.Rand, gamma float64) []float64 {
	xs := []float64{0, math.Copysign(0, -1), 5e-324, 1e-310, 1e-300, 1e-17, 1e-8,
		math.MaxFloat64, 1e300, math.Inf(1), math.NaN(), -1e-12, -0.5, -3}
	for m := 0.0; m <= 1000; m++ { // x = (m ± 1/2)·ln 2: |r| at its largest
		for _, f := range []float64{-0.5, 0.5} {
			x := (m + f) * math.Ln2
			xs = append(xs, math.Nextafter(x, 0), x, math.Nextafter(x, math.Inf(1)))
		}
	}
	for i := range xs {
		xs[i] /= gamma
	}
	lim := float64(expUnderflow) / gamma
	for _, v := range []float64{lim, math.Nextafter(lim, 0), math.Nextafter(lim, 1e9), math.Nextafter(math.Nextafter(lim, 0), 0)} {
		xs = append(xs, v)
	}
	for range 3000 {
		xs = append(xs, rng.Float64()*800/gamma, math.Exp(rng.Float64()*60-50)/gamma)
	}
	rng.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	return xs
}

// sameBits reports the first index where a and b differ in their bits.
func sameBits(a, b []float64) (int, bool) {
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return i, false
		}
	}
	return -1, true
}

// guarded returns a slice of n values from fill inside a buffer whose
// elements around it (and the gap to the next 64 bytes) hold a sentinel,
// starting at element off of the buffer: checkGuard finds any write past
// either end.
func guarded(n, off int, fill func(i int) float64) ([]float64, func(t *testing.T, what string)) {
	buf := make([]float64, off+n+9)
	const sentinel = -12345.678
	for i := range buf {
		buf[i] = sentinel
	}
	s := buf[off : off+n]
	for i := range s {
		s[i] = fill(i)
	}
	return s, func(t *testing.T, what string) {
		t.Helper()
		for i, v := range buf {
			if (i < off || i >= off+n) && v != sentinel {
				t.Fatalf("%s: element %d outside the slice [%d, %d) written: %v", what, i, off, off+n, v)
			}
		}
	}
}

var testGammas = []float64{0.001, 0.01, 0.1, 1, 10, 1.0 / 3, 0.7, 1e-6, 1e4}

// TestExpNeg512SameAsAVX2 checks the AVX-512 exp against the AVX2 one bit
// for bit, lane by lane: every input kind of expInputs, every length 0..40
// (the opmask tails) at several alignments, with and without acc.
func TestExpNeg512SameAsAVX2(t *testing.T) {
	if !gram.HasAVX512 {
		t.Skip("no AVX-512 on this CPU")
	}
	rng := rand.New(rand.NewPCG(5, 12))
	for _, gamma := range testGammas {
		xs := expInputs(rng, gamma)
		// One long row: the main loop on every input.
		for _, acc := range []bool{false, true} {
			init := make([]float64, len(xs))
			for i := range init {
				init[i] = rng.NormFloat64()
			}
			y, z := slices.Clone(init), slices.Clone(init)
			expNegY(y, xs, gamma, acc)
			expNegZ(z, xs, gamma, acc)
			if i, ok := sameBits(y, z); !ok {
				t.Fatalf("gamma %v acc %v: exp(−γ·%v) %v (AVX-512) != %v (AVX2), %#x != %#x",
					gamma, acc, xs[i], z[i], y[i], math.Float64bits(z[i]), math.Float64bits(y[i]))
			}
		}
		// Short rows: the tails.
		for n := 0; n <= 40; n++ {
			for _, off := range []int{0, 1, 3} {
				for _, acc := range []bool{false, true} {
					at := rng.IntN(len(xs) - n)
					src := xs[at : at+n]
					init := func(i int) float64 { return float64(i) - 0.25 }
					y, checkY := guarded(n, off, init)
					z, checkZ := guarded(n, off, init)
					expNegY(y, src, gamma, acc)
					expNegZ(z, src, gamma, acc)
					what := fmt.Sprintf("gamma %v n %d off %d acc %v", gamma, n, off, acc)
					checkY(t, what+" AVX2")
					checkZ(t, what+" AVX-512")
					if i, ok := sameBits(y, z); !ok {
						t.Fatalf("%s: lane %d, exp(−γ·%v) %v (AVX-512) != %v (AVX2)", what, i, src[i], z[i], y[i])
					}
				}
			}
		}
	}
}

// TestPowNeg512SameAsAVX2 checks the AVX-512 power against the AVX2 one
// (whose tail is powNegGeneric) bit for bit: the mixture's ratios m, bases
// from the exp and arbitrary ones, every length 0..40 at several
// alignments.
func TestPowNeg512SameAsAVX2(t *testing.T) {
	if !gram.HasAVX512 {
		t.Skip("no AVX-512 on this CPU")
	}
	rng := rand.New(rand.NewPCG(7, 3))
	for _, m := range []int{1, 2, 3, 5, 10, 14, 16} {
		for _, gamma := range testGammas {
			src := expInputs(rng, gamma)
			base := make([]float64, len(src))
			expNegY(base, src, gamma/float64(m), false)
			for i := range base { // some arbitrary bases
				switch rng.IntN(8) {
				case 0:
					base[i] = rng.Float64()
				case 1:
					base[i] = []float64{0, 1, 1e-300, math.NaN(), 2, 0.5}[rng.IntN(6)]
				}
			}
			dst := make([]float64, len(src))
			for i := range dst {
				dst[i] = rng.NormFloat64()
			}
			// One long row, then the tails.
			dy, ey, dz, ez := slices.Clone(dst), slices.Clone(base), slices.Clone(dst), slices.Clone(base)
			powNegY(dy, ey, src, gamma, m)
			powNegZ(dz, ez, src, gamma, m)
			if i, ok := sameBits(ey, ez); !ok {
				t.Fatalf("m %d gamma %v: e %v^m = %v (AVX-512) != %v (AVX2)", m, gamma, base[i], ez[i], ey[i])
			}
			if i, ok := sameBits(dy, dz); !ok {
				t.Fatalf("m %d gamma %v: dst %v (AVX-512) != %v (AVX2)", m, gamma, dz[i], dy[i])
			}
			for n := 0; n <= 40; n++ {
				for _, off := range []int{0, 1, 5} {
					at := rng.IntN(len(src) - n)
					s := src[at : at+n]
					fillE := func(i int) float64 { return base[at+i] }
					fillD := func(i int) float64 { return dst[at+i] }
					dy, cdy := guarded(n, off, fillD)
					ey, cey := guarded(n, off, fillE)
					dz, cdz := guarded(n, off, fillD)
					ez, cez := guarded(n, off, fillE)
					powNegY(dy, ey, s, gamma, m)
					powNegZ(dz, ez, s, gamma, m)
					what := fmt.Sprintf("m %d gamma %v n %d off %d", m, gamma, n, off)
					cdy(t, what+" AVX2 dst")
					cey(t, what+" AVX2 e")
					cdz(t, what+" AVX-512 dst")
					cez(t, what+" AVX-512 e")
					if i, ok := sameBits(ey, ez); !ok {
						t.Fatalf("%s: lane %d, e %v^m = %v (AVX-512) != %v (AVX2)", what, i, base[at+i], ez[i], ey[i])
					}
					if i, ok := sameBits(dy, dz); !ok {
						t.Fatalf("%s: lane %d, dst %v (AVX-512) != %v (AVX2)", what, i, dz[i], dy[i])
					}
				}
			}
		}
	}
}

// TestRowFollowsGramPath checks that the mixture takes the AVX-512
// exponentials exactly when the Gram engine's active path is "avx512", and
// that its rows have the same bits on every path.
func TestRowFollowsGramPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ds := expInputs(rng, 1)
	k := New(defaultGammas)
	want := make([]float64, len(ds))
	k.Row(want, ds, make([]float64, len(ds)))
	for _, path := range gram.Paths() {
		prev, err := gram.UsePath(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := use512(); got != (path == "avx512") {
			t.Errorf("on Gram path %q the exponentials use AVX-512: %v", path, got)
		}
		for n := 0; n <= 40; n++ {
			got, e := make([]float64, n), make([]float64, n)
			k.Row(got, ds[:n], e)
			if i, ok := sameBits(got, want[:n]); !ok {
				t.Errorf("path %s n %d: κ(%v) = %v, on %s %v", path, n, ds[i], got[i], gram.Paths()[0], want[i])
			}
		}
		gram.UsePath(prev)
	}
}
