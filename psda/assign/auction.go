package assign

import (
	"errors"
	"math"
	"slices"

	"github.com/psda-dev/psda/psda/internal/par"
	"github.com/psda-dev/psda/psda/internal/topk"
)

// auctionInit is the warm start of square problems: Bertsekas'
// forward auction with ε-scaling (Bertsekas, "The auction algorithm: a
// distributed relaxation method for the assignment problem", Annals of OR 14,
// 1988; Gauss–Seidel bidding, one row at a time) computes prices p with an
// assignment that is optimal to within n·ε. Degenerate costs such as PSDA's
// rank-2 Stage 2 matrices (many near-ties, which send a cold-started shortest
// augmenting path through almost every column for every row) cost only a few
// bids per row per phase here.
//
// Deviations: the final ε is relative to the cost scale, not 1/n (costs are
// real); the result is only a warm start. v = −p, tighten derives u and keeps
// the rows whose entry is exactly tight; augment then finishes exactly. Each
// remaining free row sits within ε of a free column in the reduced costs, so
// its search stops after the few columns closer than that.
//
// The scale is costScale's, not the range of the entries: the prices become
// the exact phase's potentials, and potentials of magnitude M resolve
// reduced costs only to about M·2⁻⁵², so prices inflated by one huge entry
// (ε₀ = range/θ = 2.5e19 with a single 1e20 in costs of order 1) left the
// exact phase blind to every cost difference that mattered: it returned 5
// instead of 1 on [[1e20, 0, 0], [0, 5, 1], [0, 1, 5]]. A price still grows
// to the magnitude of a huge entry when a row prefers its best column by
// that much (w2−w1 is huge), as the exact duals would.
//
// auctionInit returns h's Stop error when h stops it (polled every pollEvery
// bids) and reports the ε phases done as progress.
func (s *lsap) auctionInit(h *Hooks) error {
	n := s.nr
	var p []float64
	var viol, scale float64
	if s.seed != nil {
		// The seed's pass over c finds the cost range too: one pass, not two.
		var lo, hi float64
		p, viol, lo, hi = s.seedPrices()
		scale = costScaleIn(s.c, lo, hi)
	} else {
		scale = costScale(s.c)
	}
	if !(scale > 0) {
		return nil // constant or empty: the exact phase is immediate
	}
	for j := range s.row4col {
		s.row4col[j] = -1
	}
	for i := range s.col4row {
		s.col4row[i] = -1
	}
	// θ = 4 and a final ε of 1e-9 of the cost scale. On random Euclidean
	// costs the time hardly depends on either; on the real 2-D PSDA costs
	// (psda's BenchmarkSolve, n = 4000) θ = 4 beat θ = 7 by about 15% in
	// total over Gaussian and ReLU data (most on tie-heavy ReLU Stage 1,
	// 6.8 → 4.5 CPU-s), while θ = 16 or 30 and final ε up to 1e-6 were no
	// better; run-to-run spread on these degenerate inputs is ±20%.
	eps0, epsMin := scale/auctionTheta, scale*1e-9
	if p != nil {
		s.adopt(s.seed.Col4Row)
		eps0 = max(min(eps0, viol/seedDiv), epsMin)
	} else {
		p = make([]float64, n)
	}
	if err := s.auction(p, eps0, epsMin, h); err != nil {
		return err
	}
	s.tighten()
	return nil
}

// seedPrices returns what auctionInit needs to start from s.seed, the
// solution of the sparse problem of a warm start that gave up: the prices
// −V (pricesOf), the largest violation δ = max_ij (U[i] + V[j] − c[i][j])
// of its potentials on the dense matrix, and the smallest and largest
// finite entries of c (costRange's), from the same pass. auctionInit
// adopts the seed's assignment and starts at ε = δ/seedDiv (at most the
// cold start's first ε). Every row's assigned entry is within δ of its
// best (the potentials are tight on the assignment), which is
// ε-complementary slackness for ε = δ, so the phases of larger ε, which
// build prices from zero, have nothing to do. The pass reads c once, split
// over the cores.
//
// On psda's Stage 2 costs of real features (n = 5000, 16 candidates a row,
// 26,000–36,000 violators at the first check), δ is 1/35 (MMD) and 1/230
// (CORAL) of the cost scale, and the seeded auction makes half the full row
// scans of the cold one; a first ε of δ/4, δ/64 or δ/128 made 12–63% more
// (docs/performance.md, "What a refresh costs on real features"). warmStart
// does not run, so leaves no seed, on costs of repeated points
// (seedRepeats).
//
// The time complexity of seedPrices is O(n²).
func (s *lsap) seedPrices() (p []float64, viol, lo, hi float64) {
	n, sol := s.nr, s.seed
	p = pricesOf(sol.V)
	parts := par.NParts(n)
	vs, los, his := make([]float64, parts), make([]float64, parts), make([]float64, parts)
	par.Parts(n, func(part, i0, i1 int) {
		v, l, h := 0.0, inf, -inf
		for i := i0; i < i1; i++ {
			m, row := inf, s.c[i*n:i*n+n]
			for j, x := range row {
				m = min(m, x-sol.V[j])
				if x < l {
					l = x
				}
				if x > h && x < inf {
					h = x
				}
			}
			v = max(v, sol.U[i]-m)
		}
		vs[part], los[part], his[part] = v, l, h
	})
	return p, slices.Max(vs), slices.Min(los), slices.Max(his)
}

// pricesOf returns the auction's prices for column potentials v: −v shifted
// so that the smallest is 0, so that bids of ε = 1e-13 of the cost scale do
// not vanish in the rounding of large prices.
func pricesOf(v []float64) []float64 {
	p, top := make([]float64, len(v)), slices.Max(v)
	for j, x := range v {
		p[j] = top - x
	}
	return p
}

// seedDiv divides the seed's largest violation into the first ε of a seeded
// auction (seedPrices).
const seedDiv = 16

// auctionMaxBids bounds the bids of one auction, per row. The auction's
// work grows with the total price rise it needs over ε: on the costs it
// serves the ε phases take 20–70 bids per row in all (n = 200–2000:
// Gaussian, uniform, integers, psda's Stage 1 and 2), but a problem that
// forces huge entries into the optimum (a column of 1e20) needs rises of that
// magnitude, ε by ε, and an infeasible one never ends.
const auctionMaxBids = 1000

// errAuctionBudget is returned by auction, with s reset, when it has made
// more than auctionMaxBids bids per row: the exact phase solves the problem
// cold.
var errAuctionBudget = errors.New("assign: auction over its bid budget")

// auctionTheta is the factor by which each ε phase divides ε.
const auctionTheta = 4

// auctionDeep resumes the auction from the exact phase's state (prices −v,
// its assignment, whose entries are tight) with ε phases from 1e-9 down to
// 1e-13 of the cost range, then keeps every row tight to within tightRel
// (tightenWithin). It serves tie-heavy costs: after auctionInit each row
// sits ε above its second best, tighten frees most rows of such a matrix,
// and each augmenting path crosses a plateau of exactly tied columns (2-D
// ReLU features: most rows freed, hundreds of columns settled per path).
// Deeper phases leave no row to free.
func (s *lsap) auctionDeep(h *Hooks) error {
	scale := costScale(s.c)
	if !(scale > 0) {
		return nil
	}
	if err := s.auction(pricesOf(s.v), scale*1e-9, scale*1e-13, h); err != nil {
		return err
	}
	s.tightenWithin(tightRel)
	return nil
}

// auction runs Gauss–Seidel ε phases from eps0 down to epsMin (each divides
// ε by auctionTheta) on prices p, starting from the assignment in s (rows
// that satisfy ε-complementary slackness keep their column), and sets
// v = −p.
func (s *lsap) auction(p []float64, eps0, epsMin float64, h *Hooks) error {
	n, c := s.nr, s.c
	owner, free := s.row4col, make([]int, 0, n)
	cache := newBidCache(n, n)
	phases, bids := epsPhases(auctionTheta, epsMin/eps0/auctionTheta), 0
	for phase, eps := 0, eps0; ; phase, eps = phase+1, eps/auctionTheta {
		h.progress(float64(phase) / float64(phases))
		eps = math.Max(eps, epsMin)
		// Keep the rows that already satisfy ε-complementary slackness for
		// the new ε; the rest bid again.
		free = free[:0]
		for i := n - 1; i >= 0; i-- {
			j := s.col4row[i]
			if j >= 0 {
				if w1, _, _, _ := cache.best2(i, c[i*n:i*n+n], p); c[i*n+j]+p[j] <= w1+eps {
					continue
				}
			}
			if j >= 0 {
				owner[j], s.col4row[i] = -1, -1
			}
			free = append(free, i)
		}
		for len(free) > 0 {
			if bids++; bids%pollEvery == 0 {
				if err := h.stop(); err != nil {
					return err
				}
				if bids > auctionMaxBids*n {
					s.reset()
					return errAuctionBudget
				}
			}
			i := free[len(free)-1]
			free = free[:len(free)-1]
			w1, w2, j1, _ := cache.best2(i, c[i*n:i*n+n], p)
			if j1 < 0 {
				// A row with no allowed entry: start the exact phase cold,
				// it reports the infeasibility.
				for k := range s.col4row {
					s.col4row[k] = -1
				}
				for k := range owner {
					owner[k] = -1
				}
				clear(s.v)
				return nil
			}
			// Raise by at least 8 ulps of this price, so that it rises: a
			// floor from the largest price instead made every bid as coarse
			// as the dearest column.
			pj, raise := p[j1], eps
			if w2 < inf {
				raise += w2 - w1
			}
			p[j1] += max(raise, 8*(math.Nextafter(math.Abs(pj), inf)-math.Abs(pj)))
			if k := owner[j1]; k >= 0 {
				s.col4row[k] = -1
				free = append(free, k)
			}
			owner[j1], s.col4row[i] = i, j1
		}
		if eps == epsMin {
			break
		}
	}
	for j := range p {
		s.v[j] = -p[j]
	}
	s.bids += bids
	s.scans += cache.scans
	h.progress(1)
	return nil
}

// epsPhases returns the number of ε phases of an auction that divides ε by
// theta from span/theta down to rel·span: ⌈log_θ(1/rel)⌉.
func epsPhases(theta, rel float64) int {
	return max(1, int(math.Ceil(-math.Log(rel)/math.Log(theta))))
}

// costRange returns the smallest and the largest finite entry of c, whose
// entries are finite or +Inf ((+Inf, −Inf) when none is finite). Plain
// comparisons, not math.Min/Max: there is no NaN to order, and this pass
// reads every entry of the matrix.
func costRange(c []float64) (lo, hi float64) {
	lo, hi = inf, -inf
	for _, x := range c {
		if x < lo {
			lo = x
		}
		if x > hi && x < inf {
			hi = x
		}
	}
	return lo, hi
}

// costScale returns the scale of the cost differences that decide an
// assignment of c (finite or +Inf entries), for the ε of an auction: the
// range of the finite entries, but at most scaleFactor times the distance
// from the smallest entry to the median of a sample of scaleSample finite
// entries (to the smallest sampled entry above it when the median is the
// smallest). A minority of huge entries, such as one 1e20 or a diagonal of
// them, then leaves the scale at that of the rest; a range without outliers
// is within scaleFactor times the median's distance and is kept as it is.
// It returns 0 for a matrix with fewer than two distinct finite values.
// Time O(len(c)) for the range plus O(scaleSample·log scaleSample).
func costScale(c []float64) float64 {
	lo, hi := costRange(c)
	return costScaleIn(c, lo, hi)
}

// costScaleIn is costScale for the matrix c whose finite entries range
// over [lo, hi] (costRange's result, found by a pass made anyway).
func costScaleIn(c []float64, lo, hi float64) float64 {
	if !(hi > lo) {
		return 0
	}
	// A multiplicative walk through the indices: a stride would sample a
	// single column whenever it is a multiple of the row length.
	m := min(len(c), scaleSample)
	sample := make([]float64, 0, m)
	for k := 0; k < m; k++ {
		idx := int((uint64(k) * 0x9E3779B97F4A7C15 >> 1) % uint64(len(c)))
		if len(c) <= scaleSample {
			idx = k
		}
		if x := c[idx]; x < inf {
			sample = append(sample, x)
		}
	}
	slices.Sort(sample)
	d := 0.0
	if len(sample) > 0 {
		d = sample[len(sample)/2] - lo
		if !(d > 0) {
			if k, _ := slices.BinarySearch(sample, math.Nextafter(lo, inf)); k < len(sample) {
				d = sample[k] - lo
			}
		}
	}
	if !(d > 0) {
		return hi - lo
	}
	return min(hi-lo, scaleFactor*d)
}

// scaleSample is the number of entries costScale sorts.
const scaleSample = 4096

// scaleFactor is how far beyond the median's distance from the smallest
// entry costScale lets the range reach. Gaussian costs have their range at
// about twice that distance and squared distances between Gaussian points
// at two to three times, so ordinary costs, heavy tails included, keep
// their range and the auctions their tuned ε schedule; only outliers many
// orders of magnitude away are cut. The cut scale still resolves costs:
// prices of magnitude 1e3·d carry rounding errors near 1e-13·d.
const scaleFactor = 1000

// cacheK is the number of candidate columns bidCache keeps per row.
const cacheK = 8

// bidCache keeps, for every row, the cacheK columns with the smallest
// c[i][j]+p[j] at the row's last full scan and the next smallest value lb.
// Prices only rise during the auction, so lb stays a lower bound on the value
// of every column outside the cache: whenever the two best cached values are
// at most lb they are the true two best, and a bid costs O(cacheK) instead of
// O(n). Otherwise the row is rescanned. (Bertsekas calls this keeping a
// candidate list; the check makes it exact.)
//
// The cache holds the costs c[i][j] of its columns beside their indices:
// read from the matrix, the cacheK entries of a bid were cacheK cache misses
// in a row of the matrix, which made 45% of the imbalanced auction's time at
// 20000 × 1000 (docs/performance.md, "The Stage 1 auction's bids"); the
// copies are the same numbers, so every bid is the one it was.
type bidCache struct {
	ent   []cacheEntry
	lb    []float64
	k     int
	topV  []float64
	topJ  []int
	scans int // full row scans so far (benchmarks' work counter)
}

// cacheEntry is one cached column j of a row and its cost c[i][j].
type cacheEntry struct {
	c float64
	j int
}

// newBidCache returns an empty cache for nr rows bidding on nc columns.
func newBidCache(nr, nc int) *bidCache {
	k := min(cacheK, nc)
	b := &bidCache{ent: make([]cacheEntry, nr*k), lb: make([]float64, nr), k: k, topV: make([]float64, k+1), topJ: make([]int, k+1)}
	for i := range b.lb {
		b.lb[i] = -inf // forces a full scan on first use
	}
	return b
}

// best2 returns the smallest value w1 of row[j]+p[j] over all j, its column
// j1 and its cost c1 = row[j1], and a lower bound w2 >= w1 on the second
// smallest (exact after a full scan, otherwise the smaller of the cached
// second best and lb). A bid raising p[j1] by w2−w1+ε with such a w2 still
// leaves the row within ε of its best, which is all ε-complementary
// slackness asks. row must be the same for every call with the same i.
func (b *bidCache) best2(i int, row, p []float64) (w1, w2 float64, j1 int, c1 float64) {
	w1, w2, j1 = inf, inf, -1
	ent := b.ent[i*b.k : i*b.k+b.k]
	for _, e := range ent {
		if h := e.c + p[e.j]; h < w2 {
			if h < w1 {
				w2, w1, j1, c1 = w1, h, e.j, e.c
			} else {
				w2 = h
			}
		}
	}
	if w1 <= b.lb[i] {
		return w1, math.Min(w2, b.lb[i]), j1, c1
	}
	// Full scan keeping the k+1 smallest values in sorted order.
	b.scans++
	topV, topJ := b.topV, b.topJ
	m := topk.SmallestK(row, p, topV, topJ)
	if m == 0 {
		return inf, inf, -1, inf
	}
	for t, j := range topJ[:b.k] {
		ent[t] = cacheEntry{row[j], j}
	}
	b.lb[i] = inf
	if m > b.k {
		b.lb[i] = topV[b.k]
	}
	w1, j1 = topV[0], topJ[0]
	if m > 1 {
		w2 = topV[1]
	}
	return w1, w2, j1, row[j1]
}
