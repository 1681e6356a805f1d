package topk

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// TestSinks offers a tie-heavy matrix through the row sink, by whole rows
// in index order and by tiles in random order, and through the column
// sink (whole columns, random pieces of columns, and pieces through an index
// permutation), over more items than one lock stripe holds, and checks every
// settled list against a full sort of the reduced costs (ties by tieKey for New, by index for NewByIndex), with the
// diagonal and the skipped entries left out, for sorted and buffered lists,
// at c = 2 and at c = 1 (where the row sink skips entries by scan.DiffBelow
// and scan.DiffAtMost, whose ties with the bound these entries test).
func TestSinks(t *testing.T) {
	for _, k := range []int{5, 20} { // sorted lists, buffered lists
		for _, c := range []float64{2, 1} {
			testSinks(t, k, c)
		}
	}
}

// sinkInputs returns an n×m matrix of tie-heavy entries (about one in
// nanEvery NaN; none for 0) and the row and column terms z, w.
func sinkInputs(rng *rand.Rand, n, m, nanEvery int) (x, z, w []float64) {
	x = make([]float64, n*m)
	for i := range x {
		x[i] = float64(rng.IntN(4)) // ties
		if nanEvery > 0 && rng.IntN(nanEvery) == 0 {
			x[i] = math.NaN()
		}
	}
	z, w = make([]float64, n), make([]float64, m)
	for i := range z {
		z[i] = float64(rng.IntN(3)) / 2
	}
	for j := range w {
		w[j] = float64(rng.IntN(3)) / 2
	}
	return x, z, w
}

// sinkEntry is a kept value and its item.
type sinkEntry struct {
	v float64
	j int32
}

// sinkReference returns item a's entries c·x[a,b] − z[a] − w[b] over the
// items b ≠ a that skip keeps, NaN left out, sorted as the lists rank them
// (value, then key): a full sort that the kept lists are checked against.
func sinkReference(x, z, w []float64, c float64, m, a int, skip func(a, b int) bool, key func(i int, j int32) uint64) []sinkEntry {
	var out []sinkEntry
	for b := 0; b < m; b++ {
		if v := c*x[a*m+b] - z[a] - w[b]; a != b && !skip(a, b) && !math.IsNaN(v) {
			out = append(out, sinkEntry{v, int32(b)})
		}
	}
	slices.SortFunc(out, func(p, q sinkEntry) int {
		if d := cmp.Compare(p.v, q.v); d != 0 {
			return d
		}
		return cmp.Compare(key(a, p.j), key(a, q.j))
	})
	return out
}

// byItem sorts entries by item, in place, and returns them.
func byItem(e []sinkEntry) []sinkEntry {
	slices.SortFunc(e, func(p, q sinkEntry) int { return cmp.Compare(p.j, q.j) })
	return e
}

func testSinks(t *testing.T, k int, c float64) {
	rng := rand.New(rand.NewPCG(3, 9))
	const n, m = 2*LockBlock + 22, 57
	x, z, w := sinkInputs(rng, n, m, 0)
	skip := func(a, b int) bool { return (a*7+b)%11 == 0 }
	for _, byIndex := range []bool{false, true} {
		newLists, key := tieRule(byIndex)
		for _, way := range []string{"rows", "tiles", "cols", "col pieces", "col idx"} {
			s := newLists(n, k)
			row, col := s.Sinks(c, z, w, true, skip)
			switch way {
			case "rows":
				for a := 0; a < n; a++ {
					row(a, 0, x[a*m:a*m+m])
				}
			case "tiles":
				type tile struct{ a, b0, b1 int }
				var tiles []tile
				for a := 0; a < n; a++ {
					for b0 := 0; b0 < m; {
						b1 := min(m, b0+1+rng.IntN(9))
						tiles = append(tiles, tile{a, b0, b1})
						b0 = b1
					}
				}
				rng.Shuffle(len(tiles), func(p, q int) { tiles[p], tiles[q] = tiles[q], tiles[p] })
				for _, tl := range tiles {
					row(tl.a, tl.b0, x[tl.a*m+tl.b0:tl.a*m+tl.b1])
				}
			case "cols":
				for _, b := range rng.Perm(m) {
					xs := make([]float64, n)
					for a := range xs {
						xs[a] = x[a*m+b]
					}
					col(b, 0, xs, nil)
				}
			case "col pieces", "col idx":
				// Pieces [a0, a1) of every column in random order, of
				// random lengths that start and end inside lock stripes
				// or cross them; with idx, piece entry k is item
				// perm[a0+k].
				var idx []int
				if way == "col idx" {
					idx = rng.Perm(n)
				}
				type piece struct{ b, a0, a1 int }
				var pieces []piece
				for b := 0; b < m; b++ {
					for a0 := 0; a0 < n; {
						a1 := min(n, a0+1+rng.IntN(2*LockBlock))
						pieces = append(pieces, piece{b, a0, a1})
						a0 = a1
					}
				}
				rng.Shuffle(len(pieces), func(p, q int) { pieces[p], pieces[q] = pieces[q], pieces[p] })
				for _, pc := range pieces {
					xs := make([]float64, pc.a1-pc.a0)
					for k := range xs {
						a := pc.a0 + k
						if idx != nil {
							a = idx[a]
						}
						xs[k] = x[a*m+pc.b]
					}
					col(pc.b, pc.a0, xs, idx)
				}
			}
			for a := 0; a < n; a++ {
				want := sinkReference(x, z, w, c, m, a, skip, key)
				lim := want[k-1].v
				want = byItem(want[:k])
				var got []sinkEntry
				s.Each(a, func(j int, v, aux float64) {
					if aux != x[a*m+j] {
						t.Fatalf("aux %v, want the cross part %v", aux, x[a*m+j])
					}
					got = append(got, sinkEntry{v, int32(j)})
				})
				if got = byItem(got); !slices.Equal(got, want) {
					t.Fatalf("k=%d c=%v byIndex=%v %s, item %d: kept %v, want %v", k, c, byIndex, way, a, got, want)
				}
				if s.Limit(a) != lim || math.IsInf(lim, 0) {
					t.Fatalf("byIndex=%v %s, item %d: limit %v, want %v", byIndex, way, a, s.Limit(a), lim)
				}
			}
		}
	}
}

// TestSinksConcurrent offers a tie-heavy matrix with NaN entries from four
// goroutines at once, through pieces of columns (in order, and through an
// index permutation) that start, end and cross inside lock stripes and
// through pieces of rows, and checks every settled list against a full sort
// of the finite reduced costs. Under -race it checks that each sink holds
// the lock of every item it touches: the column sink takes one lock per
// stripe of a run of consecutive items, so a stripe's end taken one item
// off races with the goroutine offering to the next stripe. NaN entries
// are never kept (at c = 1 too, where the row sink's scans stop at them).
func TestSinksConcurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 2))
	const n, m, k, workers = 3*LockBlock + 5, 48, 5, 4
	x, z, w := sinkInputs(rng, n, m, 20)
	skip := func(a, b int) bool { return (a*5+b)%13 == 0 }
	for round := range 8 { // the race detector sees a race in most rounds, not all
		byIndex := round%2 == 1
		c := []float64{2, 1}[round/2%2] // 1: the row sink's scans, NaN entries among them
		newLists, key := tieRule(byIndex)
		s := newLists(n, k)
		row, col := s.Sinks(c, z, w, true, skip)
		perm := rng.Perm(n)
		// Columns b < m/2 by column pieces (odd b through perm), the
		// others by row pieces.
		var offers []func()
		for b := 0; b < m/2; b++ {
			var idx []int
			if b%2 == 1 {
				idx = perm
			}
			for a0 := 0; a0 < n; {
				a1 := min(n, a0+1+rng.IntN(3*LockBlock/2))
				xs := make([]float64, a1-a0)
				for i := range xs {
					a := a0 + i
					if idx != nil {
						a = idx[a]
					}
					xs[i] = x[a*m+b]
				}
				at := a0 // a0 moves on below
				offers = append(offers, func() { col(b, at, xs, idx) })
				a0 = a1
			}
		}
		for a := 0; a < n; a++ {
			for b0 := m / 2; b0 < m; {
				b1 := min(m, b0+1+rng.IntN(9))
				xs := x[a*m+b0 : a*m+b1]
				at := b0
				offers = append(offers, func() { row(a, at, xs) })
				b0 = b1
			}
		}
		rng.Shuffle(len(offers), func(p, q int) { offers[p], offers[q] = offers[q], offers[p] })
		var wg sync.WaitGroup
		for g := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g; i < len(offers); i += workers {
					offers[i]()
				}
			}()
		}
		wg.Wait()
		for a := 0; a < n; a++ {
			want := byItem(sinkReference(x, z, w, c, m, a, skip, key)[:k])
			var got []sinkEntry
			s.Each(a, func(j int, v, _ float64) { got = append(got, sinkEntry{v, int32(j)}) })
			if got = byItem(got); !slices.Equal(got, want) {
				t.Fatalf("byIndex=%v, item %d: kept %v, want %v", byIndex, a, got, want)
			}
		}
	}
}
