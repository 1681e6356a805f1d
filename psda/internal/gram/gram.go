package gram

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/psda-dev/psda/psda/internal/par"
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

const KBlock = 256 // depth of one pass of the micro-kernel (keeps a B panel in L1)

// Variables, not constants, only so that tests can push small inputs through
// the multi-tile and GEMM paths.
var (
	TileSize  = 192 // rows and columns per tile: a multiple of mr, every path's nr and nr32, and 2
	DirectDim = 16  // at most this many features: squared distances by differences, not by GEMM
)

// vectors is a read-only set of n vectors of dimension d, produced in float64
// one at a time by fill, so that float32 input is converted row by row while
// packing and derived vectors (centred, shifted, paired) are never stored.
type Vectors struct {
	N, D int
	Fill func(r int, dst []float64)
}

// denseRows returns the rows of the row-major n×d float64 matrix a.
func DenseRows(a []float64, n, d int) Vectors {
	return Vectors{N: n, D: d, Fill: func(r int, dst []float64) { copy(dst, a[r*d:(r+1)*d]) }}
}

// gramKind selects what a tile holds.
type Kind int

const (
	Dots    Kind = iota // g = xᵢ·yⱼ
	SqDists             // g = ‖xᵢ − yⱼ‖²
)

// tile is one block of G handed to an epilogue: g[i*ld+j] is entry
// (i0+i, j0+j) for i < ni, j < nj. bi and bj number the tile's row and column
// blocks; diag reports a tile on the diagonal of a symmetric run (it holds
// the full square block, both triangles).
type Tile struct {
	I0, J0, NI, NJ int
	BI, BJ         int
	Diag           bool
	LD             int
	G              []float64
}

// nblocks returns the number of tiles needed to cover n vectors.
func NBlocks(n int) int { return (n + TileSize - 1) / TileSize }

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
// the caller must check mon.Err() before using the result.
func Gram(x, y Vectors, sym bool, kind Kind, mon Progress, epi func(t *Tile)) {
	p := active.Load()
	newGramRun(x, y, kind, p.k64 == nil, p.k64, p.nr).run(sym, mon, epi)
}

// GramHalves is Gram(z, z, true, SqDists, mon, epi) for vectors that come
// in two families per tile, so that only the squared distances within a
// family are computed: tile b of z (TileSize vectors, fewer in the last)
// holds n_b/2 vectors of one family and then n_b/2 of the other (n_b even;
// TileSize must be even), and in every tile the entries between a vector
// of one family and one of the other are left unspecified (finite). Rbf2
// in internal/cost lays out pairs (s_r, t_r) this way when it reads the
// cross kernel κ(s, t) from Stage 1 instead of recomputing it.
//
// The micro-kernel skips every mr×nr block that lies wholly between the
// two families, half the multiply-adds of Gram when TileSize/2 is a
// multiple of mr and nr (192: every path); a block that straddles the
// boundary is computed whole. The computed entries are bit-identical to
// Gram's on the same vectors: every entry's sum runs over the same
// features in the same order wherever it sits in a tile. The direct path
// (d <= DirectDim) skips the entries between the families one by one; the
// portable path (gonum's Dgemm) computes every entry.
func GramHalves(z Vectors, mon Progress, epi func(t *Tile)) {
	p := active.Load()
	g := newGramRun(z, z, SqDists, p.k64 == nil, p.k64, p.nr)
	g.halves = true
	g.run(true, mon, epi)
}

// gram32 is gram computed in float32 arithmetic: the vectors are packed as
// float32 and multiplied by a float32 micro-kernel (AVX2/FMA, 6×16: twice
// gram's lanes per register, BenchmarkGram; the portable kernel without
// it); tiles are handed
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
func Gram32(x, y Vectors, sym bool, kind Kind, mon Progress, epi func(t *Tile)) {
	p := active.Load()
	newGramRun(x, y, kind, false, p.k32, p.nr32).run(sym, mon, epi)
}

// packBudget is the most values of packed y vectors held at once.
const packBudget = 1 << 21

// packed is the precision of the packed vectors and of the micro-kernel's
// multiply-adds; tiles, norms and everything after the kernel are float64.
type packed interface{ float32 | float64 }

// gramRun is the state of one gram call shared by its workers.
type gramRun[T packed] struct {
	x, y   Vectors
	d      int
	kind   Kind
	direct bool
	// rowMajor packs plain rows: for the direct path, and for gonum's Dgemm
	// when the float64 assembly micro-kernel is unavailable (no AVX2/FMA,
	// noasm tag).
	rowMajor bool
	// kern updates an mr×nr block of a tile from an A and a B micro-panel.
	kern func(k int, a, b []T, c []float64, ldc int)
	nr   int
	// halves skips the micro-blocks between the two families of each tile
	// (GramHalves).
	halves bool
	xs, ys int       // padded tile rows and columns: multiples of mr and nr
	c0     int       // first tile column of the packed chunk
	py     []T       // packed chunk of y
	ny     []float64 // squared norms of the chunk
}

// newGramRun returns the run for x and y with the mr×nr micro-kernel kern;
// gemm asks for gonum's Dgemm (only for T = float64) instead of kern when
// d > directDim.
func newGramRun[T packed](x, y Vectors, kind Kind, gemm bool, kern func(int, []T, []T, []float64, int), nr int) *gramRun[T] {
	direct := kind == SqDists && x.D <= DirectDim
	return &gramRun[T]{x: x, y: y, d: x.D, kind: kind, direct: direct, rowMajor: direct || gemm, kern: kern, nr: nr,
		xs: roundUp(TileSize, mr), ys: roundUp(TileSize, nr)}
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

// run is gram with this run's precision and kernel.
func (g *gramRun[T]) run(sym bool, mon Progress, epi func(t *Tile)) {
	if mon == nil {
		mon = noProgress{}
	}
	x, y := g.x, g.y
	nbx, nby := NBlocks(x.N), NBlocks(y.N)
	chunk := max(1, min(nby, packBudget/(g.ys*x.D)))
	g.py = make([]T, chunk*g.ys*x.D)
	g.ny = make([]float64, chunk*g.ys)
	for c0 := 0; c0 < nby; c0 += chunk {
		c1 := min(nby, c0+chunk)
		g.c0 = c0
		par.For(c1-c0, func() func(int) {
			buf := make([]float64, x.D)
			return func(k int) {
				bj := c0 + k
				g.pack(y, bj*TileSize, min(TileSize, y.N-bj*TileSize), g.nr, buf,
					g.py[k*g.ys*x.D:(k+1)*g.ys*x.D], g.ny[k*g.ys:(k+1)*g.ys])
			}
		})
		rows := nbx
		if sym {
			rows = min(nbx, c1)
		}
		par.For(rows, func() func(int) {
			w := &gramWorker[T]{
				buf: make([]float64, x.D),
				px:  make([]T, g.xs*x.D),
				nx:  make([]float64, g.xs),
				g:   make([]float64, g.xs*g.ys),
			}
			return func(bi int) {
				if mon.Err() != nil {
					return
				}
				i0 := bi * TileSize
				ni := min(TileSize, x.N-i0)
				g.pack(x, i0, ni, mr, w.buf, w.px, w.nx)
				bj0 := c0
				if sym {
					bj0 = max(c0, bi)
				}
				for bj := bj0; bj < c1; bj++ {
					if mon.Err() != nil {
						return
					}
					t := g.tile(w, bi, bj, ni)
					t.Diag = sym && bi == bj
					epi(t)
					mon.AddTile(t.NI, t.NJ, x.D)
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
	t   Tile
}

// pack writes vectors [r0, r0+n) of v, rounded to T, into dst and their
// squared norms (of the rounded vectors, in float64) into nrm. Row-major when
// g.rowMajor; otherwise in micro-panels of m vectors, dst[(p*d+k)*m + i] =
// v[r0+p*m+i][k], zero padded to a multiple of m. buf holds d values.
//
// Each vector is rounded, scattered into its panel and its norm summed in one
// pass as it is filled: gathering a panel from m buffered rows (m read
// streams 8d bytes apart, which alias in L1 for d = 512) after separate
// rounding and norm passes reads every vector three times and thrashes L1
// (BenchmarkGram).
func (g *gramRun[T]) pack(v Vectors, r0, n, m int, buf []float64, dst []T, nrm []float64) {
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
			v.Fill(r0+p*m+i, buf[:d])
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
func (g *gramRun[T]) tile(w *gramWorker[T], bi, bj, ni int) *Tile {
	d := g.d
	i0, j0 := bi*TileSize, bj*TileSize
	nj := min(TileSize, g.y.N-j0)
	py := g.py[(bj-g.c0)*g.ys*d:]
	ny := g.ny[(bj-g.c0)*g.ys:]
	t := &w.t
	*t = Tile{I0: i0, J0: j0, NI: ni, NJ: nj, BI: bi, BJ: bj}
	if g.direct {
		t.LD = nj
		t.G = w.g[:ni*nj]
		for i := 0; i < ni; i++ {
			xi := w.px[i*d : (i+1)*d]
			gi := t.G[i*nj : (i+1)*nj]
			for j := range gi {
				if g.halves && crossBlock(i, 1, ni/2, j, 1, nj/2) {
					continue
				}
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
		t.LD = nj
		t.G = w.g[:ni*nj]
		// Dgemm sums an entry's d products in one run for a small product
		// (under four of its 64×64 blocks) and in runs of 64 features,
		// added up, for a larger one: an entry's bits would depend on the
		// shape of its tile, which differs between Stage 1's tiles and
		// Stage 2's (cost.Stage2.UseCross reads the first for the second).
		// 64×64 products always take the first way.
		const gb = 64
		px, pyf := any(w.px).([]float64), any(py).([]float64)
		for i := 0; i < ni; i += gb {
			for j := 0; j < nj; j += gb {
				blas64.Implementation().Dgemm(blas.NoTrans, blas.Trans, min(gb, ni-i), min(gb, nj-j), d, 1,
					px[i*d:], d, pyf[j*d:], d, 0, t.G[i*nj+j:], nj)
			}
		}
		g.toSqdists(t, w.nx, ny)
		return t
	}
	nr := g.nr
	npx, npy := (ni+mr-1)/mr, (nj+nr-1)/nr
	t.LD = npy * nr
	t.G = w.g[:npx*mr*t.LD]
	clear(t.G)
	for k0 := 0; k0 < d; k0 += KBlock {
		kc := min(KBlock, d-k0)
		for jp := 0; jp < npy; jp++ {
			b := py[(jp*d+k0)*nr:]
			for ip := 0; ip < npx; ip++ {
				if g.halves && crossBlock(ip*mr, mr, ni/2, jp*nr, nr, nj/2) {
					continue
				}
				g.kern(kc, w.px[(ip*d+k0)*mr:], b, t.G[ip*mr*t.LD+jp*nr:], t.LD)
			}
		}
	}
	g.toSqdists(t, w.nx, ny)
	return t
}

// crossBlock reports whether the block of rows [i0, i0+ni) and columns
// [j0, j0+nj) of a GramHalves tile lies wholly between its two families:
// the rows below hi and the columns from hj on, or the other way round.
func crossBlock(i0, ni, hi, j0, nj, hj int) bool {
	return i0+ni <= hi && j0 >= hj || i0 >= hi && j0+nj <= hj
}

// toSqdists turns the dot products of t into squared distances
// ‖x‖² + ‖y‖² − 2x·y (clamped at 0) when the run asks for them.
func (g *gramRun[T]) toSqdists(t *Tile, nx, ny []float64) {
	if g.kind != SqDists {
		return
	}
	for i := 0; i < t.NI; i++ {
		gi := t.G[i*t.LD : i*t.LD+t.NJ]
		for j, v := range gi {
			gi[j] = max(0, nx[i]+ny[j]-2*v)
		}
	}
}

// genericKernel returns the portable mr×n micro-kernel: c[i*ldc+j] +=
// Σ_p a[p*mr+i]·b[p*n+j] for i < mr, j < n <= maxNR, p < k, summed in T.
func genericKernel[T packed](n int) func(k int, a, b []T, c []float64, ldc int) {
	return func(k int, a, b []T, c []float64, ldc int) {
		var acc [mr * maxNR]T
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
}

// partials collects per-tile partial sums in a slot per block, so that a
// reduction gives the same bits whichever worker computed which tile.
type Partials struct {
	n int
	p []float64
}

func NewPartials(slots, n int) Partials { return Partials{n: n, p: make([]float64, slots*n)} }

// slot returns the n sums of slot b.
func (s Partials) Slot(b int) []float64 { return s.p[b*s.n : (b+1)*s.n] }

// total returns the sums over all slots, in slot order.
func (s Partials) Total() []float64 {
	t := make([]float64, s.n)
	for b := 0; b < len(s.p)/max(s.n, 1); b++ {
		for i, v := range s.Slot(b) {
			t[i] += v
		}
	}
	return t
}

func Dot(x, y []float64) float64 {
	s := 0.0
	for i, v := range x {
		s += v * y[i]
	}
	return s
}
