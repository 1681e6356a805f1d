package par

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Every loop must visit each index of [0, n) exactly once, for n around
// the chunk and part boundaries and with one or several cores.
func TestEachIndexOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 5} {
		runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, 2, 7, 63, 64, 65, 1000, 4097} {
			check := func(name string, run func(hit []int32)) {
				hit := make([]int32, n)
				run(hit)
				for i, h := range hit {
					if h != 1 {
						t.Fatalf("%s, GOMAXPROCS %d, n = %d: index %d visited %d times", name, procs, n, i, h)
					}
				}
			}
			check("For", func(hit []int32) {
				For(n, func() func(int) { return func(i int) { atomic.AddInt32(&hit[i], 1) } })
			})
			check("Rows", func(hit []int32) {
				Rows(n, func(i0, i1 int) {
					for i := i0; i < i1; i++ {
						atomic.AddInt32(&hit[i], 1)
					}
				})
			})
			check("Parts", func(hit []int32) {
				seen := make([]int32, NParts(n))
				Parts(n, func(part, lo, hi int) {
					atomic.AddInt32(&seen[part], 1)
					for i := lo; i < hi; i++ {
						atomic.AddInt32(&hit[i], 1)
					}
				})
				for p, s := range seen {
					if s != 1 {
						t.Fatalf("Parts, n = %d: part %d ran %d times", n, p, s)
					}
				}
			})
		}
	}
}

// Parts are contiguous and in order, so that callers may merge by part.
func TestPartsContiguous(t *testing.T) {
	for _, n := range []int{1, 100, 100000} {
		k := NParts(n)
		lo, hi := make([]int, k), make([]int, k)
		Parts(n, func(part, l, h int) { lo[part], hi[part] = l, h })
		if lo[0] != 0 || hi[k-1] != n {
			t.Fatalf("n = %d: parts cover [%d, %d)", n, lo[0], hi[k-1])
		}
		for p := 1; p < k; p++ {
			if lo[p] != hi[p-1] {
				t.Fatalf("n = %d: part %d starts at %d, part %d ends at %d", n, p, lo[p], p-1, hi[p-1])
			}
		}
	}
}

// TestIndices checks that Indices returns sub itself, and 0..n−1 for nil.
func TestIndices(t *testing.T) {
	sub := []int{4, 1}
	if got := Indices(sub, 9); len(got) != 2 || &got[0] != &sub[0] {
		t.Fatalf("Indices(sub, 9) = %v, want sub itself", got)
	}
	got := Indices(nil, 5)
	for i, v := range got {
		if v != i {
			t.Fatalf("Indices(nil, 5) = %v, want [0 1 2 3 4]", got)
		}
	}
	if len(got) != 5 {
		t.Fatalf("Indices(nil, 5) = %v, want 5 indices", got)
	}
}

// No loop may run more goroutines at once than SetWorkers allows, whatever
// GOMAXPROCS is; 0 restores GOMAXPROCS and a negative count is refused.
func TestWorkersBound(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	defer SetWorkers(0)
	for _, set := range []int{1, 2, 3, 0} {
		if err := SetWorkers(set); err != nil {
			t.Fatal(err)
		}
		want := set
		if set == 0 {
			want = 8
		}
		if Workers() != want {
			t.Fatalf("SetWorkers(%d): Workers() = %d, want %d", set, Workers(), want)
		}
		loops := map[string]func(body func()){
			"For": func(body func()) {
				For(400, func() func(int) { return func(int) { body() } })
			},
			"Rows":  func(body func()) { Rows(64*400, func(_, _ int) { body() }) },
			"Parts": func(body func()) { Parts(100000, func(_, _, _ int) { body() }) },
		}
		for name, loop := range loops {
			var now, peak atomic.Int32
			loop(func() {
				n := now.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(200 * time.Microsecond) // let the others start
				now.Add(-1)
			})
			if got := int(peak.Load()); got > want || got < min(want, 2) {
				t.Errorf("%s with Workers() = %d: %d bodies ran at once", name, want, got)
			}
		}
	}
	if err := SetWorkers(-1); err == nil || !strings.Contains(err.Error(), "-1") {
		t.Fatalf("SetWorkers(-1) = %v, want an error naming -1", err)
	}
}
