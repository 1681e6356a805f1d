package assign

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/psda-dev/psda/psda/internal/par"
)

// Imbalanced solves the imbalanced assignment of the paper's eqs. 3–5: with
// nr >= nc it assigns every row of the row-major nr×nc cost matrix c to one
// column so that each column receives floor(nr/nc) or ceil(nr/nc) rows, at
// minimum total cost. The returned potentials satisfy Certify: with q =
// floor(nr/nc), every column that received q+1 rows has a potential no larger
// than every column that received q.
//
// Imbalanced requires 1 <= nc <= nr, len(c) == nr*nc and finite costs, and
// returns an error otherwise. With nr == nc it is Rectangular. Otherwise it
// solves docs/method.md's exact square model without big-M: with nr = q·nc + r,
// column j gets h copies (h = q+1, or q when r = 0) with identical costs,
// and nc−r dummy rows may take only the extra copy t = q of a column, at cost
// 0. The copies stay implicit: both phases work on nc columns, using that
// copies of a column differ only in their potentials.
//
//   - Warm start: a forward auction with ε-scaling in which a row bids for
//     the cheapest copy of its best column ("similar objects", Bertsekas and
//     Castañon 1989) and a dummy for the cheapest extra copy not held by a
//     dummy (so that interchangeable dummies never outbid each other).
//   - Exact finish: shortest augmenting paths (Crouse 2016) from the rows
//     left free, where the distance of copy (j,t) is D_j − v_(j,t) and D_j is
//     kept per column, so each scanned row costs O(nc), not O(nr+nc).
//
// The column potential returned is V_j = max_t v_(j,t). The time complexity
// of Imbalanced is O((nr+nc)²·nc) in the worst case; memory is O(nr+nc)
// besides c. With one column it is a copy, in time O(nr) (forcedColumn).
func Imbalanced(c []float64, nr, nc int) (*Solution, error) {
	return ImbalancedWith(c, nr, nc, nil)
}

// ImbalancedWith is Imbalanced with hooks that report progress and can stop
// the solve; it returns Stop's error when Stop asks it to.
func ImbalancedWith(c []float64, nr, nc int, h *Hooks) (*Solution, error) {
	if err := checkMatrix(c, nr, nc); err != nil {
		return nil, err
	}
	if nr < nc {
		return nil, fmt.Errorf("assign: Imbalanced needs nr >= nc, got %d rows and %d columns: transpose the matrix or use Rectangular", nr, nc)
	}
	if nr == nc {
		// Rectangular, without its check of c: checkMatrix's is stricter.
		s, err := solveLSAP(c, nr, nc, h)
		if err != nil {
			return nil, err
		}
		return s.solution(), nil
	}
	if nc == 1 {
		return forcedColumn(c), nil
	}
	sol, _, err := imbalancedFrom(c, nr, nc, nil, h)
	return sol, err
}

// imbalancedFrom is ImbalancedWith for nr > nc > 1 on checked input, its
// auction started from seed when non-nil (copySAP.seed); it also returns
// the solver's state, whose counters the benchmarks read.
func imbalancedFrom(c []float64, nr, nc int, seed *Solution, h *Hooks) (*Solution, *copySAP, error) {
	s := newCopySAP(c, nr, nc)
	s.seed = seed
	if err := s.auction(h.sub(0, 0.5)); err != nil {
		return nil, nil, err
	}
	s.tighten()
	// Persons in reverse, dummies first: they are cheap.
	last := nr + s.nd - 1
	err := augmentFree(last+1, func(p int) bool { return s.copyOf[last-p] < 0 },
		func(p int) bool { s.augment(last - p); return true }, h.sub(0.5, 1))
	if err != nil {
		return nil, nil, err
	}
	sol := &Solution{Col4Row: make([]int, nr), U: s.u[:nr], V: make([]float64, nc)}
	for i := range sol.Col4Row {
		j := s.copyOf[i] / s.h
		sol.Col4Row[i] = j
		sol.Cost += c[i*nc+j]
	}
	for j := range sol.V {
		sol.V[j] = -inf
		for _, x := range s.vc[j*s.h : j*s.h+s.h] {
			sol.V[j] = math.Max(sol.V[j], x)
		}
	}
	return sol, s, nil
}

// forcedColumn is Imbalanced with one column: every row must take it, so
// the assignment is a copy, in time O(nr). The potentials u_i = c_i, V = 0
// make every entry tight, which is Certify's certificate.
func forcedColumn(c []float64) *Solution {
	sol := &Solution{Col4Row: make([]int, len(c)), U: slices.Clone(c), V: []float64{0}}
	for _, x := range c {
		sol.Cost += x
	}
	return sol
}

// copySAP is the state of the implicit-copy solver. Persons 0..nr−1 are the
// rows, nr..nr+nd−1 the dummy rows; copy k = j·h+t is copy t of column j.
type copySAP struct {
	c             []float64
	nr, nc, q, h  int
	nd            int       // dummy rows: nc − r when r > 0, else 0
	u             []float64 // person potentials
	vc            []float64 // copy potentials
	copyOf, owner []int

	// scratch of augment
	d       []float64 // per column: min over scanned rows of d_i + c_ij − u_i
	predRow []int     // the row attaining d
	bestT   []int     // per column: the unsettled copy with the largest potential
	nextN   []int     // per column: copies settled in this augment (nextCopy)
	ord     []int     // per column j, ord[j*h:]: its copies in topCopy's order (nextCopy)
	ordAt   []int     // per column: the next index into ord, −1 before sorting
	act     []int     // columns with an unsettled copy
	settled []bool    // per copy
	lab     []float64 // per copy: distance when settled
	spred   []int     // per copy: person it was reached from
	sc      []int     // settled copies
	tree    []int     // persons reached, distances in treeD
	treeD   []float64

	// seed, when non-nil, is a solution of a problem of the same shape
	// (the previous refresh's) from whose prices and assignment the
	// auction starts (seedPrices).
	seed *Solution
	// work counters for the benchmarks: bids and full row scans of the
	// auction, copies settled by augment and copies it examined to find
	// each column's nearest one (topCopy, nextCopy).
	bids, scans, settledCopies, copyScans int
}

func newCopySAP(c []float64, nr, nc int) *copySAP {
	lo, hi := bounds(nr, nc)
	nd := 0
	if hi > lo {
		nd = nc - nr%nc
	}
	m := nc * hi
	s := &copySAP{
		c: c, nr: nr, nc: nc, q: lo, h: hi, nd: nd,
		u: make([]float64, nr+nd), vc: make([]float64, m),
		copyOf: make([]int, nr+nd), owner: make([]int, m),
		d: make([]float64, nc), predRow: make([]int, nc), bestT: make([]int, nc), act: make([]int, 0, nc),
		nextN: make([]int, nc), ord: make([]int, m), ordAt: make([]int, nc),
		settled: make([]bool, m), lab: make([]float64, m), spred: make([]int, m),
	}
	for p := range s.copyOf {
		s.copyOf[p] = -1
	}
	for k := range s.owner {
		s.owner[k] = -1
	}
	return s
}

// auction runs the ε-scaling forward auction on the copy model with prices
// −vc, as auctionInit does for square problems. A row's value for column j
// is c_ij plus the lowest price among j's copies, and a row bids for that
// copy ("similar objects", Bertsekas and Castañon 1989), by an increment
// set by its next best column, not by the next copy (levelRegular);
// within a phase prices only rise, so rows use a bidCache.
//
// Dummies are identical bidders whose value for an extra copy is its price.
// Left to the plain auction they bid against each other: a displaced dummy
// takes the cheapest extra copy, usually another dummy's, raising it by about
// ε, and the chain of displaced dummies lifts all dummy-held prices ε by ε
// until they reach the cheapest copy held by a real row. With q = 1 (nc − r
// dummies, nearly as many as columns) that price war made most of the bids,
// each a full rescan. Here a dummy bids only for the cheapest extra copy not
// held by a dummy (a heap, O(log nc) a bid), as if that war had run to its
// end without raising the other dummies' prices; swapping identical dummies
// changes nothing. The dummies then satisfy ε-complementary slackness only
// among the copies they may take, not among themselves; the equalisation
// below and the exact finish restore it. It returns hooks' Stop error when
// hooks stops it.
func (s *copySAP) auction(hooks *Hooks) error {
	nr, nc, h, c := s.nr, s.nc, s.h, s.c
	// The ε schedule follows costScale, not the range, for the reason
	// auctionInit gives: one huge entry made every price, and so every
	// potential of the exact finish, too coarse to tell the costs apart.
	span := costScale(c)
	if !(span > 0) {
		return nil
	}
	price := make([]float64, nc*h)
	const theta = 7
	eps0 := span / theta
	if s.seed != nil {
		eps0 = max(min(eps0, s.seedPrices(price)), span*1e-9)
	}
	minP, min2P, extraP := make([]float64, nc), make([]float64, nc), make([]float64, nc)
	minT := make([]int, nc)
	copies := newCopyHeap(price, nc, h)
	update := func(j int) {
		minT[j], minP[j], min2P[j] = copies.min2(j)
		if s.nd > 0 {
			extraP[j] = price[j*h+s.q]
		}
	}
	for j := 0; j < nc; j++ {
		update(j)
	}
	rows := newBidCache(nr, nc)
	// Extra copies not held by a dummy, cheapest first: where a displaced
	// dummy bids.
	eh := newPriceHeap(nc, func(j int) float64 { return price[j*h+s.q] })
	if s.nd > 0 {
		for j := 0; j < nc; j++ {
			eh.push(j)
		}
	}
	isDummy := func(p int) bool { return p >= nr }
	free := make([]int, 0, nr+s.nd)
	epsMin := span * 1e-9
	phases, bids := epsPhases(theta, 1e-9), 0
	defer func() { s.scans, s.bids = s.scans+rows.scans, s.bids+bids }()
	for phase, eps := 0, eps0; ; phase, eps = phase+1, eps/theta {
		hooks.progress(float64(phase) / float64(phases))
		eps = math.Max(eps, epsMin)
		if phase > 0 {
			for j := 0; j < nc; j++ {
				if s.levelRegular(price, j) {
					copies.rebuild(j)
					update(j)
				}
			}
		}
		minExtra := inf // the dummies' best value
		for j := 0; j < nc && s.nd > 0; j++ {
			if extraP[j] < minExtra {
				minExtra = extraP[j]
			}
		}
		free = free[:0]
		for p := len(s.copyOf) - 1; p >= 0; p-- {
			k := s.copyOf[p]
			if k >= 0 {
				if isDummy(p) {
					if price[k] <= minExtra+eps {
						continue
					}
					eh.push(k / h)
				} else if w1, _, _, _ := rows.best2(p, c[p*nc:p*nc+nc], minP); c[p*nc+k/h]+price[k] <= w1+eps {
					continue
				}
				s.owner[k], s.copyOf[p] = -1, -1
			}
			free = append(free, p)
		}
		for len(free) > 0 {
			if bids++; bids%pollEvery == 0 {
				if err := hooks.stop(); err != nil {
					return err
				}
				if bids > auctionMaxBids*(nr+s.nd) {
					// Huge entries forced into the optimum: let the
					// exact finish solve from a cold start.
					s.coldReset()
					return nil
				}
			}
			p := free[len(free)-1]
			free = free[:len(free)-1]
			var k int
			if !isDummy(p) {
				row := c[p*nc : p*nc+nc]
				// The increment is set by the row's next best column
				// and, with dummies, by the other class of column j
				// (its extra copy, or its cheapest regular copy when
				// the extra is the cheapest), not by the next copy of
				// the same class (levelRegular).
				w1, w2, j, cj := rows.best2(p, row, minP)
				k = j*h + minT[j]
				if s.nd > 0 {
					if minT[j] == s.q {
						w2 = math.Min(w2, cj+min2P[j])
					} else {
						w2 = math.Min(w2, cj+extraP[j])
					}
				}
				price[k] += max(w2-w1+eps, 8*ulp(price[k]))
			} else {
				// A dummy never bids against another dummy: they are
				// interchangeable, and such bids only raise the prices
				// of dummy-held copies ε by ε (a price war).
				j := eh.pop()
				k = j*h + s.q
				if w2 := eh.min(); w2 < inf {
					price[k] = max(w2+eps, price[k]+8*ulp(price[k]))
				} else {
					price[k] += max(eps, 8*ulp(price[k]))
				}
			}
			copies.raised(k)
			update(k / h)
			o := s.owner[k]
			if o >= 0 {
				s.copyOf[o] = -1
				free = append(free, o)
			}
			// Keep eh the extra copies not held by a dummy.
			if s.nd > 0 && k%h == s.q && !isDummy(p) {
				if o >= 0 && isDummy(o) {
					eh.push(k / h)
				} else {
					eh.fix(k / h)
				}
			}
			s.owner[k], s.copyOf[p] = p, k
		}
		if eps == epsMin {
			break
		}
	}
	// Copies held by rows end apart by the bids since the last levelling,
	// and tighten frees every row not on a copy at its column's lowest
	// price. Level the regular copies, then raise the copies held by rows
	// to the highest of them (a real-held extra copy above the regular
	// ones: raising the others to it freed fewer rows on uniform costs
	// with dummies than lowering it).
	for j := 0; j < nc; j++ {
		s.levelRegular(price, j)
		m := -inf
		for k := j * h; k < j*h+h; k++ {
			if o := s.owner[k]; o >= 0 && o < nr && price[k] > m {
				m = price[k]
			}
		}
		for k := j * h; k < j*h+h; k++ {
			if o := s.owner[k]; o >= 0 && o < nr {
				price[k] = m
			}
		}
	}
	// Dummies are interchangeable, so at the optimum every extra copy they
	// hold has the same price λ, the lowest of all extra copies (the
	// separation condition of Certify). The auction leaves them apart: raise
	// every extra copy priced below the highest dummy-held one to it. Raising
	// prices keeps the potentials feasible; tighten frees the real rows whose
	// extra copy it raised, and the exact finish reassigns them.
	lambda := -inf
	for p := nr; p < nr+s.nd; p++ {
		if k := s.copyOf[p]; k >= 0 {
			lambda = math.Max(lambda, price[k])
		}
	}
	if s.nd > 0 {
		for j := 0; j < nc; j++ {
			k := j*h + s.q
			price[k] = math.Max(price[k], lambda)
		}
	}
	for k, x := range price {
		s.vc[k] = -x
	}
	hooks.progress(1)
	return nil
}

// levelRegular lowers every regular copy of column j (t < q) held by a
// real row to the lowest price among j's regular copies, between the
// auction's ε phases, and reports whether a price changed.
//
// Copies of a column are similar objects (Bertsekas and Castañon, "The
// auction algorithm for transportation problems", Annals of OR 20, 1989):
// a row bids for the cheapest regular copy, and its increment comes from
// its next best column, not from the next copy (which is the same object
// to it). Bidding against the next copy, as the auction first did, raised
// a copy ε above it: the copies' prices ended each phase about ε apart,
// the next phase's check (a row keeps its copy only within the new,
// smaller ε of its best value) freed about 70% of the rows every phase,
// and each bid of the ensuing chains of displaced rows raised a copy of
// the same column by ε (85–110 bids per row at 20000 × 1000;
// docs/performance.md, "The Stage 1 auction's bids"). With the increment
// from the next column, a column's copies end a phase at the prices its
// bidders would pay, apart by more than ε; the levelling puts them back
// at the lowest. It keeps ε-complementary slackness: every row values
// column j at the lowest price of its copies, which the levelling leaves
// as it is, so no row's best value changes (nor the bid cache's bounds),
// and the holders' values only fall. The extra copies (t = q, with
// dummies) are a second class: a dummy may take them, so they are the
// dummies' market (extraP, eh) and keep their prices. The time complexity
// is O(h).
func (s *copySAP) levelRegular(price []float64, j int) bool {
	reg := price[j*s.h : j*s.h+s.q]
	m := slices.Min(reg)
	changed := false
	for t, x := range reg {
		if o := s.owner[j*s.h+t]; o >= 0 && o < s.nr && x != m {
			reg[t], changed = m, true
		}
	}
	return changed
}

// seedPrices starts the auction from s.seed as lsap.seedPrices does for
// square problems: every copy of column j gets the price −V[j] (pricesOf),
// each row the next copy of its seed column (rows beyond a column's h
// copies, and the dummies, start free), and it returns the first ε,
// seedDiv⁻¹ times the largest amount δ by which a seeded row's entry
// exceeds its best value min_j (c_ij + p_j): the seeded assignment
// satisfies ε-complementary slackness for ε = δ, so the phases of larger ε
// have nothing to do. The time complexity is O(nr·nc), one pass over c.
func (s *copySAP) seedPrices(price []float64) float64 {
	nc, h, sol := s.nc, s.h, s.seed
	p := pricesOf(sol.V)
	for k := range price {
		price[k] = p[k/h]
	}
	next := make([]int, nc) // the next copy of each column to hand out
	delta := 0.0
	for i, j := range sol.Col4Row[:s.nr] {
		if next[j] == h {
			continue
		}
		k := j*h + next[j]
		next[j]++
		s.owner[k], s.copyOf[i] = i, k
		m, row := inf, s.c[i*nc:i*nc+nc]
		for jj, x := range row {
			m = min(m, x+p[jj])
		}
		delta = max(delta, row[j]+p[j]-m)
	}
	return delta / seedDiv
}

// coldReset drops the auction's assignment and prices, for an auction over
// its bid budget.
func (s *copySAP) coldReset() {
	for p := range s.copyOf {
		s.copyOf[p] = -1
	}
	for k := range s.owner {
		s.owner[k] = -1
	}
	clear(s.vc)
}

// ulp returns the spacing of float64 values at x: a bid raises a price by at
// least 8 of them, so that the price rises even when ε is below them.
func ulp(x float64) float64 {
	x = math.Abs(x)
	return math.Nextafter(x, inf) - x
}

// tighten sets each person's potential to its smallest reduced cost, which
// makes the potentials feasible, and frees every person whose copy is not
// exactly tight.
func (s *copySAP) tighten() {
	nc, h := s.nc, s.h
	colMax := make([]float64, nc) // largest copy potential of each column
	for j := range colMax {
		colMax[j] = -inf
		for _, x := range s.vc[j*h : j*h+h] {
			colMax[j] = math.Max(colMax[j], x)
		}
	}
	// The dummies' common minimum, then every person on all cores (a
	// freed person's copy is its own: no race).
	dummyMin := inf
	for j := 0; j < nc && s.nd > 0; j++ {
		dummyMin = math.Min(dummyMin, -s.vc[j*h+s.q])
	}
	par.Rows(len(s.copyOf), func(p0, p1 int) {
		for p := p0; p < p1; p++ {
			m := dummyMin
			if p < s.nr {
				m = inf
				colMax := colMax[:nc]
				for j, x := range s.c[p*nc : p*nc+nc] {
					if r := x - colMax[j]; r < m {
						m = r
					}
				}
			}
			s.u[p] = m
			if k := s.copyOf[p]; k >= 0 && s.cost(p, k)-s.vc[k] != m {
				s.copyOf[p], s.owner[k] = -1, -1
			}
		}
	})
}

// cost returns the cost of person p on copy k (dummies only use extra copies).
func (s *copySAP) cost(p, k int) float64 {
	if p < s.nr {
		return s.c[p*s.nc+k/s.h]
	}
	return 0
}

// augment finds a shortest augmenting path from the free person p0 to a free
// copy in the reduced costs, updates the potentials as Crouse's method does
// and flips the path.
func (s *copySAP) augment(p0 int) {
	nc, h, q := s.nc, s.h, s.q
	d, vc := s.d, s.vc
	s.act = s.act[:0]
	for j := 0; j < nc; j++ {
		d[j] = inf
		s.act = append(s.act, j)
		s.bestT[j] = s.topCopy(j)
		s.nextN[j], s.ordAt[j] = 0, -1
	}
	dd, predD := inf, -1 // the dummies' common distance to every extra copy
	s.tree, s.treeD, s.sc = s.tree[:0], s.treeD[:0], s.sc[:0]
	reach := func(p int, dp float64) {
		s.tree = append(s.tree, p)
		s.treeD = append(s.treeD, dp)
		if p >= s.nr {
			if x := dp - s.u[p]; x < dd {
				dd, predD = x, p
			}
			return
		}
		row, base := s.c[p*nc:p*nc+nc], dp-s.u[p]
		for _, j := range s.act {
			if x := base + row[j]; x < d[j] {
				d[j], s.predRow[j] = x, p
			}
		}
	}
	reach(p0, 0)
	var sink int
	var delta float64
	for {
		bestL, bi, bk, via := inf, -1, -1, -1
		for it, j := range s.act {
			k := j*h + s.bestT[j]
			if x := d[j] - vc[k]; x < bestL || (x == bestL && s.owner[k] < 0) {
				bestL, bi, bk, via = x, it, k, s.predRow[j]
			}
			if dd < inf && h > q {
				if k := j*h + q; !s.settled[k] {
					if x := dd - vc[k]; x < bestL || (x == bestL && s.owner[k] < 0) {
						bestL, bi, bk, via = x, it, k, predD
					}
				}
			}
		}
		// bestL < inf: every person can reach a free copy.
		k, j := bk, bk/h
		s.settled[k], s.lab[k], s.spred[k] = true, bestL, via
		s.sc = append(s.sc, k)
		s.settledCopies++
		if t := s.nextCopy(j); t >= 0 {
			s.bestT[j] = t
		} else {
			last := len(s.act) - 1
			s.act[bi] = s.act[last]
			s.act = s.act[:last]
		}
		if o := s.owner[k]; o < 0 {
			sink, delta = k, bestL
			break
		} else {
			reach(o, bestL)
		}
	}
	for it, p := range s.tree {
		s.u[p] += delta - s.treeD[it]
	}
	for _, k := range s.sc {
		vc[k] -= delta - s.lab[k]
		s.settled[k] = false
	}
	for k := sink; ; {
		p := s.spred[k]
		old := s.copyOf[p]
		s.owner[k], s.copyOf[p] = p, k
		if p == p0 {
			return
		}
		k = old
	}
}

// nextCopy is topCopy after a copy of column j was settled. The potentials
// and owners stay fixed during an augmentation, so after log2(h) scans of
// column j it sorts j's copies once in topCopy's order (largest potential
// first, then the free copies by decreasing index, then the held ones by
// increasing index) and walks them, skipping the settled ones: an
// augmentation examines each copy O(log h) times, not once per settled
// copy of its column. Rescanning made a path that settles many tied copies
// of one column O(h²): with identical rows a column's copies end the
// auction at one potential, and where the rounding of the potentials left
// that column a hair nearer than the next one's free copies, each path
// from a freed row settled about q of them (12000 × 3 took 82 CPU s on one
// row of costs, 0.3 on another; docs/performance.md). It returns the copy
// topCopy returns (potentials are finite), so the paths are unchanged.
func (s *copySAP) nextCopy(j int) int {
	if s.nextN[j] < bits.Len(uint(s.h)) {
		s.nextN[j]++
		return s.topCopy(j)
	}
	h, base := s.h, j*s.h
	ord := s.ord[base : base+h]
	if s.ordAt[j] < 0 {
		s.copyScans += h
		for t := range ord {
			ord[t] = t
		}
		slices.SortFunc(ord, func(a, b int) int {
			ka, kb := base+a, base+b
			if c := cmp.Compare(s.vc[kb], s.vc[ka]); c != 0 {
				return c
			}
			fa, fb := s.owner[ka] < 0, s.owner[kb] < 0
			switch {
			case fa != fb && fa:
				return -1
			case fa != fb:
				return 1
			case fa:
				return b - a
			}
			return a - b
		})
		s.ordAt[j] = 0
	}
	for s.ordAt[j] < h && s.settled[base+ord[s.ordAt[j]]] {
		s.ordAt[j]++
		s.copyScans++
	}
	if s.ordAt[j] == h {
		return -1
	}
	return ord[s.ordAt[j]]
}

// topCopy returns the unsettled copy of column j with the largest potential
// (the nearest one from any row), preferring a free copy, or −1.
func (s *copySAP) topCopy(j int) int {
	s.copyScans += s.h
	bt, bv := -1, -inf
	for t := 0; t < s.h; t++ {
		k := j*s.h + t
		if s.settled[k] {
			continue
		}
		if v := s.vc[k]; bt < 0 || v > bv || (v == bv && s.owner[k] < 0) {
			bt, bv = t, v
		}
	}
	return bt
}
