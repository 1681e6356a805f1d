package psda

import "testing"

// TestPrefault checks that prefault, which may only map pages, leaves a
// matrix as it was: fresh (zero) or written, whole or a part of it that
// starts and ends inside pages.
func TestPrefault(t *testing.T) {
	for _, n := range []int{0, 1, 511, 1 << 20, freeAbove + 3} {
		c := make([]float64, n)
		prefault(c)
		for i, v := range c {
			if v != 0 {
				t.Fatalf("n = %d: entry %d of a fresh matrix is %v after prefault, want 0", n, i, v)
			}
		}
		for i := range c {
			c[i] = float64(i) + 0.5
		}
		if n > 2 {
			prefault(c[1 : n-1])
		}
		prefault(c)
		for i, v := range c {
			if v != float64(i)+0.5 {
				t.Fatalf("n = %d: entry %d is %v after prefault, want %v", n, i, v, float64(i)+0.5)
			}
		}
	}
}
