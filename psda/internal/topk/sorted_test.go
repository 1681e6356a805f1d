package topk

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSmallestKSorted checks SmallestK against a full sort of row[j]+p[j]
// by value, then index (ties keep the earlier index), +Inf left out, on
// tie-heavy rows of every length up to 70 (the scan's eight-entry blocks
// and their tails), with rows whose values fall along the row (every
// entry enters the list) and k from 1 to more than the row holds.
func TestSmallestKSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	type entry struct {
		v float64
		j int
	}
	for n := 0; n <= 70; n++ {
		for rep := 0; rep < 12; rep++ {
			row, p := make([]float64, n), make([]float64, n+2)
			for j := range row {
				row[j] = float64(rng.IntN(5)) / 2
				switch {
				case rep%4 == 1:
					row[j] = float64(n - j) // falling: every entry enters
				case rng.IntN(9) == 0:
					row[j] = math.Inf(1)
				}
			}
			for j := range p {
				p[j] = float64(rng.IntN(3)) - 1
			}
			for _, k := range []int{1, 3, 8, 32, 80} {
				var want []entry
				for j, x := range row {
					if h := x + p[j]; h < math.Inf(1) {
						want = append(want, entry{h, j})
					}
				}
				slices.SortFunc(want, func(a, b entry) int {
					if c := cmp.Compare(a.v, b.v); c != 0 {
						return c
					}
					return cmp.Compare(a.j, b.j)
				})
				want = want[:min(k, len(want))]
				topV, topJ := make([]float64, k), make([]int, k)
				m := SmallestK(row, p, topV, topJ)
				if m != len(want) {
					t.Fatalf("n=%d k=%d: kept %d, want %d", n, k, m, len(want))
				}
				for i, e := range want {
					if math.Float64bits(topV[i]) != math.Float64bits(e.v) || topJ[i] != e.j {
						t.Fatalf("n=%d k=%d rep=%d: entry %d is (%v, %d), want (%v, %d)", n, k, rep, i, topV[i], topJ[i], e.v, e.j)
					}
				}
			}
		}
	}
}

// TestSmallestKBelow checks SmallestKBelow against SmallestK, bit for bit,
// for bounds t below, at, between and above the row's smallest values
// (the k-th itself, ties at it, NaN, ±Inf), on tie-heavy rows with +Inf
// entries, rows with NaN values and rows with fewer than k finite values.
func TestSmallestKBelow(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 13))
	fallbacks := 0
	for n := 0; n <= 70; n++ {
		for rep := 0; rep < 10; rep++ {
			row, p := make([]float64, n), make([]float64, n)
			for j := range row {
				row[j] = float64(rng.IntN(7)) / 2
				switch {
				case rep%5 == 1:
					row[j] = float64(n - j) // falling: every entry beats the last
				case rng.IntN(9) == 0:
					row[j] = math.Inf(1)
				case rep%5 == 3 && rng.IntN(20) == 0:
					row[j] = math.NaN()
				}
				p[j] = float64(rng.IntN(3)) - 1
			}
			for _, k := range []int{1, 3, 8, 32} {
				wantV, wantJ := make([]float64, k), make([]int, k)
				wm := SmallestK(row, p, wantV, wantJ)
				kth := math.Inf(1)
				if wm == k {
					kth = wantV[k-1]
				}
				for _, bound := range []float64{kth, kth - 0.5, kth + 0.5, kth + 3, -1, 0, math.Inf(1), math.Inf(-1), math.NaN()} {
					gotV, gotJ := make([]float64, k), make([]int, k)
					gm := SmallestKBelow(row, p, gotV, gotJ, bound)
					if gm != wm {
						t.Fatalf("n=%d k=%d t=%v: kept %d, SmallestK %d", n, k, bound, gm, wm)
					}
					for i := 0; i < wm; i++ {
						if math.Float64bits(gotV[i]) != math.Float64bits(wantV[i]) || gotJ[i] != wantJ[i] {
							t.Fatalf("n=%d k=%d rep=%d t=%v: entry %d is (%v, %d), SmallestK's (%v, %d)", n, k, rep, bound, i, gotV[i], gotJ[i], wantV[i], wantJ[i])
						}
					}
					if bound < kth {
						fallbacks++
					}
				}
			}
		}
	}
	if fallbacks == 0 {
		t.Fatal("no bound below the k-th value: the fallback went untested")
	}
}
