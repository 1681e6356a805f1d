package par

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// limit is the number of workers set by SetWorkers; 0 means the default,
// GOMAXPROCS. Every parallel loop of psda reads it through Workers, so
// that one setting (psda.set_num_threads, psda_num_threads,
// PSDA_NUM_THREADS) bounds them all, including a matching computed by the
// refresher's background thread.
var limit atomic.Int64

// SetWorkers sets the number of goroutines each parallel loop may run at
// once to n, or back to the default (GOMAXPROCS at the time of each loop)
// when n is 0. It returns an error naming n when n is negative. A loop
// already running keeps the count it started with.
func SetWorkers(n int) error {
	if n < 0 {
		return fmt.Errorf("number of threads = %d: want a positive number, or 0 for the default (all cores, GOMAXPROCS = %d)", n, runtime.GOMAXPROCS(0))
	}
	limit.Store(int64(n))
	return nil
}

// Workers returns the number of goroutines a parallel loop runs at most:
// the count set by SetWorkers, else GOMAXPROCS.
func Workers() int {
	if n := limit.Load(); n > 0 {
		return int(n)
	}
	return runtime.GOMAXPROCS(0)
}

// For runs body(i) for every i in [0, n) on at most Workers() goroutines;
// newBody is called once per goroutine to set up its scratch space.
func For(n int, newBody func() func(int)) {
	workers := min(Workers(), n)
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
// more. It reads GOMAXPROCS, never the thread setting, so that results
// merged in part order do not change with SetWorkers.
func NParts(n int) int {
	if n < 1024 {
		return 1
	}
	return min(runtime.GOMAXPROCS(0), 8)
}

// Parts splits the rows [0, n) into NParts(n) contiguous parts and runs f
// on each, on at most Workers() goroutines at once, so that a caller can
// merge per-part results in part order.
func Parts(n int, f func(part, lo, hi int)) {
	p := NParts(n)
	For(p, func() func(int) {
		return func(part int) { f(part, part*n/p, (part+1)*n/p) }
	})
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
