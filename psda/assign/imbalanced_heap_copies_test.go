package assign

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// copyHeap must give, after any sequence of price rises and rebuilds after
// lowered prices, the copy a scan
// gives (the lowest index among the cheapest) and the second lowest price,
// on both sides of scanCopies and with many ties.
func TestCopyHeapMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 2))
	for _, h := range []int{1, 2, 3, scanCopies, scanCopies + 1, 40, 257} {
		t.Run(fmt.Sprint(h), func(t *testing.T) {
			const nc = 3
			price := make([]float64, nc*h)
			q := newCopyHeap(price, nc, h)
			for step := 0; step < 4000; step++ {
				j := rng.IntN(nc)
				for col := 0; col < nc; col++ {
					gt, g1, g2 := q.min2(col)
					wt, w1, w2 := -1, inf, inf
					for u, x := range price[col*h : col*h+h] {
						switch {
						case x < w1:
							wt, w1, w2 = u, x, w1
						case x < w2:
							w2 = x
						}
					}
					if gt != wt || g1 != w1 || g2 != w2 {
						t.Fatalf("step %d, column %d: min2 = (%d, %v, %v), scan (%d, %v, %v)", step, col, gt, g1, g2, wt, w1, w2)
					}
				}
				// Raise the cheapest copy (a row's bid) or any copy (a
				// dummy's), by a small integer so that prices tie.
				t0, _, _ := q.min2(j)
				if rng.IntN(3) == 0 {
					t0 = rng.IntN(h)
				}
				price[j*h+t0] += float64(rng.IntN(3))
				q.raised(j*h + t0)
				// Now and then lower some copies of column j to its
				// lowest price and rebuild (the auction's levelling).
				if rng.IntN(50) == 0 {
					_, m, _ := q.min2(j)
					for u := range h {
						if rng.IntN(2) == 0 {
							price[j*h+u] = m
						}
					}
					q.rebuild(j)
				}
			}
		})
	}
}
