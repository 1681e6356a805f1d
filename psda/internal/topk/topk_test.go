package topk

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// TestLists offers values with many ties in two different orders, and in
// index order, and checks each settled list against the k best by a full
// sort (value, then tieKey for New, the index for NewByIndex), and limit
// against its definition.
func TestLists(t *testing.T) {
	for _, byIndex := range []bool{false, true} {
		testLists(t, byIndex)
	}
}

// tieRule returns the constructor of lists with the tie rule byIndex and,
// written out independently of the lists' own, the key that rule orders
// ties of item i by.
func tieRule(byIndex bool) (func(n, k int) *Lists, func(i int, j int32) uint64) {
	if byIndex {
		return NewByIndex, func(_ int, j int32) uint64 { return uint64(j) }
	}
	return New, tieKey
}

func testLists(t *testing.T, byIndex bool) {
	rng := rand.New(rand.NewPCG(8, 1))
	newLists, key := tieRule(byIndex)
	for _, k := range []int{1, 2, 5, 64} {
		for _, n := range []int{0, 1, k - 1, k, k + 1, 3 * k, 40 * k} {
			type entry struct {
				v float64
				j int32
			}
			offers := make([]entry, n)
			for q := range offers {
				offers[q] = entry{float64(rng.IntN(max(n/3, 1))), int32(q)} // ties
			}
			want := slices.Clone(offers)
			slices.SortFunc(want, func(a, b entry) int {
				if c := cmp.Compare(a.v, b.v); c != 0 {
					return c
				}
				return cmp.Compare(key(3, a.j), key(3, b.j))
			})
			want = want[:min(k, n)]
			inOrder := make([]int, n)
			for q := range inOrder {
				inOrder[q] = q
			}
			for _, order := range [][]int{rng.Perm(n), rng.Perm(n), inOrder} {
				s := newLists(5, k)
				for _, q := range order {
					s.Offer(3, offers[q].v, offers[q].j, -offers[q].v)
				}
				var got []entry
				s.Each(3, func(j int, v, aux float64) {
					if aux != -v {
						t.Fatalf("aux %v for value %v", aux, v)
					}
					got = append(got, entry{v, int32(j)})
				})
				slices.SortFunc(got, func(a, b entry) int { return cmp.Compare(a.j, b.j) })
				w := slices.Clone(want)
				slices.SortFunc(w, func(a, b entry) int { return cmp.Compare(a.j, b.j) })
				if !slices.Equal(got, w) {
					t.Fatalf("byIndex=%v k=%d n=%d: kept %v, want %v", byIndex, k, n, got, w)
				}
				lim := math.Inf(1)
				if n >= k {
					lim = want[k-1].v
				}
				if s.Limit(3) != lim || s.Limit(0) != math.Inf(1) {
					t.Fatalf("k=%d n=%d: limit %v (empty item %v), want %v", k, n, s.Limit(3), s.Limit(0), lim)
				}
			}
		}
	}
}

// TestCopyRow copies a list half-way through its offers, offers the rest to
// the copy, and checks it against a list that took every offer, for both
// tie rules and for sorted and buffered lists. The rest all tie the copy's
// bound, so that a copy without the bound's tie key keeps other entries.
func TestCopyRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	for trial := 0; trial < 20; trial++ {
		for _, k := range []int{4, 20} {
			for _, newLists := range []func(n, k int) *Lists{New, NewByIndex} {
				const n = 300
				whole, half, copied := newLists(2, k), newLists(2, k), newLists(2, k)
				offer := func(l *Lists, q int, v float64) { l.Offer(1, v, int32(q), v) }
				order := rng.Perm(n)
				for _, q := range order[:n/2] {
					v := float64(rng.IntN(20))
					offer(whole, q, v)
					offer(half, q, v)
				}
				copied.CopyRow(half, 1)
				tie := half.Limit(1)
				for _, q := range order[n/2:] {
					offer(whole, q, tie)
					offer(copied, q, tie)
				}
				got, want := map[int]float64{}, map[int]float64{}
				copied.Each(1, func(j int, v, _ float64) { got[j] = v })
				whole.Each(1, func(j int, v, _ float64) { want[j] = v })
				if len(got) != k || fmt.Sprint(got) != fmt.Sprint(want) || copied.Limit(1) != whole.Limit(1) {
					t.Fatalf("k=%d: copy kept %v (limit %v), want %v (limit %v)", k, got, copied.Limit(1), want, whole.Limit(1))
				}
			}
		}
	}
}

// TestCap offers values, some tying the cap, to capped lists (k sorted and
// buffered, 0 to 3k of them below the cap) and checks each settled list
// against the k smallest values below the cap by a full sort, and that
// every value offered and not kept is at least min(cap, Limit).
func TestCap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, k := range []int{1, 4, sortedK, 40} {
		for _, below := range []int{0, 1, k - 1, k, k + 1, 3 * k} {
			const cp = 0.0
			var vals []float64
			for range below {
				vals = append(vals, -rng.Float64()-1e-3)
			}
			for range 2 * k {
				vals = append(vals, rng.Float64(), cp)
			}
			rng.Shuffle(len(vals), func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
			l := New(1, k)
			l.Cap(0, cp)
			for j, v := range vals {
				l.Offer(0, v, int32(j), v)
			}
			var want []float64
			for _, v := range vals {
				if v < cp {
					want = append(want, v)
				}
			}
			slices.Sort(want)
			want = want[:min(k, len(want))]
			var got []float64
			kept := map[int]bool{}
			l.Each(0, func(j int, v, _ float64) { got, kept[j] = append(got, v), true })
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("k=%d, %d below the cap: kept %v, want %v", k, below, got, want)
			}
			for j, v := range vals {
				if !kept[j] && v < min(cp, l.Limit(0)) {
					t.Fatalf("k=%d, %d below the cap: %v offered and not kept, below min(cap, Limit) = %v", k, below, v, min(cp, l.Limit(0)))
				}
			}
		}
	}
}

// TestBytes checks Bytes against what New allocates, measured on the heap
// (within the allocator's rounding of each slice).
func TestBytes(t *testing.T) {
	for _, nk := range [][2]int{{1000, 8}, {1000, 192}, {3000, 96}, {50, 17}} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		l := New(nk[0], nk[1])
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(l)
		got, want := int64(after.HeapAlloc)-int64(before.HeapAlloc), Bytes(nk[0], nk[1])
		if got < want || float64(got) > 1.05*float64(want)+8192 {
			t.Errorf("New(%d, %d) allocated %d bytes, Bytes says %d", nk[0], nk[1], got, want)
		}
	}
}
