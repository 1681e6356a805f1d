package assign

import (
	"math/rand/v2"
	"testing"
)

// TestSharedRange checks the O(1) Shared (range minimum over a depth-first
// order) against the sum of Z over the blossoms that hold both vertices,
// computed from explicit vertex sets, on random laminar forests: deep
// chains, wide trees, vertices in no blossom, and zero duals.
func TestSharedRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 300; trial++ {
		n := 2 + rng.IntN(60)
		m := rng.IntN(n)
		// Random forest on the blossoms: parent id larger than the child,
		// so ids need no sorting; vertices attach to any blossom or none.
		d := MatchingDuals{Y: make([]float64, n), Z: make([]float64, m), Parent: make([]int, m), In: make([]int, n)}
		for b := range d.Z {
			d.Parent[b] = -1
			if b+1 < m && rng.IntN(4) > 0 {
				if trial%3 == 0 {
					d.Parent[b] = b + 1 // a chain: depth m
				} else {
					d.Parent[b] = b + 1 + rng.IntN(m-b-1)
				}
			}
			if rng.IntN(5) > 0 {
				d.Z[b] = rng.Float64()
			}
		}
		for v := range d.In {
			d.In[v] = rng.IntN(m+1) - 1
		}
		if err := d.prepare(); err != nil {
			t.Fatal(err)
		}
		if m > 0 && d.rng == nil {
			t.Fatal("no range table for non-negative duals")
		}
		holds := func(b, v int) bool {
			for c := d.In[v]; c >= 0; c = d.Parent[c] {
				if c == b {
					return true
				}
			}
			return false
		}
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if i == j {
					continue
				}
				want := 0.0
				for b, z := range d.Z {
					if holds(b, i) && holds(b, j) {
						want += z
					}
				}
				if got := d.Shared(i, j); !(abs(got-want) <= 1e-12*(1+want)) {
					t.Fatalf("trial %d: Shared(%d, %d) = %v, want %v", trial, i, j, got, want)
				}
			}
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
