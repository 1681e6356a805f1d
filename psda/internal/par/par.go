package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// For runs body(i) for every i in [0, n) on GOMAXPROCS goroutines;
// newBody is called once per goroutine to set up its scratch space.
func For(n int, newBody func() func(int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		body := newBody()
		for i := 0; i < n; i++ {
			body(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := newBody()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				body(i)
			}
		}()
	}
	wg.Wait()
}

// Rows runs body(i0, i1) over chunks of [0, n) on all cores; for the
// cheap, memory-bound passes that finish a cost matrix.
func Rows(n int, body func(i0, i1 int)) {
	const chunk = 64
	For((n+chunk-1)/chunk, func() func(int) {
		return func(c int) { body(c*chunk, min(n, (c+1)*chunk)) }
	})
}

// NParts returns the number of parts Parts splits n rows into: one per
// core (at most 8), or one when n is small enough that a goroutine costs
// more.
func NParts(n int) int {
	if n < 1024 {
		return 1
	}
	return min(runtime.GOMAXPROCS(0), 8)
}

// Parts splits the rows [0, n) into NParts(n) contiguous parts and runs f
// on each concurrently, so that a caller can merge per-part results in
// part order.
func Parts(n int, f func(part, lo, hi int)) {
	p := NParts(n)
	var wg sync.WaitGroup
	for part := 0; part < p; part++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(part, part*n/p, (part+1)*n/p)
		}()
	}
	wg.Wait()
}

// Indices returns sub, or every index below n when sub is nil: the rows a
// pass over "these rows, or all" visits.
func Indices(sub []int, n int) []int {
	if sub != nil {
		return sub
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	return all
}
