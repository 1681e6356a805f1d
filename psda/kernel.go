package psda

import (
	"math"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// This file holds the Gram-matrix engine behind every PSDA cost: a blocked,
// packed, multi-core product G = X Yᵀ of two sets of vectors, handed out tile
// by tile to an epilogue that turns dot products (or squared distances) into
// costs while the tile is still in cache, so no n×n intermediate other than
// the cost matrix itself is ever stored.
//
// Precision: gram computes everything in float64. float32 input is converted
// one vector at a time while packing a tile, never as a whole, so results for
// float64 input are reproducible against a float64 NumPy reference to a few
// ulps of the largest term (the summation order of the dot products differs).
// gram32 is the same engine with float32 packed vectors and micro-kernel, for
// screening passes that tolerate float32 rounding.

const kBlock = 256 // depth of one pass of the micro-kernel (keeps a B panel in L1)

// Variables, not constants, only so that tests can push small inputs through
// the multi-tile and GEMM paths.
var (
	tileSize  = 192 // rows and columns per tile: a multiple of mr, nr, nr32 and 2
	directDim = 16  // at most this many features: squared distances by differences, not by GEMM
)

// vectors is a read-only set of n vectors of dimension d, produced in float64
// one at a time by fill, so that float32 input is converted row by row while
// packing and derived vectors (centred, shifted, paired) are never stored.
type vectors struct {
	n, d int
	fill func(r int, dst []float64)
}

// rowsOf returns the vectors m[idx[r]] − shift; idx nil means every row in
// order, shift nil means no shift.
func rowsOf(m Matrix, idx []int, shift []float64) vectors {
	n := m.N
	if idx != nil {
		n = len(idx)
	}
	return vectors{n: n, d: m.D, fill: func(r int, dst []float64) {
		if idx != nil {
			r = idx[r]
		}
		m.Row(r, dst)
		for k, s := range shift {
			dst[k] -= s
		}
	}}
}

// colsOf returns the d columns of m − mean as vectors of dimension m.N, so
// that the Gram matrix of colsOf(m, mean) is the scatter matrix of m.
func colsOf(m Matrix, mean []float64) vectors {
	return vectors{n: m.D, d: m.N, fill: func(c int, dst []float64) {
		for k := range dst {
			dst[k] = m.At(k, c) - mean[c]
		}
	}}
}

// denseRows returns the rows of the row-major n×d float64 matrix a.
func denseRows(a []float64, n, d int) vectors {
	return vectors{n: n, d: d, fill: func(r int, dst []float64) { copy(dst, a[r*d:(r+1)*d]) }}
}

// colMeans returns the column means of m, accumulated in float64.
func colMeans(m Matrix) []float64 {
	mean := make([]float64, m.D)
	row := make([]float64, m.D)
	for i := 0; i < m.N; i++ {
		for k, v := range m.Row(i, row) {
			mean[k] += v
		}
	}
	for k := range mean {
		mean[k] /= float64(m.N)
	}
	return mean
}

// gramKind selects what a tile holds.
type gramKind int

const (
	dots    gramKind = iota // g = xᵢ·yⱼ
	sqdists                 // g = ‖xᵢ − yⱼ‖²
)

// tile is one block of G handed to an epilogue: g[i*ld+j] is entry
// (i0+i, j0+j) for i < ni, j < nj. bi and bj number the tile's row and column
// blocks; diag reports a tile on the diagonal of a symmetric run (it holds
// the full square block, both triangles).
type tile struct {
	i0, j0, ni, nj int
	bi, bj         int
	diag           bool
	ld             int
	g              []float64
}

// nblocks returns the number of tiles needed to cover n vectors.
func nblocks(n int) int { return (n + tileSize - 1) / tileSize }

// gram computes G = X Yᵀ (kind dots) or the squared distances between the
// vectors of x and y (kind sqdists) tile by tile on all cores and calls epi
// once per tile, concurrently from several goroutines: epi must only write
// locations that belong to its tile. With sym, G must be symmetric (x and y
// describe the same vectors up to a sign pattern that keeps G symmetric) and
// only tiles with bj >= bi are computed.
//
// Squared distances come from ‖x‖² + ‖y‖² − 2x·y (clamped at 0) when
// d > directDim, and from explicit differences otherwise, where GEMM gains
// nothing and the expansion would cancel.
//
// The y vectors are packed once per chunk of at most packBudget values and
// shared by the workers; each worker packs one tile row of x and sweeps it
// across the chunk (GotoBLAS-style), so packing costs O((|x|·|y|/chunk +
// |y|)·d) next to the O(|x|·|y|·d) multiply-adds (half that with sym).
// Memory: the chunk plus O(tileSize·(d + tileSize)) per worker.
//
// With a non-nil mon, every tile is added to mon's progress, and once mon is
// cancelled the remaining tiles are skipped (epi is not called for them):
// the caller must check mon.err() before using the result.
func gram(x, y vectors, sym bool, kind gramKind, mon *Monitor, epi func(t *tile)) {
	newGramRun(x, y, kind, !useFMA, microKernel).run(sym, mon, epi)
}

// gram32 is gram computed in float32 arithmetic: the vectors are packed as
// float32 and multiplied by a float32 micro-kernel (AVX2/FMA, 6×16, about
// twice gram's throughput; the portable kernel without it); tiles are handed
// to epi as float64 (t.g) exactly like gram's, so every epilogue works
// unchanged. Squared distances use float64 norms of the float32-rounded
// vectors (and float64 differences of them when d <= directDim).
//
// Accuracy: x·y is a float32 sum of at most kBlock products per K block, the
// blocks added in float64, so with u = 2^-24 its error is at most about
// (min(d, kBlock) + 3)·u·Σ|xₖyₖ| <= (d + 3)·u·‖x‖‖y‖ (2u for rounding the
// inputs, u for the product without FMA); a squared distance has twice that
// plus at most 4u·(‖x‖² + ‖y‖²) for the norms (or, for d <= directDim, the
// differences) of the rounded vectors. Inputs must fit in float32. Meant for
// screening (candidate generation), not for costs that must be exact.
func gram32(x, y vectors, sym bool, kind gramKind, mon *Monitor, epi func(t *tile)) {
	newGramRun(x, y, kind, false, microKernel32).run(sym, mon, epi)
}

// packBudget is the most values of packed y vectors held at once.
const packBudget = 1 << 21

// packed is the precision of the packed vectors and of the micro-kernel's
// multiply-adds; tiles, norms and everything after the kernel are float64.
type packed interface{ float32 | float64 }

// gramRun is the state of one gram call shared by its workers.
type gramRun[T packed] struct {
	x, y   vectors
	d      int
	kind   gramKind
	direct bool
	// rowMajor packs plain rows: for the direct path, and for gonum's Dgemm
	// when the float64 assembly micro-kernel is unavailable (no AVX2/FMA,
	// noasm tag).
	rowMajor bool
	// kern updates an mr×nr block of a tile from an A and a B micro-panel.
	kern   func(k int, a, b []T, c []float64, ldc int)
	nr     int
	xs, ys int       // padded tile rows and columns: multiples of mr and nr
	c0     int       // first tile column of the packed chunk
	py     []T       // packed chunk of y
	ny     []float64 // squared norms of the chunk
}

// newGramRun returns the run for x and y; gemm asks for gonum's Dgemm (only
// for T = float64) instead of kern when d > directDim.
func newGramRun[T packed](x, y vectors, kind gramKind, gemm bool, kern func(int, []T, []T, []float64, int)) *gramRun[T] {
	direct := kind == sqdists && x.d <= directDim
	nr := nrOf[T]()
	return &gramRun[T]{x: x, y: y, d: x.d, kind: kind, direct: direct, rowMajor: direct || gemm, kern: kern, nr: nr,
		xs: roundUp(tileSize, mr), ys: roundUp(tileSize, nr)}
}

// nrOf returns the micro-kernel width for T: nr for float64, nr32 for float32
// (one YMM register holds 4 or 8 of them).
func nrOf[T packed]() int {
	if unsafe.Sizeof(T(0)) == 4 {
		return nr32
	}
	return nr
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

// run is gram with this run's precision and kernel.
func (g *gramRun[T]) run(sym bool, mon *Monitor, epi func(t *tile)) {
	x, y := g.x, g.y
	nbx, nby := nblocks(x.n), nblocks(y.n)
	chunk := max(1, min(nby, packBudget/(g.ys*x.d)))
	g.py = make([]T, chunk*g.ys*x.d)
	g.ny = make([]float64, chunk*g.ys)
	for c0 := 0; c0 < nby; c0 += chunk {
		c1 := min(nby, c0+chunk)
		g.c0 = c0
		parallel(c1-c0, func() func(int) {
			buf := make([]float64, x.d)
			return func(k int) {
				bj := c0 + k
				g.pack(y, bj*tileSize, min(tileSize, y.n-bj*tileSize), g.nr, buf,
					g.py[k*g.ys*x.d:(k+1)*g.ys*x.d], g.ny[k*g.ys:(k+1)*g.ys])
			}
		})
		rows := nbx
		if sym {
			rows = min(nbx, c1)
		}
		parallel(rows, func() func(int) {
			w := &gramWorker[T]{
				buf: make([]float64, x.d),
				px:  make([]T, g.xs*x.d),
				nx:  make([]float64, g.xs),
				g:   make([]float64, g.xs*g.ys),
			}
			return func(bi int) {
				if mon.err() != nil {
					return
				}
				i0 := bi * tileSize
				ni := min(tileSize, x.n-i0)
				g.pack(x, i0, ni, mr, w.buf, w.px, w.nx)
				bj0 := c0
				if sym {
					bj0 = max(c0, bi)
				}
				for bj := bj0; bj < c1; bj++ {
					if mon.err() != nil {
						return
					}
					t := g.tile(w, bi, bj, ni)
					t.diag = sym && bi == bj
					epi(t)
					mon.addTile(t.ni, t.nj, x.d)
				}
			}
		})
	}
}

// gramWorker holds one goroutine's buffers.
type gramWorker[T packed] struct {
	buf []float64 // one vector being packed
	px  []T       // the packed x tile row
	nx  []float64 // and its squared norms
	g   []float64
	t   tile
}

// pack writes vectors [r0, r0+n) of v, rounded to T, into dst and their
// squared norms (of the rounded vectors, in float64) into nrm. Row-major when
// g.rowMajor; otherwise in micro-panels of m vectors, dst[(p*d+k)*m + i] =
// v[r0+p*m+i][k], zero padded to a multiple of m. buf holds d values.
//
// Each vector is rounded, scattered into its panel and its norm summed in one
// pass as it is filled: gathering a panel from m buffered rows (m read
// streams 8d bytes apart, which alias in L1 for d = 512) after separate
// rounding and norm passes measured 2.5–3× slower at d = 512.
func (g *gramRun[T]) pack(v vectors, r0, n, m int, buf []float64, dst []T, nrm []float64) {
	d := g.d
	ks, is := m, 1 // strides of k and i in a panel
	if g.rowMajor {
		ks, is = 1, d
	}
	for p := 0; p*m < n; p++ {
		panel := dst[p*m*d : (p+1)*m*d]
		for i := 0; i < m; i++ {
			if p*m+i >= n {
				for k := 0; k < d; k++ {
					panel[i*is+k*ks] = 0
				}
				continue
			}
			v.fill(r0+p*m+i, buf[:d])
			s := 0.0
			for k, e := range buf[:d] {
				r := T(e)
				panel[i*is+k*ks] = r
				s += float64(r) * float64(r)
			}
			nrm[p*m+i] = s
		}
	}
}

// tile computes tile (bi, bj) from the worker's packed x tile row (ni
// vectors) and the shared packed chunk.
func (g *gramRun[T]) tile(w *gramWorker[T], bi, bj, ni int) *tile {
	d := g.d
	i0, j0 := bi*tileSize, bj*tileSize
	nj := min(tileSize, g.y.n-j0)
	py := g.py[(bj-g.c0)*g.ys*d:]
	ny := g.ny[(bj-g.c0)*g.ys:]
	t := &w.t
	*t = tile{i0: i0, j0: j0, ni: ni, nj: nj, bi: bi, bj: bj}
	if g.direct {
		t.ld = nj
		t.g = w.g[:ni*nj]
		for i := 0; i < ni; i++ {
			xi := w.px[i*d : (i+1)*d]
			gi := t.g[i*nj : (i+1)*nj]
			for j := range gi {
				yj := py[j*d : (j+1)*d]
				s := 0.0
				for k, v := range xi {
					e := float64(v) - float64(yj[k])
					s += e * e
				}
				gi[j] = s
			}
		}
		return t
	}
	if g.rowMajor {
		// Portable path: gonum's pure-Go Dgemm on the row-major tiles (newGramRun
		// asks for it only with T = float64).
		t.ld = nj
		t.g = w.g[:ni*nj]
		blas64.Implementation().Dgemm(blas.NoTrans, blas.Trans, ni, nj, d, 1,
			any(w.px).([]float64), d, any(py).([]float64), d, 0, t.g, nj)
		g.toSqdists(t, w.nx, ny)
		return t
	}
	nr := g.nr
	npx, npy := (ni+mr-1)/mr, (nj+nr-1)/nr
	t.ld = npy * nr
	t.g = w.g[:npx*mr*t.ld]
	clear(t.g)
	for k0 := 0; k0 < d; k0 += kBlock {
		kc := min(kBlock, d-k0)
		for jp := 0; jp < npy; jp++ {
			b := py[(jp*d+k0)*nr:]
			for ip := 0; ip < npx; ip++ {
				g.kern(kc, w.px[(ip*d+k0)*mr:], b, t.g[ip*mr*t.ld+jp*nr:], t.ld)
			}
		}
	}
	g.toSqdists(t, w.nx, ny)
	return t
}

// toSqdists turns the dot products of t into squared distances
// ‖x‖² + ‖y‖² − 2x·y (clamped at 0) when the run asks for them.
func (g *gramRun[T]) toSqdists(t *tile, nx, ny []float64) {
	if g.kind != sqdists {
		return
	}
	for i := 0; i < t.ni; i++ {
		gi := t.g[i*t.ld : i*t.ld+t.nj]
		for j, v := range gi {
			gi[j] = max(0, nx[i]+ny[j]-2*v)
		}
	}
}

// microKernelGeneric is the portable micro-kernel: c[i*ldc+j] += Σ_p
// a[p*mr+i]·b[p*n+j] for i < mr, j < n = nrOf[T](), p < k, summed in T.
func microKernelGeneric[T packed](k int, a, b []T, c []float64, ldc int) {
	n := nrOf[T]()
	var acc [mr * nr32]T
	for p := 0; p < k; p++ {
		ap := a[p*mr : p*mr+mr]
		bp := b[p*n : p*n+n]
		for i, av := range ap {
			row := acc[i*n : i*n+n]
			for j, bv := range bp {
				row[j] += av * bv
			}
		}
	}
	for i := 0; i < mr; i++ {
		ci := c[i*ldc : i*ldc+n]
		for j := range ci {
			ci[j] += float64(acc[i*n+j])
		}
	}
}

// parallel runs body(i) for every i in [0, n) on GOMAXPROCS goroutines;
// newBody is called once per goroutine to set up its scratch space.
func parallel(n int, newBody func() func(int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		body := newBody()
		for i := 0; i < n; i++ {
			body(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := newBody()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				body(i)
			}
		}()
	}
	wg.Wait()
}

// parallelRows runs body(i0, i1) over chunks of [0, n) on all cores; for the
// cheap, memory-bound passes that finish a cost matrix.
func parallelRows(n int, body func(i0, i1 int)) {
	const chunk = 64
	parallel((n+chunk-1)/chunk, func() func(int) {
		return func(c int) { body(c*chunk, min(n, (c+1)*chunk)) }
	})
}

// partials collects per-tile partial sums in a slot per block, so that a
// reduction gives the same bits whichever worker computed which tile.
type partials struct {
	n int
	p []float64
}

func newPartials(slots, n int) partials { return partials{n: n, p: make([]float64, slots*n)} }

// slot returns the n sums of slot b.
func (s partials) slot(b int) []float64 { return s.p[b*s.n : (b+1)*s.n] }

// total returns the sums over all slots, in slot order.
func (s partials) total() []float64 {
	t := make([]float64, s.n)
	for b := 0; b < len(s.p)/max(s.n, 1); b++ {
		for i, v := range s.slot(b) {
			t[i] += v
		}
	}
	return t
}

func dot(x, y []float64) float64 {
	s := 0.0
	for i, v := range x {
		s += v * y[i]
	}
	return s
}

// rbfMixture evaluates κ(D) = Σ_γ exp(−γ·D) for a squared distance D.
//
// exp is the hot spot after the GEMM (the AVX2 vector exp: about 1.3 ns an
// entry and gamma, within 2 ulps). When a gamma is an integer multiple
// m <= 16 of a smaller one, exp(−γD) is computed as exp(−γ'D)^m by binary
// powering (powNeg, about half the cost of an exp) instead of another exp.
// A relative error ε in exp(−γ'D) becomes m·ε after the power, so chains
// are cut (a fresh exp) before the product of the ratios exceeds
// maxAmplify: every term keeps a relative error below about maxAmplify ulps
// (2e-14 for 100). With the paper's gammas {0.001, …, 10} this costs 2 exps
// and 3 powers per entry instead of 5 exps (the Stage 2 float64 pass at
// P = 8,000 clustered: 1.95-2.01 s -> 1.84-1.87 s).
//
// The float32 passes (row32), whose values only need to lie within err32 of
// the exact ones, take longer chains, up to maxAmplify32: with the paper's
// gammas 1 exp and 4 powers per entry, within chainErr32 of κ, about 1e-10,
// next to float32 rounding's 1e-5.
type rbfMixture struct {
	gammas []float64 // ascending
	pow    []int     // 0: fresh exp; m: previous term to the m-th power
	pow32  []int     // pow for float32 passes
	nterms float64   // κ(x, x) = number of gammas
}

const (
	maxAmplify   = 100
	maxAmplify32 = 10000
)

func newRBF(gammas []float64) *rbfMixture { return planRBF(gammas, true) }

// planRBF returns the mixture, with power chains for exact values when
// powers is set.
func planRBF(gammas []float64, powers bool) *rbfMixture {
	g := append([]float64(nil), gammas...)
	sort.Float64s(g)
	k := &rbfMixture{gammas: g, pow: make([]int, len(g)), pow32: powerChains(g, maxAmplify32), nterms: float64(len(g))}
	if powers {
		k.pow = powerChains(g, maxAmplify)
	}
	return k
}

// powerChains returns, for ascending gammas g, m at i when g[i] = m·g[i−1]
// for an integer m in [2, 16] and the chain's product of ratios stays at
// most maxAmp, 0 (a fresh exp) otherwise.
func powerChains(g []float64, maxAmp int) []int {
	pow := make([]int, len(g))
	amp := 1
	for i := 1; i < len(g); i++ {
		r := g[i] / g[i-1]
		m := int(math.Round(r))
		if m >= 2 && m <= 16 && math.Abs(r-float64(m)) <= 1e-12*r && amp*m <= maxAmp {
			pow[i] = m
			amp *= m
		} else {
			amp = 1
		}
	}
	return pow
}

// chainErr32 bounds |row32 − κ| for every D: a term at the end of a chain
// with product of ratios A is within 8·A ulps (2 ulps of its exp, and at most
// 2·log2(16) roundings per power, amplified by the later powers), and every
// term is at most 1.
func (k *rbfMixture) chainErr32() float64 { return k.nterms * 8 * maxAmplify32 * 0x1p-52 }

// expUnderflow is where exp(−x) stops mattering next to κ(x, x) >= 1; past it
// terms are set to 0 (exactly what they are to within 1e-300).
const expUnderflow = 690

// slope returns Σγ·exp(−γ·max(d, 0)), which bounds |κ'(D)| for every
// D >= d: a squared distance at least d and off by δ moves κ by at most
// slope(d − δ)·δ. slope(0) = Σγ bounds it everywhere.
func (k *rbfMixture) slope(d float64) float64 {
	s := 0.0
	for _, g := range k.gammas {
		s += g * math.Exp(-g*max(d, 0))
	}
	return s
}

// distBelow returns a squared distance D no larger than any D' >= 0 with
// κ(D') <= k, by bisection on the decreasing κ: 0 when k >= κ(0).
func (k *rbfMixture) distBelow(kv float64) float64 {
	if kv >= k.nterms {
		return 0
	}
	lo, hi := 0.0, 1.0
	for k.eval(hi) > kv && hi < 1e300 {
		lo, hi = hi, 2*hi
	}
	for range 60 {
		mid := lo + (hi-lo)/2
		if k.eval(mid) > kv {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo // κ(lo) > kv >= κ(D'), so lo < D'
}

// eval returns κ for the squared distance d (through row, so that single
// entries and rows agree to the bit).
func (k *rbfMixture) eval(d float64) float64 {
	var out, e [1]float64
	k.row(out[:], []float64{d}, e[:])
	return out[0]
}

// row sets out[j] = κ(d[j]) for a row of squared distances; e is scratch of
// the same length.
func (k *rbfMixture) row(out, d, e []float64) { k.rowWith(k.pow, out, d, e) }

// row32 is row for float32 passes: within chainErr32 of κ.
func (k *rbfMixture) row32(out, d, e []float64) { k.rowWith(k.pow32, out, d, e) }

func (k *rbfMixture) rowWith(pow []int, out, d, e []float64) {
	for i, g := range k.gammas {
		switch {
		case pow[i] != 0:
			powNeg(out, e, d, g, pow[i])
		case i+1 < len(pow) && pow[i+1] != 0: // a chain starts here
			expNeg(e, d, g, false)
			if i == 0 {
				copy(out, e)
			} else {
				for j, v := range e {
					out[j] += v
				}
			}
		default:
			expNeg(out, d, g, i > 0)
		}
	}
}

// expNegGeneric is the portable expNeg.
func expNegGeneric(dst, src []float64, gamma float64, acc bool) {
	for i, v := range src {
		e := 0.0
		if x := gamma * v; x <= expUnderflow {
			e = math.Exp(-x)
		}
		if acc {
			dst[i] += e
		} else {
			dst[i] = e
		}
	}
}

// powNegGeneric is the portable powNeg.
func powNegGeneric(dst, e, src []float64, gamma float64, m int) {
	for i, v := range src {
		x := 0.0
		if gamma*v <= expUnderflow {
			x = powInt(e[i], m)
		}
		e[i] = x
		dst[i] += x
	}
}

// powInt returns x^m for m >= 1 by binary powering.
func powInt(x float64, m int) float64 {
	r := 1.0
	for {
		if m&1 != 0 {
			r *= x
		}
		m >>= 1
		if m == 0 {
			return r
		}
		x *= x
	}
}
