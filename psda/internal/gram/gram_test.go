package gram

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/psda-dev/psda/psda/internal/testref"
)

// u32 is the unit roundoff of float32.
const u32 = 0x1p-24

// dotBound32 is gram32's documented error bound for a dot product of vectors
// of dimension d with Σ|xₖyₖ| = absDot: float32 rounding of the inputs (2u)
// and a float32 sum of at most kBlock products, each with one rounding for
// the product (the portable kernel has no FMA) and one for the sum; 1% more
// for the second-order terms.
func dotBound32(d int, absDot float64) float64 {
	return float64(min(d, KBlock)+3) * u32 * absDot * 1.01
}

// randVectors returns n vectors of dimension d, N(0,1) plus an offset so that
// squared distances cancel in ‖x‖² + ‖y‖² − 2x·y.
func randVectors(rng *rand.Rand, n, d int, offset float64) []float64 {
	a := make([]float64, n*d)
	for i := range a {
		a[i] = rng.NormFloat64() + offset
	}
	return a
}

// collectGram runs engine and returns the n×m matrix of its tiles, failing
// the test unless every entry of the computed blocks (the block upper
// triangle with sym) is written exactly once; others are NaN.
func collectGram(t *testing.T, engine func(x, y Vectors, sym bool, kind Kind, mon Progress, epi func(*Tile)),
	x, y Vectors, sym bool, kind Kind) []float64 {
	t.Helper()
	n, m := x.N, y.N
	g := make([]float64, n*m)
	seen := make([]int, n*m)
	for i := range g {
		g[i] = math.NaN()
	}
	engine(x, y, sym, kind, nil, func(tl *Tile) {
		for i := 0; i < tl.NI; i++ {
			for j := 0; j < tl.NJ; j++ {
				g[(tl.I0+i)*m+tl.J0+j] = tl.G[i*tl.LD+j]
				seen[(tl.I0+i)*m+tl.J0+j]++
			}
		}
	})
	for i := 0; i < n; i++ {
		for j := 0; j < m; j++ {
			want := 1
			if sym && j/TileSize < i/TileSize {
				want = 0
			}
			if seen[i*m+j] != want {
				t.Fatalf("entry (%d, %d) written %d times, want %d", i, j, seen[i*m+j], want)
			}
		}
	}
	return g
}

// TestGram32 compares gram32 (with the micro-kernel it selects, and with the
// portable float32 kernel called directly) and gram with a brute-force
// float64 reference, within the float32 error bound for gram32 and 1e-13
// for gram. Sizes are not multiples of the tile or micro-kernel sizes, d
// spans one and two K blocks, and the direct path for small d is included.
func TestGram32(t *testing.T) {
	defer func(ts, dd int) { TileSize, DirectDim = ts, dd }(TileSize, DirectDim)
	cases := []gramCase{
		{"dots/sym/two-kblocks", 61, 61, 300, 24, 16, true, Dots},
		{"dots/cross", 50, 77, 37, 40, 16, false, Dots},
		{"dots/cross/d=1", 13, 35, 1, 12, 0, false, Dots},
		{"sqdists/cross/two-kblocks", 45, 29, 300, 24, 16, false, SqDists},
		{"sqdists/sym/gemm", 70, 70, 19, 36, 16, true, SqDists},
		{"sqdists/sym/direct", 47, 47, 5, 18, 16, true, SqDists},
		{"sqdists/cross/direct", 33, 41, 5, 30, 16, false, SqDists},
		{"sqdists/cross/default-tile", 200, 401, 40, 192, 16, false, SqDists},
		{"dots/sym/default-tile", 390, 390, 70, 192, 16, true, Dots},
	}
	// Every remainder of the micro-kernel widths (6 rows; 8, 16 and 32
	// columns) and of a small tile, in both directions.
	for n := 1; n <= 33; n++ {
		cases = append(cases, gramCase{fmt.Sprintf("dots/edge/%dx%d", n, 34-n), n, 34 - n, 20, 24, 16, false, Dots})
	}
	for _, path := range Paths() {
		t.Run(path, func(t *testing.T) {
			defer usePath(t, path)()
			rng := rand.New(rand.NewPCG(32, 32))
			for _, tc := range cases {
				checkGram32(t, rng, tc)
			}
		})
	}
}

// gramCase is one input of TestGram32.
type gramCase struct {
	name      string
	nx, ny, d int
	tile, dir int
	sym       bool
	kind      Kind
}

// usePath selects a kernel path for a test and returns the restore.
func usePath(t *testing.T, name string) func() {
	t.Helper()
	prev, err := UsePath(name)
	if err != nil {
		t.Fatal(err)
	}
	return func() { UsePath(prev) }
}

// checkGram32 runs TestGram32's case tc on the kernel path in use.
func checkGram32(t *testing.T, rng *rand.Rand, tc gramCase) {
	generic := func(x, y Vectors, sym bool, kind Kind, mon Progress, epi func(*Tile)) {
		newGramRun(x, y, kind, false, genericKernel[float32](16), 16).run(sym, mon, epi)
	}
	engines := []struct {
		name string
		run  func(x, y Vectors, sym bool, kind Kind, mon Progress, epi func(*Tile))
	}{{"Gram32", Gram32}, {"generic32", generic}, {"Gram", Gram}}
	{
		TileSize, DirectDim = tc.tile, tc.dir
		offset := 0.0
		if tc.kind == SqDists {
			offset = 2
		}
		xa := randVectors(rng, tc.nx, tc.d, offset)
		ya := xa
		if !tc.sym {
			ya = randVectors(rng, tc.ny, tc.d, offset)
		}
		x, y := DenseRows(xa, tc.nx, tc.d), DenseRows(ya, tc.ny, tc.d)
		for _, e := range engines {
			t.Run(tc.name+"/"+e.name, func(t *testing.T) {
				g := collectGram(t, e.run, x, y, tc.sym, tc.kind)
				rounded := false
				for i := 0; i < tc.nx; i++ {
					xi := xa[i*tc.d : (i+1)*tc.d]
					for j := 0; j < tc.ny; j++ {
						if tc.sym && j/TileSize < i/TileSize {
							continue
						}
						yj := ya[j*tc.d : (j+1)*tc.d]
						var want, absDot, nx, ny float64
						for k := range xi {
							if tc.kind == Dots {
								want += xi[k] * yj[k]
							} else {
								want += (xi[k] - yj[k]) * (xi[k] - yj[k])
							}
							absDot += math.Abs(xi[k] * yj[k])
							nx += xi[k] * xi[k]
							ny += yj[k] * yj[k]
						}
						tol := dotBound32(tc.d, absDot)
						if tc.kind == SqDists {
							// Rounded norms (2u each) and, on the direct path,
							// rounded differences (at most 4u(‖x‖² + ‖y‖²)).
							tol = 2*tol + 4.1*u32*(nx+ny)
						}
						if e.name == "Gram" {
							tol = 1e-13 * (absDot + nx + ny)
						}
						got := g[i*tc.ny+j]
						if !(math.Abs(got-want) <= tol) {
							t.Fatalf("entry (%d, %d) = %.10g, want %.10g (|diff| %.3g > tol %.3g)",
								i, j, got, want, math.Abs(got-want), tol)
						}
						rounded = rounded || math.Abs(got-want) > 1e-12*(absDot+nx+ny)
					}
				}
				if is32 := e.name != "Gram"; is32 && !rounded {
					t.Errorf("no float32 rounding seen: %s seems to compute in float64", e.name)
				}
			})
		}
	}
}

// TestMicroKernel32 compares each path's float32 micro-kernel (assembly
// where available) and the portable one with a float64 reference on random
// panels, within the float32 bound of a k-term sum; c starts nonzero to
// check that both add.
func TestMicroKernel32(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	for _, p := range paths {
		n := p.nr32
		kernels := []struct {
			name string
			kern func(k int, a, b []float32, c []float64, ldc int)
		}{{p.name, p.k32}, {"generic", genericKernel[float32](n)}}
		for _, k := range []int{1, 2, 3, 7, 256} {
			a, b := make([]float32, k*mr), make([]float32, k*n)
			for i := range a {
				a[i] = float32(rng.NormFloat64())
			}
			for i := range b {
				b[i] = float32(rng.NormFloat64())
			}
			ldc := n + 3
			for _, kn := range kernels {
				t.Run(fmt.Sprintf("%s/%s/k=%d", p.name, kn.name, k), func(t *testing.T) {
					c := make([]float64, mr*ldc)
					for i := range c {
						c[i] = float64(i)
					}
					kn.kern(k, a, b, c, ldc)
					for i := 0; i < mr; i++ {
						for j := 0; j < ldc; j++ {
							want, abs := float64(i*ldc+j), 0.0
							if j < n {
								for p := 0; p < k; p++ {
									want += float64(a[p*mr+i]) * float64(b[p*n+j])
									abs += math.Abs(float64(a[p*mr+i]) * float64(b[p*n+j]))
								}
							}
							if tol := float64(k+1) * u32 * abs * 1.01; !(math.Abs(c[i*ldc+j]-want) <= tol) {
								t.Fatalf("c[%d][%d] = %.10g, want %.10g (tol %.3g)", i, j, c[i*ldc+j], want, tol)
							}
						}
					}
				})
			}
		}
	}
}

// TestSqDiffs checks sqDiffs (assembly where available) bit for bit against
// sqDiffsGeneric, whose summation order it promises, and both against a
// plain sum within rounding, for lengths around the 8-element blocks.
func TestSqDiffs(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for _, n := range []int{1, 7, 8, 9, 15, 16, 17, 64, 511, 512, 515} {
		x64, y64 := make([]float64, n), make([]float64, n)
		x32, y32 := make([]float32, n), make([]float32, n)
		for k := range x64 {
			x32[k], y32[k] = float32(rng.NormFloat64()), float32(rng.NormFloat64()*3)
			x64[k], y64[k] = rng.NormFloat64()*1e3, rng.NormFloat64()
		}
		check := func(name string, got, gen float64, x, y func(k int) float64) {
			want, abs := 0.0, 0.0
			for k := 0; k < n; k++ {
				d := x(k) - y(k)
				want += d * d
				abs += d * d
			}
			if got != gen {
				t.Errorf("%s n=%d: SqDiffs %v, generic %v: not bit-identical", name, n, got, gen)
			}
			if math.Abs(got-want) > float64(n)*1.2e-16*abs {
				t.Errorf("%s n=%d: %v, plain sum %v", name, n, got, want)
			}
		}
		check("float64", SqDiffs(x64, y64), SqDiffsGeneric(x64, y64), func(k int) float64 { return x64[k] }, func(k int) float64 { return y64[k] })
		check("float32", SqDiffs(x32, y32), SqDiffsGeneric(x32, y32), func(k int) float64 { return float64(x32[k]) }, func(k int) float64 { return float64(y32[k]) })
	}
}

// TestMicroKernel compares each path's float64 micro-kernel with the
// portable version; both accumulate in the same order, so the match is
// exact up to FMA rounding. The portable path has none (it uses gonum's
// Dgemm).
func TestMicroKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, p := range paths {
		if p.k64 == nil {
			continue
		}
		n := p.nr
		for _, k := range []int{1, 2, 3, 7, 256} {
			t.Run(fmt.Sprintf("%s/k=%d", p.name, k), func(t *testing.T) {
				a, b := make([]float64, k*mr), make([]float64, k*n)
				for i := range a {
					a[i] = rng.NormFloat64()
				}
				for i := range b {
					b[i] = rng.NormFloat64()
				}
				ldc := n + 3
				got, want := make([]float64, mr*ldc), make([]float64, mr*ldc)
				for i := range got {
					got[i] = float64(i)
					want[i] = float64(i)
				}
				p.k64(k, a, b, got, ldc)
				genericKernel[float64](n)(k, a, b, want, ldc)
				testref.CloseTo(t, "c", got, want, 1e-14, 0)
			})
		}
	}
}

// TestPaths checks that the paths are listed fastest first, end with the
// portable one, and that UsePath refuses an unknown name.
func TestPaths(t *testing.T) {
	names := Paths()
	if names[len(names)-1] != "portable" {
		t.Fatalf("Paths() = %v: want the portable path last", names)
	}
	if active.Load().name != names[0] {
		t.Fatalf("Gram uses %q by default, want the first of %v", active.Load().name, names)
	}
	if _, err := UsePath("sse9"); err == nil || !strings.Contains(err.Error(), "sse9") {
		t.Fatalf("UsePath(\"sse9\") = %v, want an error naming it", err)
	}
	t.Logf("kernel paths here: %v", names)
}

// TestGramHalves checks on every kernel path that GramHalves gives, for
// every pair of vectors of the same family, the bits Gram gives on the same
// vectors (several tiles, a short last tile, the direct path, one and two K
// blocks), and that it skips what lies between the families (those
// entries then differ from Gram's): every entry on the direct path, the
// micro-kernel's blocks where TileSize/2 fits them.
func TestGramHalves(t *testing.T) {
	defer func(ts int) { TileSize = ts }(TileSize)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, path := range Paths() {
		for _, tc := range []struct{ n, d, tile int }{
			{2 * 150, 40, 192}, {2 * 101, 300, 48}, {2 * 37, 3, 24}, {2 * 7, 17, 48}, {2 * 250, 64, 192},
		} {
			t.Run(fmt.Sprintf("%s/n=%d/d=%d/tile=%d", path, tc.n, tc.d, tc.tile), func(t *testing.T) {
				defer usePath(t, path)()
				TileSize = tc.tile
				z := DenseRows(randVectors(rng, tc.n, tc.d, 2), tc.n, tc.d)
				want := collectGram(t, Gram, z, z, true, SqDists)
				got := collectGram(t, func(x, _ Vectors, _ bool, _ Kind, mon Progress, epi func(*Tile)) {
					GramHalves(x, mon, epi)
				}, z, z, true, SqDists)
				family := func(i int) bool {
					b := i / TileSize
					return i-b*TileSize >= min(TileSize, tc.n-b*TileSize)/2
				}
				skips := tc.d <= DirectDim || path != "portable" && tc.n >= 2*TileSize && TileSize/2%(mr*active.Load().nr) == 0
				differ := 0
				for i := 0; i < tc.n; i++ {
					for j := 0; j < tc.n; j++ {
						w, g := want[i*tc.n+j], got[i*tc.n+j]
						switch {
						case math.IsNaN(w): // below the block diagonal: neither computes it
						case family(i) == family(j) && math.Float64bits(g) != math.Float64bits(w):
							t.Fatalf("entry (%d, %d) = %v, Gram gives %v", i, j, g, w)
						case family(i) != family(j) && g != w:
							differ++
						}
					}
				}
				if skips && differ == 0 {
					t.Fatalf("no entry between the families differs from Gram's: the cross blocks were computed")
				}
			})
		}
	}
}
