// Package diverse holds the set-up searches of the comparison samplers that
// psda measures PSDA against: the pairwise exchange search behind
// anticlustering (Papenberg & Klau 2021), the strata of VaRDASS (Napoli &
// White, arXiv 2512.05226) and the batch order of ORDERED (Napoli & White,
// arXiv 2605.05084). The Python package (python/psda/samplers) builds the
// problems; docs/samplers.md states the equations and every deviation.
package diverse

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// ErrCancelled is returned by Exchange when stop reported true.
var ErrCancelled = errors.New("diverse: cancelled")

// Problem is a partition of m slots into G groups with fixed sizes, scored by
//
//	F = Σ_g Omega[g] · ‖Σ_{i∈g} W[i]·X[i] − Centre[g]‖²          (1)
//
// X holds m rows of D features (row-major), W the slot weights, Group each
// slot's group in [0, G), Class each slot's exchange class (slots swap only
// within a class), Centre G rows of D values and Omega G weights.
type Problem struct {
	X      []float64
	M, D   int
	W      []float64
	Group  []int64
	Class  []int64
	Centre []float64
	Omega  []float64
}

// Options control Exchange.
type Options struct {
	Sign     float64     // +1 minimises F, -1 maximises it
	Passes   int         // most passes over the slots
	Partners int         // candidates per visit drawn at random from the class; <= 0: all of it
	Seed     uint64      // seeds the visiting order and the candidate draws
	Stop     func() bool // polled every 64 visits; true cancels (nil: never)
	OnPass   func(pass int, f float64)
}

// Objective evaluates (1) from scratch in O(M·D).
func (p *Problem) Objective() float64 {
	e := p.sums()
	return p.score(e)
}

func (p *Problem) sums() []float64 {
	g := len(p.Omega)
	e := make([]float64, g*p.D)
	for i := range e {
		e[i] = -p.Centre[i]
	}
	for i := 0; i < p.M; i++ {
		row, er := p.X[i*p.D:(i+1)*p.D], e[int(p.Group[i])*p.D:]
		for k, v := range row {
			er[k] += p.W[i] * v
		}
	}
	return e
}

func (p *Problem) score(e []float64) float64 {
	f := 0.0
	for g, om := range p.Omega {
		s := 0.0
		for _, v := range e[g*p.D : (g+1)*p.D] {
			s += v * v
		}
		f += om * s
	}
	return f
}

func (p *Problem) check() error {
	g := len(p.Omega)
	switch {
	case p.M < 1 || p.D < 1:
		return fmt.Errorf("diverse: %d slots of %d features: both must be >= 1", p.M, p.D)
	case len(p.X) != p.M*p.D:
		return fmt.Errorf("diverse: X has %d values, want M·D = %d", len(p.X), p.M*p.D)
	case len(p.W) != p.M || len(p.Group) != p.M || len(p.Class) != p.M:
		return fmt.Errorf("diverse: W, Group and Class need M = %d entries each", p.M)
	case len(p.Centre) != g*p.D:
		return fmt.Errorf("diverse: Centre has %d values, want G·D = %d", len(p.Centre), g*p.D)
	}
	for i, gi := range p.Group {
		if gi < 0 || int(gi) >= g {
			return fmt.Errorf("diverse: Group[%d] = %d: want 0 <= group < G = %d", i, gi, g)
		}
	}
	return nil
}

// Exchange runs the exchange method on p (Papenberg & Klau 2021, "Using
// anticlustering to partition data sets into equivalent parts", Psychological
// Methods 26(2), the exchange algorithm): visit the slots in random order; for
// slot i in group a, evaluate the swap with every candidate j of i's class in
// another group b, δ = W[j]X[j] − W[i]X[i],
//
//	ΔF = Ω_a(2E_a·δ + ‖δ‖²) + Ω_b(‖δ‖² − 2E_b·δ),   E_g = Σ_{l∈g} W[l]X[l] − Centre[g]     (2)
//
// and carry out the best swap if it improves Sign·F. Deviations from the
// paper: objective (1) generalises their k-means criterion (weights, centres
// and exchange classes, so that VaRDASS's strata and ORDERED's order are the
// same search); passes repeat until one makes no swap (their "local maximum"
// variant) or Passes is reached; Partners > 0 draws that many candidates per
// visit (their fast variant restricts candidates to nearest neighbours).
// Exchange updates p.Group in place and returns F at the start and after each
// pass (recomputed from scratch, so rounding cannot drift).
//
// The time complexity of a pass is O(M·C·D) for C candidates per visit.
func Exchange(p *Problem, o Options) ([]float64, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if o.Sign != 1 && o.Sign != -1 {
		return nil, fmt.Errorf("diverse: Sign = %g: want +1 (minimise) or -1 (maximise)", o.Sign)
	}
	d := p.D
	members := map[int64][]int{}
	for i, c := range p.Class {
		members[c] = append(members[c], i)
	}
	wx := make([]float64, len(p.X))
	for i := 0; i < p.M; i++ {
		for k := 0; k < d; k++ {
			wx[i*d+k] = p.W[i] * p.X[i*d+k]
		}
	}
	e := p.sums()
	f := p.score(e)
	history := []float64{f}
	scale := math.Abs(f)
	for i := 0; i < p.M; i++ {
		s := 0.0
		for _, v := range wx[i*d : (i+1)*d] {
			s += v * v
		}
		scale = math.Max(scale, p.Omega[p.Group[i]]*s)
	}
	tol := 1e-12 * math.Max(scale, 1e-300)
	rng := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	delta := make([]float64, d)
	order := make([]int, p.M)
	for i := range order {
		order[i] = i
	}
	for pass := 1; pass <= o.Passes; pass++ {
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		swaps := 0
		for v, i := range order {
			if o.Stop != nil && v%64 == 0 && o.Stop() {
				return history, ErrCancelled
			}
			a := int(p.Group[i])
			cand := members[p.Class[i]]
			count := len(cand)
			if o.Partners > 0 && o.Partners < count {
				count = o.Partners
			}
			ea, xi := e[a*d:(a+1)*d], wx[i*d:(i+1)*d]
			best, bestJ := 0.0, -1
			for c := 0; c < count; c++ {
				j := cand[c]
				if count < len(cand) {
					j = cand[rng.IntN(len(cand))]
				}
				b := int(p.Group[j])
				if b == a {
					continue
				}
				eb, xj := e[b*d:(b+1)*d], wx[j*d:(j+1)*d]
				var dea, deb, dd float64
				for k := range xj {
					t := xj[k] - xi[k]
					dea += ea[k] * t
					deb += eb[k] * t
					dd += t * t
				}
				df := o.Sign * (p.Omega[a]*(2*dea+dd) + p.Omega[b]*(dd-2*deb))
				if df < best {
					best, bestJ = df, j
				}
			}
			if bestJ >= 0 && best < -tol {
				j, b := bestJ, int(p.Group[bestJ])
				eb, xj := e[b*d:(b+1)*d], wx[j*d:(j+1)*d]
				for k := range delta {
					delta[k] = xj[k] - xi[k]
					ea[k] += delta[k]
					eb[k] -= delta[k]
				}
				p.Group[i], p.Group[j] = int64(b), int64(a)
				swaps++
			}
		}
		e = p.sums()
		f = p.score(e)
		history = append(history, f)
		if o.OnPass != nil {
			o.OnPass(pass, f)
		}
		if swaps == 0 {
			break
		}
	}
	return history, nil
}
