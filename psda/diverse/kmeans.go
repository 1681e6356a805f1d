package diverse

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Clustering is a weighted k-means problem with a minimum cluster size: M
// rows X (row-major, D features each) with weights W > 0, assigned to K
// clusters by Group (each in [0, K)), every cluster keeping at least MinSize
// rows. Its objective is the weighted within-cluster sum of squares
//
//	SSE = Σ_h Σ_{i∈h} W[i]·‖X[i] − c_h‖²,   c_h = Σ_{i∈h} W[i]X[i] / Σ_{i∈h} W[i]          (3)
//
// the weighted kernel k-means objective (Dhillon, Guan & Kulis, KDD 2004,
// eq. 1) written in the kernel's feature map X = φ(x).
type Clustering struct {
	X       []float64
	M, D    int
	W       []float64
	Group   []int64
	K       int
	MinSize int
}

// SSE evaluates (3) from scratch in O(M·D).
func (c *Clustering) SSE() float64 {
	sum, wt := c.centroids()
	f := 0.0
	for i := 0; i < c.M; i++ {
		h := int(c.Group[i])
		f += c.W[i] * dist2Centroid(c.X[i*c.D:(i+1)*c.D], sum[h*c.D:(h+1)*c.D], wt[h])
	}
	return f
}

func (c *Clustering) centroids() (sum, wt []float64) {
	sum, wt = make([]float64, c.K*c.D), make([]float64, c.K)
	for i := 0; i < c.M; i++ {
		h := int(c.Group[i])
		wt[h] += c.W[i]
		for k, v := range c.X[i*c.D : (i+1)*c.D] {
			sum[h*c.D+k] += c.W[i] * v
		}
	}
	return sum, wt
}

// dist2Centroid is ‖x − s/w‖² for a cluster of weighted sum s and weight w.
func dist2Centroid(x, s []float64, w float64) float64 {
	d := 0.0
	for k, v := range x {
		t := v - s[k]/w
		d += t * t
	}
	return d
}

func (c *Clustering) check() error {
	switch {
	case c.M < 1 || c.D < 1 || c.K < 1:
		return fmt.Errorf("diverse: %d rows, %d features, %d clusters: all must be >= 1", c.M, c.D, c.K)
	case len(c.X) != c.M*c.D:
		return fmt.Errorf("diverse: X has %d values, want M·D = %d", len(c.X), c.M*c.D)
	case len(c.W) != c.M || len(c.Group) != c.M:
		return fmt.Errorf("diverse: W and Group need M = %d entries each", c.M)
	case c.MinSize < 1 || c.MinSize*c.K > c.M:
		return fmt.Errorf("diverse: MinSize = %d with K = %d clusters of M = %d rows: want 1 <= MinSize <= M/K",
			c.MinSize, c.K, c.M)
	}
	count := make([]int, c.K)
	for i, g := range c.Group {
		if g < 0 || int(g) >= c.K {
			return fmt.Errorf("diverse: Group[%d] = %d: want 0 <= group < K = %d", i, g, c.K)
		}
		if !(c.W[i] > 0) || math.IsInf(c.W[i], 0) {
			return fmt.Errorf("diverse: W[%d] = %g: weights must be finite and > 0", i, c.W[i])
		}
		count[g]++
	}
	for h, n := range count {
		if n < c.MinSize {
			return fmt.Errorf("diverse: cluster %d starts with %d rows, fewer than MinSize = %d", h, n, c.MinSize)
		}
	}
	return nil
}

// WeightedKMeans improves c.Group in place by single-row moves (Hartigan &
// Wong's k-means, AS 136, 1979, weighted): visit the rows in random order;
// for row i in cluster a, holding more than MinSize rows, move it to the
// cluster b that lowers (3) most,
//
//	ΔSSE = W_b·w_i/(W_b + w_i)·‖x_i − c_b‖² − W_a·w_i/(W_a − w_i)·‖x_i − c_a‖²          (4)
//
// (W_h the cluster weights), if ΔSSE < 0. Every move lowers (3), and no move
// empties a cluster below MinSize, so the constraint holds throughout. Passes
// repeat until one moves nothing or o.Passes is reached; o.Stop is polled
// every 64 visits and o.OnPass called after every pass (o.Sign and
// o.Partners are not used). Returns SSE at the start and after each pass,
// recomputed from scratch. Time O(M·K·D) per pass.
func WeightedKMeans(c *Clustering, o Options) ([]float64, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	d := c.D
	sum, wt := c.centroids()
	count := make([]int, c.K)
	for _, g := range c.Group {
		count[g]++
	}
	f := c.SSE()
	history := []float64{f}
	tol := 1e-12 * math.Max(f, 1e-300)
	rng := rand.New(rand.NewPCG(o.Seed, 0x6a09e667f3bcc909))
	order := make([]int, c.M)
	for i := range order {
		order[i] = i
	}
	for pass := 1; pass <= o.Passes; pass++ {
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		moves := 0
		for v, i := range order {
			if o.Stop != nil && v%64 == 0 && o.Stop() {
				return history, ErrCancelled
			}
			a := int(c.Group[i])
			if count[a] <= c.MinSize {
				continue
			}
			x, w := c.X[i*d:(i+1)*d], c.W[i]
			// Removing i from a saves W_a·w/(W_a − w)·‖x − c_a‖².
			gain := wt[a] * w / (wt[a] - w) * dist2Centroid(x, sum[a*d:(a+1)*d], wt[a])
			best, bestB := 0.0, -1
			for b := 0; b < c.K; b++ {
				if b == a {
					continue
				}
				df := wt[b]*w/(wt[b]+w)*dist2Centroid(x, sum[b*d:(b+1)*d], wt[b]) - gain
				if df < best {
					best, bestB = df, b
				}
			}
			if bestB < 0 || best >= -tol {
				continue
			}
			b := bestB
			for k, xv := range x {
				sum[a*d+k] -= w * xv
				sum[b*d+k] += w * xv
			}
			wt[a] -= w
			wt[b] += w
			count[a]--
			count[b]++
			c.Group[i] = int64(b)
			moves++
		}
		// From scratch, so that rounding in the running sums cannot drift.
		sum, wt = c.centroids()
		f = c.SSE()
		history = append(history, f)
		if o.OnPass != nil {
			o.OnPass(pass, f)
		}
		if moves == 0 {
			break
		}
	}
	return history, nil
}
