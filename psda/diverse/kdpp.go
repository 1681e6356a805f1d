package diverse

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// logESP returns log e_l^m for l = 0..k and m = 0..N, row-major in (k+1)×(N+1):
// the elementary symmetric polynomials of lam[:m], by the recursion
// e_l^m = e_l^{m-1} + λ_m e_{l-1}^{m-1} (Kulesza & Taskar 2011, Algorithm 7)
// in log space, so that large N and k cannot overflow.
func logESP(lam []float64, k int) []float64 {
	n := len(lam)
	e := make([]float64, (k+1)*(n+1))
	for l := 1; l <= k; l++ {
		e[l*(n+1)] = math.Inf(-1)
	}
	for m := 1; m <= n; m++ {
		ll := math.Log(lam[m-1])
		for l := 1; l <= k; l++ {
			a, b := e[l*(n+1)+m-1], ll+e[(l-1)*(n+1)+m-1]
			e[l*(n+1)+m] = logAddExp(a, b)
		}
	}
	return e
}

func logAddExp(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(a, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// SampleKDPP draws nb independent k-subsets of [0, n) from the k-DPP whose
// L-ensemble has eigenvalues lam (N of them, >= 0) and orthonormal
// eigenvectors v (n×N, row-major), writing them to out (nb×k, row-major).
//
// It follows Kulesza & Taskar, "k-DPPs: Fixed-Size Determinantal Point
// Processes" (ICML 2011), Algorithm 1: eigenvector m is kept with probability
// λ_m e_{l-1}^{m-1} / e_l^m walking m from N down (l still to choose); then
// the projection DPP of the kept vectors V is sampled row by row, row i with
// probability proportional to its squared distance from the span of the rows
// chosen so far. Deviation: that distance comes from incremental Gram–Schmidt
// on the projection kernel K = V Vᵀ (c_t(·) = (K(·, i_t) − Σ_{s<t} c_s(·)c_s(i_t)) /
// ‖·‖), O(n k) a row, instead of re-orthonormalising V after every row
// (the same distribution; O(n k²) instead of O(n k³) a draw).
// stop (may be nil) is polled after every draw; done (may be nil) receives
// the number of draws finished. The time complexity is O(N k + nb (N + n k²)).
func SampleKDPP(lam []float64, v []float64, n, k, nb int, seed uint64, out []int64, stop func() bool, done func(int)) error {
	N := len(lam)
	switch {
	case n < 1 || k < 1 || nb < 0:
		return fmt.Errorf("diverse: n = %d, k = %d, nb = %d: want n, k >= 1 and nb >= 0", n, k, nb)
	case k > n:
		return fmt.Errorf("diverse: k = %d rows of n = %d: a k-subset needs k <= n", k, n)
	case len(v) != n*N:
		return fmt.Errorf("diverse: v has %d values, want n·N = %d", len(v), n*N)
	case len(out) < nb*k:
		return fmt.Errorf("diverse: out has %d values, want nb·k = %d", len(out), nb*k)
	}
	pos := 0
	for m, l := range lam {
		if !(l >= 0) || math.IsInf(l, 1) {
			return fmt.Errorf("diverse: lam[%d] = %g: the eigenvalues must be finite and >= 0", m, l)
		}
		if l > 0 {
			pos++
		}
	}
	// A NaN or Inf in v would turn the row probabilities into NaN, and the
	// draws into whatever the comparisons with NaN pick (issue 25).
	for i, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("diverse: v[%d] = %g (row %d, eigenvector %d): the eigenvectors must be finite", i, x, i/N, i%N)
		}
	}
	if pos < k {
		return fmt.Errorf("diverse: %d positive eigenvalues, fewer than k = %d: no k-subset has positive probability", pos, k)
	}
	e := logESP(lam, k)
	rng := rand.New(rand.NewPCG(seed, 0x2545f4914f6cdd1d))
	cols := make([]int, k)
	vj := make([]float64, n*k)
	norm2 := make([]float64, n)
	c := make([]float64, k*n)
	chosen := make([]bool, n)
	for r := 0; r < nb; r++ {
		if stop != nil && stop() {
			return ErrCancelled
		}
		// Step 1: the eigenvectors.
		l := k
		for m := N; m >= 1 && l > 0; m-- {
			p := math.Exp(math.Log(lam[m-1]) + e[(l-1)*(N+1)+m-1] - e[l*(N+1)+m])
			if rng.Float64() < p {
				l--
				cols[l] = m - 1
			}
		}
		if l > 0 {
			return fmt.Errorf("diverse: internal: chose %d of %d eigenvectors", k-l, k)
		}
		for i := 0; i < n; i++ {
			s := 0.0
			for j, m := range cols {
				x := v[i*N+m]
				vj[i*k+j] = x
				s += x * x
			}
			norm2[i] = s
			chosen[i] = false
		}
		// Step 2: the projection DPP, by the chain rule.
		row := out[r*k : (r+1)*k]
		for t := 0; t < k; t++ {
			total := 0.0
			for i, x := range norm2 {
				if x > 0 && !chosen[i] {
					total += x
				}
			}
			u := rng.Float64() * total
			pick := -1
			for i, x := range norm2 {
				if x > 0 && !chosen[i] {
					pick = i
					if u -= x; u < 0 {
						break
					}
				}
			}
			if pick < 0 {
				return fmt.Errorf("diverse: internal: no row of positive weight at step %d of %d", t, k)
			}
			row[t] = int64(pick)
			chosen[pick] = true
			inv := 1 / math.Sqrt(norm2[pick])
			vp := vj[pick*k : (pick+1)*k]
			ct := c[t*n : (t+1)*n]
			for i := 0; i < n; i++ {
				dot := 0.0
				vi := vj[i*k : (i+1)*k]
				for j, x := range vp {
					dot += vi[j] * x
				}
				ct[i] = dot
			}
			// Row by row of c (contiguous), not column by column.
			for s := 0; s < t; s++ {
				cs := c[s*n : (s+1)*n]
				coef := cs[pick]
				for i, x := range cs {
					ct[i] -= x * coef
				}
			}
			for i := range ct {
				ct[i] *= inv
				norm2[i] -= ct[i] * ct[i]
			}
		}
		if done != nil {
			done(r + 1)
		}
	}
	return nil
}
